package runtimespec

import corev1 "k8s.io/api/core/v1"

// env is a container's environment from its plain env values, in first-definition order with the
// last definition's value.
type env struct {
	names  []string
	values map[string]string
}

// environment builds the environment from the container's env list. Values may refer to variables
// defined before them, as in the kubelet. Entries with valueFrom are skipped: their values come
// from the API (secrets, config maps) or the node, which this package does not reach, so
// references to them stay unexpanded; envFrom is skipped for the same reason.
func environment(vars []corev1.EnvVar) *env {
	e := &env{values: map[string]string{}}
	for _, v := range vars {
		if v.ValueFrom != nil {
			continue
		}
		val, _ := expand(v.Value, e.lookup)
		if _, seen := e.values[v.Name]; !seen {
			e.names = append(e.names, v.Name)
		}
		e.values[v.Name] = val
	}
	return e
}

func (e *env) lookup(name string) (string, bool) {
	v, ok := e.values[name]
	return v, ok
}

// list is the environment as the OCI spec wants it, NAME=value.
func (e *env) list() []string {
	out := make([]string, 0, len(e.names))
	for _, n := range e.names {
		out = append(out, n+"="+e.values[n])
	}
	return out
}
