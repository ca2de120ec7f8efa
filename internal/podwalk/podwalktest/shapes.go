// Package podwalktest builds pods for the tests of code that judges what a pod references: one
// pod per field of every type podwalk descends into, that field alone set and filled all the way
// down. A test that runs its rule over every shape and compares with what podwalk.References
// reports covers each reference podwalk knows, including those it learns after the test was
// written, without naming them.
package podwalktest

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
)

// Name is every string Fill writes, so every object a shape references is named Name.
const Name = "x"

// Shape is one pod: Field says which field is set, as Type.Field, under which container list for
// the fields of containers and their environment.
type Shape struct {
	Field string
	Pod   *corev1.Pod
}

// containerLists are the pod spec's lists of containers, each with how to put one container in it.
var containerLists = []struct {
	name string
	put  func(*corev1.PodSpec, corev1.Container)
}{
	{"initContainers", func(s *corev1.PodSpec, c corev1.Container) { s.InitContainers = []corev1.Container{c} }},
	{"containers", func(s *corev1.PodSpec, c corev1.Container) { s.Containers = []corev1.Container{c} }},
	{"ephemeralContainers", func(s *corev1.PodSpec, c corev1.Container) {
		s.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon(c)}}
	}},
}

// Shapes returns a pod for each field of PodSpec, VolumeSource and VolumeProjection, and, in each
// container list, for each field of Container, EnvVarSource and EnvFromSource. The pods have no
// name or namespace; a volume is named "v", a container "c".
func Shapes() []Shape {
	var out []Shape
	each := func(typ reflect.Type, prefix string, pod func(reflect.Value) *corev1.Pod) {
		for i := range typ.NumField() {
			v := reflect.New(typ).Elem()
			Fill(v.Field(i))
			out = append(out, Shape{Field: prefix + typ.Name() + "." + typ.Field(i).Name, Pod: pod(v)})
		}
	}
	each(reflect.TypeFor[corev1.PodSpec](), "", func(v reflect.Value) *corev1.Pod {
		return &corev1.Pod{Spec: v.Interface().(corev1.PodSpec)}
	})
	each(reflect.TypeFor[corev1.VolumeSource](), "", func(v reflect.Value) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: v.Interface().(corev1.VolumeSource)}}}}
	})
	each(reflect.TypeFor[corev1.VolumeProjection](), "", func(v reflect.Value) *corev1.Pod {
		src := v.Interface().(corev1.VolumeProjection)
		return &corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
			Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{src}},
		}}}}}
	})
	for _, list := range containerLists {
		in := func(c corev1.Container) *corev1.Pod {
			pod := &corev1.Pod{}
			c.Name = "c"
			list.put(&pod.Spec, c)
			return pod
		}
		prefix := list.name + " "
		each(reflect.TypeFor[corev1.Container](), prefix, func(v reflect.Value) *corev1.Pod {
			return in(v.Interface().(corev1.Container))
		})
		each(reflect.TypeFor[corev1.EnvVarSource](), prefix, func(v reflect.Value) *corev1.Pod {
			src := v.Interface().(corev1.EnvVarSource)
			return in(corev1.Container{Env: []corev1.EnvVar{{Name: "E", ValueFrom: &src}}})
		})
		each(reflect.TypeFor[corev1.EnvFromSource](), prefix, func(v reflect.Value) *corev1.Pod {
			return in(corev1.Container{EnvFrom: []corev1.EnvFromSource{v.Interface().(corev1.EnvFromSource)}})
		})
	}
	return out
}

// Fill sets every settable field under v to a non-zero value: strings Name, numbers 1, booleans
// true, one element in each slice and map, every pointer to a filled value.
func Fill(v reflect.Value) { fill(v, 0) }

func fill(v reflect.Value, depth int) {
	if depth > 12 || !v.CanSet() {
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(Name)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		key, val := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(key, depth+1)
		fill(val, depth+1)
		m.SetMapIndex(key, val)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i), depth+1)
		}
	}
}
