// Package podwalk is the one walk over a pod: its containers of every kind, and every API object
// it references. The Node authorizer's graph, NodeRestriction and validation all walk pods
// through it, so that what a node may read, what a mirror pod may name and what validation
// checks cannot drift apart.
package podwalk

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ContainerKind says which list of the pod spec a container is in.
type ContainerKind uint8

const (
	InitContainer ContainerKind = iota
	RegularContainer
	EphemeralContainer
)

// fieldNames are the pod spec's JSON field names of the container lists.
var fieldNames = [...]string{
	InitContainer:      "initContainers",
	RegularContainer:   "containers",
	EphemeralContainer: "ephemeralContainers",
}

// FieldName is the name of the pod spec's list holding containers of this kind.
func (k ContainerKind) FieldName() string { return fieldNames[k] }

// Container is one container of a pod spec. For an ephemeral container it points to a copy of
// its common fields, so changes through it do not reach the spec.
type Container struct {
	*corev1.Container
	Kind  ContainerKind
	Index int
}

// Path is the container's field path under specPath, the path of the pod spec.
func (c Container) Path(specPath *field.Path) *field.Path {
	return specPath.Child(c.Kind.FieldName()).Index(c.Index)
}

// Containers calls visit for every container of spec, init containers first, then regular,
// then ephemeral ones, until visit returns false.
func Containers(spec *corev1.PodSpec, visit func(Container) bool) {
	for i := range spec.InitContainers {
		if !visit(Container{Container: &spec.InitContainers[i], Kind: InitContainer, Index: i}) {
			return
		}
	}
	for i := range spec.Containers {
		if !visit(Container{Container: &spec.Containers[i], Kind: RegularContainer, Index: i}) {
			return
		}
	}
	for i := range spec.EphemeralContainers {
		c := corev1.Container(spec.EphemeralContainers[i].EphemeralContainerCommon)
		if !visit(Container{Container: &c, Kind: EphemeralContainer, Index: i}) {
			return
		}
	}
}
