// Package podwalk is the one walk over a pod: its containers of every kind, the sources of its
// projected volumes, and every API object it references. The Node authorizer's graph,
// NodeRestriction, validation and the agent all walk pods through it, so that what a node may
// read, what a mirror pod may name, what validation checks and what the agent fetches cannot
// drift apart.
package podwalk

import (
	"iter"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ContainerKind says which list of the pod spec a container is in.
type ContainerKind uint8

const (
	InitContainer ContainerKind = iota
	RegularContainer
	EphemeralContainer
	numContainerKinds
)

// fieldNames are the pod spec's JSON field names of the container lists.
var fieldNames = [numContainerKinds]string{
	InitContainer:      "initContainers",
	RegularContainer:   "containers",
	EphemeralContainer: "ephemeralContainers",
}

// FieldName is the name of the pod spec's list holding containers of this kind.
func (k ContainerKind) FieldName() string { return fieldNames[k] }

// Container is one container of a pod spec; an ephemeral container is seen through its common
// fields, which are a Container's.
type Container struct {
	*corev1.Container
	Kind  ContainerKind
	Index int
}

// Path is the container's field path under specPath, the path of the pod spec.
func (c Container) Path(specPath *field.Path) *field.Path {
	return specPath.Child(c.Kind.FieldName()).Index(c.Index)
}

// Containers yields every container of spec: init containers first, then regular, then
// ephemeral ones.
func Containers(spec *corev1.PodSpec) iter.Seq[Container] {
	return func(yield func(Container) bool) {
		for k := range numContainerKinds {
			for i := range count(spec, k) {
				if !yield(containerAt(spec, k, i)) {
					return
				}
			}
		}
	}
}

// count is the length of the spec's list of containers of kind k.
func count(spec *corev1.PodSpec, k ContainerKind) int {
	switch k {
	case InitContainer:
		return len(spec.InitContainers)
	case RegularContainer:
		return len(spec.Containers)
	default:
		return len(spec.EphemeralContainers)
	}
}

// containerAt is the i-th container of kind k.
func containerAt(spec *corev1.PodSpec, k ContainerKind, i int) Container {
	var c *corev1.Container
	switch k {
	case InitContainer:
		c = &spec.InitContainers[i]
	case RegularContainer:
		c = &spec.Containers[i]
	default:
		c = (*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon)
	}
	return Container{Container: c, Kind: k, Index: i}
}
