package runtimespec

import (
	"fmt"
	"path/filepath"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
)

// propagation maps a volume mount's propagation to the Linux mount option giving it; no mode is
// private, as in the kubelet.
var propagation = map[corev1.MountPropagationMode]string{
	corev1.MountPropagationNone:            "rprivate",
	corev1.MountPropagationHostToContainer: "rslave",
	corev1.MountPropagationBidirectional:   "rshared",
}

// mounts is one bind mount per volumeMount of c, in the container's order.
func mounts(pod *corev1.Pod, c *corev1.Container, dirs map[string]string, e *env, linux bool) ([]specs.Mount, error) {
	volumes := make(map[string]*corev1.Volume, len(pod.Spec.Volumes))
	for i := range pod.Spec.Volumes {
		volumes[pod.Spec.Volumes[i].Name] = &pod.Spec.Volumes[i]
	}
	out := make([]specs.Mount, 0, len(c.VolumeMounts))
	for i, vm := range c.VolumeMounts {
		m, err := mount(vm, volumes, dirs, e, linux)
		if err != nil {
			return nil, fmt.Errorf("volumeMounts[%d] (%q): %w", i, vm.MountPath, err)
		}
		out = append(out, m)
	}
	return out, nil
}

func mount(vm corev1.VolumeMount, volumes map[string]*corev1.Volume, dirs map[string]string, e *env, linux bool) (specs.Mount, error) {
	v, ok := volumes[vm.Name]
	if !ok {
		return specs.Mount{}, fmt.Errorf("volume %q is not a volume of the pod", vm.Name)
	}
	dir, ok := dirs[vm.Name]
	if !ok {
		if v.HostPath == nil {
			return specs.Mount{}, fmt.Errorf("volume %q has no directory on the host", vm.Name)
		}
		dir = v.HostPath.Path
	}
	if vm.MountPath == "" {
		return specs.Mount{}, fmt.Errorf("volume %q: mountPath is empty", vm.Name)
	}
	sub, err := subPath(vm, e)
	if err != nil {
		return specs.Mount{}, fmt.Errorf("volume %q: %w", vm.Name, err)
	}
	src := dir
	if sub != "" {
		src = filepath.Join(dir, sub)
	}

	readOnly := vm.ReadOnly || apiContent(v)
	opts := []string{"rbind", "rw"}
	if readOnly {
		opts[1] = "ro"
	}
	m := specs.Mount{Destination: vm.MountPath, Source: src, Options: opts}
	if !linux {
		return m, nil
	}
	m.Type = "bind"
	mode := corev1.MountPropagationNone
	if vm.MountPropagation != nil {
		mode = *vm.MountPropagation
	}
	p, ok := propagation[mode]
	if !ok {
		return specs.Mount{}, fmt.Errorf("volume %q: unknown mountPropagation %q", vm.Name, mode)
	}
	m.Options = append(m.Options, p)
	// Recursive read-only needs kernel support only the runtime can probe, so only "Enabled"
	// (fail if unsupported) asks for it; "IfPossible" stays a plain read-only bind.
	if readOnly && vm.RecursiveReadOnly != nil && *vm.RecursiveReadOnly == corev1.RecursiveReadOnlyEnabled {
		m.Options = append(m.Options, "rro")
	}
	return m, nil
}

// apiContent says whether the volume holds what the agent writes from the API (secret,
// configMap, downwardAPI, projected). Such a volume is mounted read-only whatever the
// volumeMount says, as the kubelet does: a container that could write there could plant links
// and files in its own credentials, and its changes would be lost at the next update anyway.
func apiContent(v *corev1.Volume) bool {
	return v.Secret != nil || v.ConfigMap != nil || v.DownwardAPI != nil || v.Projected != nil
}

// subPath is the mount's path inside its volume, from subPath or subPathExpr (expanded with the
// container's environment). It must stay inside the volume: an absolute path or a ".." element is
// refused even though API validation refuses them first, because the mount source is a path on
// the host. Symbolic links inside the volume are the mounter's to resolve safely; this check is
// lexical.
func subPath(vm corev1.VolumeMount, e *env) (string, error) {
	sub := vm.SubPath
	field := "subPath"
	if vm.SubPathExpr != "" {
		if sub != "" {
			return "", fmt.Errorf("subPath and subPathExpr are both set")
		}
		field = "subPathExpr"
		var missing []string
		sub, missing = expand(vm.SubPathExpr, e.lookup)
		if len(missing) > 0 {
			return "", fmt.Errorf("subPathExpr %q refers to %q, which is not a plain env value of the container", vm.SubPathExpr, missing[0])
		}
	}
	if sub == "" {
		return "", nil
	}
	if filepath.IsAbs(sub) || strings.HasPrefix(sub, "/") || strings.HasPrefix(sub, `\`) || hasDrive(sub) {
		return "", fmt.Errorf("%s %q is absolute", field, sub)
	}
	for _, part := range strings.FieldsFunc(sub, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == ".." {
			return "", fmt.Errorf("%s %q contains '..'", field, sub)
		}
	}
	return sub, nil
}

// hasDrive says whether p starts with a Windows drive ("C:"), which makes it leave the volume
// whatever the host's own path rules say.
func hasDrive(p string) bool {
	return len(p) >= 2 && p[1] == ':' && ('a' <= p[0]|0x20 && p[0]|0x20 <= 'z')
}
