package podwalk

import (
	"iter"

	corev1 "k8s.io/api/core/v1"
)

// Projection is one source of a projected volume of a pod spec.
type Projection struct {
	*corev1.VolumeProjection
	// Volume is the projected volume the source is in.
	Volume *corev1.Volume
}

// Projections yields every source of every projected volume of spec, in the order of the volumes
// and of their sources.
func Projections(spec *corev1.PodSpec) iter.Seq[Projection] {
	return func(yield func(Projection) bool) {
		for i := range spec.Volumes {
			v := &spec.Volumes[i]
			if v.Projected == nil {
				continue
			}
			for j := range v.Projected.Sources {
				if !yield(Projection{VolumeProjection: &v.Projected.Sources[j], Volume: v}) {
					return
				}
			}
		}
	}
}
