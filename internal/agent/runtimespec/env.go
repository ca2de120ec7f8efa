package runtimespec

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// EnvSource gives the values a container's environment takes from elsewhere than the pod spec's
// own strings: the API (secrets, config maps), the pod's fields and the node. The agent's
// implementation reads the objects its pods registered; this package stays free of I/O.
type EnvSource interface {
	// Value is the value of one env entry's valueFrom. ok is false when an optional secret,
	// config map or key is missing: the variable is then left out, as in the kubelet.
	Value(src *corev1.EnvVarSource) (value string, ok bool, err error)
	// Object is every key of an envFrom source's secret or config map. ok is false when the
	// optional object is missing.
	Object(src *corev1.EnvFromSource) (data map[string]string, ok bool, err error)
}

// env is a container's environment, in first-definition order with the last definition's value.
type env struct {
	names  []string
	values map[string]string
	// services are the service variables: the container's own definitions may use and override
	// them, and those it leaves alone come after its own.
	services map[string]string
}

// environment builds the environment as the kubelet does: envFrom sources first, in order, each
// key under its prefix; then env, whose plain values may refer to variables defined before them
// and to the service variables; then the service variables the container did not define.
// Values from valueFrom and envFrom are taken as they are, never expanded. Without a source,
// entries with valueFrom and envFrom are left out (for whoever runs the container to add), and
// references to them stay unexpanded.
func environment(c *corev1.Container, src EnvSource, services []corev1.EnvVar) (*env, error) {
	e := &env{values: map[string]string{}, services: map[string]string{}}
	for _, v := range services {
		e.services[v.Name] = v.Value
	}
	if src != nil {
		for i := range c.EnvFrom {
			from := &c.EnvFrom[i]
			data, ok, err := src.Object(from)
			if err != nil {
				return nil, fmt.Errorf("envFrom[%d]: %w", i, err)
			}
			if !ok {
				continue
			}
			for _, k := range slices.Sorted(maps.Keys(data)) {
				if err := e.set(from.Prefix+k, data[k]); err != nil {
					return nil, fmt.Errorf("envFrom[%d]: %w", i, err)
				}
			}
		}
	}
	for i, v := range c.Env {
		if v.ValueFrom == nil {
			val, _ := expand(v.Value, e.lookup)
			if err := e.set(v.Name, val); err != nil {
				return nil, fmt.Errorf("env[%d]: %w", i, err)
			}
			continue
		}
		if src == nil {
			continue
		}
		val, ok, err := src.Value(v.ValueFrom)
		if err != nil {
			return nil, fmt.Errorf("env[%d] (%s): %w", i, v.Name, err)
		}
		if ok {
			if err := e.set(v.Name, val); err != nil {
				return nil, fmt.Errorf("env[%d]: %w", i, err)
			}
		}
	}
	for _, v := range services {
		if _, own := e.values[v.Name]; !own {
			if err := e.set(v.Name, v.Value); err != nil {
				return nil, fmt.Errorf("service variables: %w", err)
			}
		}
	}
	return e, nil
}

// set defines a variable. A name with "=" or a NUL byte, or a value with a NUL byte, cannot be
// written as NAME=value and is refused rather than cut or turned into another variable; API
// validation refuses them first, but a secret's keys become names here too.
func (e *env) set(name, value string) error {
	if name == "" || strings.ContainsAny(name, "=\x00") {
		return fmt.Errorf("invalid environment variable name %q", name)
	}
	if strings.ContainsRune(value, 0) {
		return fmt.Errorf("the value of environment variable %s holds a NUL byte", name)
	}
	if _, seen := e.values[name]; !seen {
		e.names = append(e.names, name)
	}
	e.values[name] = value
	return nil
}

func (e *env) lookup(name string) (string, bool) {
	if v, ok := e.values[name]; ok {
		return v, true
	}
	v, ok := e.services[name]
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
