// Package runtimespec turns one container of a pod into the OCI runtime spec a runtime would
// start it from: process, user and groups, capabilities, mounts of the pod's volumes, and the
// Windows identity (run-as user name, GMSA credential spec). It is pure: no API calls, no disk.
//
// A Linux spec is complete enough for runc to run as it is, given a rootfs in the bundle: it
// carries what containerd's default spec holds (namespaces, kernel filesystems, masked and
// read-only paths, device allowlist, rlimits, PATH) and the pod's settings on top.
//
// Left to whoever runs the container, because they need the image or the API: the image's
// user, entrypoint and environment; env values from valueFrom and envFrom unless Params.Env
// resolves them; seccomp profiles,
// SELinux labels and AppArmor profiles (EffectiveSecurityContext carries them); the cgroup
// parent; joining the namespaces of a pod sandbox; the Windows layer folders.
package runtimespec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
)

// Annotations CRI runtimes put on a container's spec, so that tools on the node can tell whose it
// is.
const (
	AnnotationPodNamespace  = "io.kubernetes.pod.namespace"
	AnnotationPodName       = "io.kubernetes.pod.name"
	AnnotationPodUID        = "io.kubernetes.pod.uid"
	AnnotationContainerName = "io.kubernetes.container.name"
	// AnnotationHostProcess marks a Windows HostProcess container, as containerd expects it.
	AnnotationHostProcess = "microsoft.com/hostprocess-container"
)

// rootfsPath is the root filesystem's path relative to the bundle, the OCI convention.
const rootfsPath = "rootfs"

// maxHostnameLen is the longest hostname the kernel (and DNS label rules) allow.
const maxHostnameLen = 63

// Params of one container's spec.
type Params struct {
	Pod *corev1.Pod
	// Container is an init, regular, or an ephemeral container's EphemeralContainerCommon
	// converted to a Container.
	Container *corev1.Container
	// VolumeDirs maps a pod volume name to its directory on the host (the agent's
	// DIR/pods/<uid>/volumes/<name>). A hostPath volume missing from it is its own path; any other
	// volume missing from it has no directory and cannot be mounted.
	VolumeDirs map[string]string
	// Env resolves env entries with valueFrom and envFrom; nil leaves them out.
	Env EnvSource
	// ServiceEnv are the service variables every container gets (KubernetesServiceEnv), unless
	// it defines the same names itself.
	ServiceEnv []corev1.EnvVar
}

// Spec returns the OCI runtime spec for one container.
func Spec(p Params) (*specs.Spec, error) {
	if p.Pod == nil || p.Container == nil {
		return nil, fmt.Errorf("runtime spec: pod and container are required")
	}
	s, err := spec(p)
	if err != nil {
		return nil, fmt.Errorf("runtime spec of container %q of pod %s/%s: %w",
			p.Container.Name, p.Pod.Namespace, p.Pod.Name, err)
	}
	return s, nil
}

func spec(p Params) (*specs.Spec, error) {
	pod, c := p.Pod, p.Container
	env, err := environment(c, p.Env, p.ServiceEnv)
	if err != nil {
		return nil, err
	}
	args := make([]string, 0, len(c.Command)+len(c.Args))
	for _, a := range slices.Concat(c.Command, c.Args) {
		v, _ := expand(a, env.lookup)
		args = append(args, v)
	}
	cwd := c.WorkingDir
	if cwd == "" {
		cwd = "/"
	}
	s := &specs.Spec{
		Version: specs.Version,
		Process: &specs.Process{
			Terminal: c.TTY,
			Args:     args,
			Env:      env.list(),
			Cwd:      cwd,
		},
		Annotations: map[string]string{
			AnnotationPodNamespace:  pod.Namespace,
			AnnotationPodName:       pod.Name,
			AnnotationPodUID:        string(pod.UID),
			AnnotationContainerName: c.Name,
		},
	}
	sc := EffectiveSecurityContext(pod, c)
	windows := pod.Spec.OS != nil && pod.Spec.OS.Name == corev1.Windows

	ms, err := mounts(pod, c, p.VolumeDirs, env, !windows)
	if err != nil {
		return nil, err
	}
	s.Mounts = ms

	if windows {
		s.Hostname = hostname(pod)
		err = windowsParts(s, sc)
	} else {
		err = linuxParts(s, pod, c, sc, env)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// linuxParts fills the user, groups, capabilities, root, namespaces, kernel filesystems, masked
// paths, resources, rlimits, hostname and sysctls of a Linux container.
func linuxParts(s *specs.Spec, pod *corev1.Pod, c *corev1.Container, sc *corev1.SecurityContext, e *env) error {
	// An unset runAsUser or runAsGroup is written as 0: the image's user and group would apply,
	// and only whoever holds the image can resolve them (and must then enforce runAsNonRoot).
	uid, err := id("runAsUser", sc.RunAsUser)
	if err != nil {
		return err
	}
	if sc.RunAsNonRoot != nil && *sc.RunAsNonRoot && sc.RunAsUser != nil && uid == 0 {
		return fmt.Errorf("runAsNonRoot is set but runAsUser is 0")
	}
	gid, err := id("runAsGroup", sc.RunAsGroup)
	if err != nil {
		return err
	}
	var gids []uint32
	if psc := pod.Spec.SecurityContext; psc != nil {
		if psc.FSGroup != nil {
			g, err := id("fsGroup", psc.FSGroup)
			if err != nil {
				return err
			}
			gids = append(gids, g)
		}
		for _, sg := range psc.SupplementalGroups {
			g, err := id("supplementalGroups", &sg)
			if err != nil {
				return err
			}
			gids = append(gids, g)
		}
	}
	slices.Sort(gids)
	gids = slices.Compact(gids)
	caps, err := capabilities(sc)
	if err != nil {
		return err
	}

	s.Process.User = specs.User{UID: uid, GID: gid, AdditionalGids: gids}
	s.Process.Capabilities = caps
	// As the kubelet: no_new_privs only when allowPrivilegeEscalation is explicitly false. The
	// API's own default (true unless ...) is left to admission, which writes the field.
	s.Process.NoNewPrivileges = sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation
	s.Root = &specs.Root{
		Path:     rootfsPath,
		Readonly: sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem,
	}
	s.Process.Rlimits = append([]specs.POSIXRlimit(nil), defaultRlimits...)
	if _, set := e.lookup("PATH"); !set {
		s.Process.Env = append([]string{"PATH=" + defaultPath}, s.Process.Env...)
	}
	if !pod.Spec.HostNetwork {
		s.Hostname = hostname(pod)
	}
	privileged := sc.Privileged != nil && *sc.Privileged
	s.Mounts = append(systemMounts(pod, privileged, s.Mounts), s.Mounts...)
	// Seccomp is out of scope: sc.SeccompProfile is resolved by the runtime, which owns the
	// RuntimeDefault profile and the node's localhost profiles.
	s.Linux = &specs.Linux{
		Namespaces: namespaces(pod),
		Resources:  resources(c, privileged),
	}
	if !privileged && (sc.ProcMount == nil || *sc.ProcMount != corev1.UnmaskedProcMount) {
		s.Linux.MaskedPaths = append([]string(nil), maskedPaths...)
		s.Linux.ReadonlyPaths = append([]string(nil), readonlyPaths...)
	}
	if psc := pod.Spec.SecurityContext; psc != nil && len(psc.Sysctls) > 0 {
		s.Linux.Sysctl = make(map[string]string, len(psc.Sysctls))
		for _, sy := range psc.Sysctls {
			s.Linux.Sysctl[sy.Name] = sy.Value
		}
	}
	return nil
}

// id is a user or group ID from the API (int64) as the kernel's uint32; the API validates the
// range, and a value outside it is refused rather than wrapped around to another ID.
func id(field string, v *int64) (uint32, error) {
	if v == nil {
		return 0, nil
	}
	if *v < 0 || *v > math.MaxUint32 {
		return 0, fmt.Errorf("%s %d is not a valid ID", field, *v)
	}
	return uint32(*v), nil
}

// windowsParts fills the user name, GMSA credential spec and HostProcess marker of a Windows
// container.
func windowsParts(s *specs.Spec, sc *corev1.SecurityContext) error {
	s.Windows = &specs.Windows{}
	w := sc.WindowsOptions
	if w == nil {
		return nil
	}
	if w.RunAsUserName != nil {
		s.Process.User.Username = *w.RunAsUserName
	}
	if w.GMSACredentialSpec != nil && *w.GMSACredentialSpec != "" {
		cs, err := credentialSpec(*w.GMSACredentialSpec)
		if err != nil {
			return err
		}
		s.Windows.CredentialSpec = cs
	}
	if w.HostProcess != nil && *w.HostProcess {
		s.Annotations[AnnotationHostProcess] = "true"
	}
	return nil
}

// credentialSpec is the GMSA credential spec as a JSON document, so that config.json carries the
// object itself (as Windows runtimes read it) and not a string holding it. Anything but a JSON
// object is refused: the runtime would fail on it, and it cannot be what admission put there.
func credentialSpec(doc string) (json.RawMessage, error) {
	b := bytes.TrimSpace([]byte(doc))
	if !json.Valid(b) || b[0] != '{' {
		return nil, fmt.Errorf("windowsOptions.gmsaCredentialSpec is not a JSON object")
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return nil, fmt.Errorf("windowsOptions.gmsaCredentialSpec: %w", err)
	}
	return json.RawMessage(out.Bytes()), nil
}

// hostname is the pod's spec.hostname, else its name, cut to 63 characters the way the kubelet
// cuts it (no trailing '-' or '.'). A hostNetwork pod has none: it shares the host's UTS
// namespace and so sees the node's name.
func hostname(pod *corev1.Pod) string {
	h := pod.Spec.Hostname
	if h == "" {
		h = pod.Name
	}
	if len(h) <= maxHostnameLen {
		return h
	}
	return strings.TrimRight(h[:maxHostnameLen], "-.")
}
