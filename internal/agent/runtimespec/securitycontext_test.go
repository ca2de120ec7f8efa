package runtimespec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestEffectiveSecurityContext(t *testing.T) {
	seLinux := func(l string) *corev1.SELinuxOptions { return &corev1.SELinuxOptions{Level: l} }
	seccomp := func(p string) *corev1.SeccompProfile {
		return &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To(p)}
	}
	apparmor := func(p string) *corev1.AppArmorProfile {
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To(p)}
	}
	type field struct {
		name      string
		pod       func(*corev1.PodSecurityContext, int)
		container func(*corev1.SecurityContext, int)
		want      func(*corev1.SecurityContext, int)
	}
	// Each field is set on the pod to value 1 and on the container to value 2.
	fields := []field{
		{"runAsUser",
			func(p *corev1.PodSecurityContext, v int) { p.RunAsUser = ptr.To(int64(v)) },
			func(c *corev1.SecurityContext, v int) { c.RunAsUser = ptr.To(int64(v)) },
			func(c *corev1.SecurityContext, v int) { c.RunAsUser = ptr.To(int64(v)) }},
		{"runAsGroup",
			func(p *corev1.PodSecurityContext, v int) { p.RunAsGroup = ptr.To(int64(v)) },
			func(c *corev1.SecurityContext, v int) { c.RunAsGroup = ptr.To(int64(v)) },
			func(c *corev1.SecurityContext, v int) { c.RunAsGroup = ptr.To(int64(v)) }},
		{"runAsNonRoot",
			func(p *corev1.PodSecurityContext, v int) { p.RunAsNonRoot = ptr.To(v == 1) },
			func(c *corev1.SecurityContext, v int) { c.RunAsNonRoot = ptr.To(v == 1) },
			func(c *corev1.SecurityContext, v int) { c.RunAsNonRoot = ptr.To(v == 1) }},
		{"seLinuxOptions",
			func(p *corev1.PodSecurityContext, v int) { p.SELinuxOptions = seLinux(string(rune('0' + v))) },
			func(c *corev1.SecurityContext, v int) { c.SELinuxOptions = seLinux(string(rune('0' + v))) },
			func(c *corev1.SecurityContext, v int) { c.SELinuxOptions = seLinux(string(rune('0' + v))) }},
		{"seccompProfile",
			func(p *corev1.PodSecurityContext, v int) { p.SeccompProfile = seccomp(string(rune('0' + v))) },
			func(c *corev1.SecurityContext, v int) { c.SeccompProfile = seccomp(string(rune('0' + v))) },
			func(c *corev1.SecurityContext, v int) { c.SeccompProfile = seccomp(string(rune('0' + v))) }},
		{"appArmorProfile",
			func(p *corev1.PodSecurityContext, v int) { p.AppArmorProfile = apparmor(string(rune('0' + v))) },
			func(c *corev1.SecurityContext, v int) { c.AppArmorProfile = apparmor(string(rune('0' + v))) },
			func(c *corev1.SecurityContext, v int) { c.AppArmorProfile = apparmor(string(rune('0' + v))) }},
		{"windowsOptions.runAsUserName",
			func(p *corev1.PodSecurityContext, v int) { winOpts(&p.WindowsOptions).RunAsUserName = ptr.To(user(v)) },
			func(c *corev1.SecurityContext, v int) { winOpts(&c.WindowsOptions).RunAsUserName = ptr.To(user(v)) },
			func(c *corev1.SecurityContext, v int) { winOpts(&c.WindowsOptions).RunAsUserName = ptr.To(user(v)) }},
		{"windowsOptions.hostProcess",
			func(p *corev1.PodSecurityContext, v int) { winOpts(&p.WindowsOptions).HostProcess = ptr.To(v == 1) },
			func(c *corev1.SecurityContext, v int) { winOpts(&c.WindowsOptions).HostProcess = ptr.To(v == 1) },
			func(c *corev1.SecurityContext, v int) { winOpts(&c.WindowsOptions).HostProcess = ptr.To(v == 1) }},
		{"windowsOptions.gmsaCredentialSpecName",
			func(p *corev1.PodSecurityContext, v int) {
				winOpts(&p.WindowsOptions).GMSACredentialSpecName = ptr.To(specName(v))
			},
			func(c *corev1.SecurityContext, v int) {
				winOpts(&c.WindowsOptions).GMSACredentialSpecName = ptr.To(specName(v))
			},
			func(c *corev1.SecurityContext, v int) {
				winOpts(&c.WindowsOptions).GMSACredentialSpecName = ptr.To(specName(v))
			}},
		{"windowsOptions.gmsaCredentialSpec",
			func(p *corev1.PodSecurityContext, v int) {
				winOpts(&p.WindowsOptions).GMSACredentialSpec = ptr.To(doc(v))
			},
			func(c *corev1.SecurityContext, v int) { winOpts(&c.WindowsOptions).GMSACredentialSpec = ptr.To(doc(v)) },
			func(c *corev1.SecurityContext, v int) { winOpts(&c.WindowsOptions).GMSACredentialSpec = ptr.To(doc(v)) }},
	}
	for _, f := range fields {
		for _, tc := range []struct {
			name           string
			onPod, onCtr   bool
			wantFromPod    bool
			wantFromCtr    bool
			otherCtrFields bool
		}{
			{name: "pod only", onPod: true, wantFromPod: true},
			{name: "pod only, container has a context", onPod: true, wantFromPod: true, otherCtrFields: true},
			{name: "container only", onCtr: true, wantFromCtr: true},
			{name: "both: container wins", onPod: true, onCtr: true, wantFromCtr: true},
		} {
			t.Run(f.name+"/"+tc.name, func(t *testing.T) {
				pod := &corev1.Pod{}
				c := &corev1.Container{Name: "c"}
				want := &corev1.SecurityContext{}
				if tc.onPod {
					pod.Spec.SecurityContext = &corev1.PodSecurityContext{}
					f.pod(pod.Spec.SecurityContext, 1)
				}
				if tc.onCtr || tc.otherCtrFields {
					c.SecurityContext = &corev1.SecurityContext{}
				}
				if tc.otherCtrFields {
					c.SecurityContext.Privileged = ptr.To(false)
					want.Privileged = ptr.To(false)
				}
				if tc.onCtr {
					f.container(c.SecurityContext, 2)
				}
				if tc.wantFromPod {
					f.want(want, 1)
				}
				if tc.wantFromCtr {
					f.want(want, 2)
				}
				checkMerge(t, pod, c, want)
			})
		}
	}
}

// TestEffectiveSecurityContextWindowsFieldByField: each windowsOptions field the container leaves
// unset comes from the pod, the GMSA name and contents as one pair.
func TestEffectiveSecurityContextWindowsFieldByField(t *testing.T) {
	podOpts := &corev1.WindowsSecurityContextOptions{
		GMSACredentialSpecName: ptr.To(specName(1)),
		GMSACredentialSpec:     ptr.To(doc(1)),
		RunAsUserName:          ptr.To(user(1)),
		HostProcess:            ptr.To(false),
	}
	for _, tc := range []struct {
		name string
		ctr  *corev1.WindowsSecurityContextOptions
		want *corev1.WindowsSecurityContextOptions
	}{
		{
			name: "container sets the user name: GMSA and hostProcess from the pod",
			ctr:  &corev1.WindowsSecurityContextOptions{RunAsUserName: ptr.To(user(2))},
			want: &corev1.WindowsSecurityContextOptions{
				GMSACredentialSpecName: ptr.To(specName(1)), GMSACredentialSpec: ptr.To(doc(1)),
				RunAsUserName: ptr.To(user(2)), HostProcess: ptr.To(false),
			},
		},
		{
			name: "container sets hostProcess only",
			ctr:  &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)},
			want: &corev1.WindowsSecurityContextOptions{
				GMSACredentialSpecName: ptr.To(specName(1)), GMSACredentialSpec: ptr.To(doc(1)),
				RunAsUserName: ptr.To(user(1)), HostProcess: ptr.To(true),
			},
		},
		{
			name: "container sets its GMSA pair",
			ctr: &corev1.WindowsSecurityContextOptions{
				GMSACredentialSpecName: ptr.To(specName(2)), GMSACredentialSpec: ptr.To(doc(2)),
			},
			want: &corev1.WindowsSecurityContextOptions{
				GMSACredentialSpecName: ptr.To(specName(2)), GMSACredentialSpec: ptr.To(doc(2)),
				RunAsUserName: ptr.To(user(1)), HostProcess: ptr.To(false),
			},
		},
		{
			name: "container names a spec not expanded: the pod's contents do not come with another name",
			ctr:  &corev1.WindowsSecurityContextOptions{GMSACredentialSpecName: ptr.To(specName(2))},
			want: &corev1.WindowsSecurityContextOptions{
				GMSACredentialSpecName: ptr.To(specName(2)),
				RunAsUserName:          ptr.To(user(1)), HostProcess: ptr.To(false),
			},
		},
		{
			name: "container brings contents only: the pod's name does not vouch for them",
			ctr:  &corev1.WindowsSecurityContextOptions{GMSACredentialSpec: ptr.To(doc(2))},
			want: &corev1.WindowsSecurityContextOptions{
				GMSACredentialSpec: ptr.To(doc(2)),
				RunAsUserName:      ptr.To(user(1)), HostProcess: ptr.To(false),
			},
		},
		{
			name: "empty container options: all from the pod",
			ctr:  &corev1.WindowsSecurityContextOptions{},
			want: podOpts,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{WindowsOptions: podOpts.DeepCopy()}}}
			c := &corev1.Container{SecurityContext: &corev1.SecurityContext{WindowsOptions: tc.ctr}}
			checkMerge(t, pod, c, &corev1.SecurityContext{WindowsOptions: tc.want})
		})
	}
}

func TestEffectiveSecurityContextContainerOnlyFields(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{
		RunAsUser: ptr.To(int64(1000)), FSGroup: ptr.To(int64(2000)), SupplementalGroups: []int64{3000},
		Sysctls: []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}},
	}}}
	csc := &corev1.SecurityContext{
		Capabilities:             &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}},
		Privileged:               ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		ProcMount:                ptr.To(corev1.DefaultProcMount),
	}
	want := csc.DeepCopy()
	want.RunAsUser = ptr.To(int64(1000))
	checkMerge(t, pod, &corev1.Container{SecurityContext: csc}, want)
}

func TestEffectiveSecurityContextNeither(t *testing.T) {
	checkMerge(t, &corev1.Pod{}, &corev1.Container{}, &corev1.SecurityContext{})
}

// checkMerge compares the merge with want, and checks that it left its inputs alone and shares no
// memory with them.
func checkMerge(t *testing.T, pod *corev1.Pod, c *corev1.Container, want *corev1.SecurityContext) {
	t.Helper()
	podBefore, cBefore := pod.DeepCopy(), c.DeepCopy()
	got := EffectiveSecurityContext(pod, c)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("effective security context (-want +got):\n%s", diff)
	}
	scribble(got)
	if diff := cmp.Diff(podBefore, pod); diff != "" {
		t.Errorf("pod changed (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(cBefore, c); diff != "" {
		t.Errorf("container changed (-before +after):\n%s", diff)
	}
}

// scribble overwrites everything a result points to, so that shared memory with an input shows.
func scribble(sc *corev1.SecurityContext) {
	for _, p := range []*int64{sc.RunAsUser, sc.RunAsGroup} {
		if p != nil {
			*p = -99
		}
	}
	for _, p := range []*bool{sc.RunAsNonRoot, sc.Privileged, sc.ReadOnlyRootFilesystem, sc.AllowPrivilegeEscalation} {
		if p != nil {
			*p = !*p
		}
	}
	if sc.SELinuxOptions != nil {
		sc.SELinuxOptions.Level = "scribbled"
	}
	if sc.SeccompProfile != nil {
		sc.SeccompProfile.LocalhostProfile = ptr.To("scribbled")
	}
	if sc.AppArmorProfile != nil {
		sc.AppArmorProfile.LocalhostProfile = ptr.To("scribbled")
	}
	if sc.Capabilities != nil && len(sc.Capabilities.Add) > 0 {
		sc.Capabilities.Add[0] = "scribbled"
	}
	if w := sc.WindowsOptions; w != nil {
		for _, p := range []*string{w.GMSACredentialSpecName, w.GMSACredentialSpec, w.RunAsUserName} {
			if p != nil {
				*p = "scribbled"
			}
		}
		if w.HostProcess != nil {
			*w.HostProcess = !*w.HostProcess
		}
	}
}

func winOpts(p **corev1.WindowsSecurityContextOptions) *corev1.WindowsSecurityContextOptions {
	if *p == nil {
		*p = &corev1.WindowsSecurityContextOptions{}
	}
	return *p
}

func user(v int) string     { return "user" + string(rune('0'+v)) }
func specName(v int) string { return "credspec" + string(rune('0'+v)) }
func doc(v int) string      { return `{"CmsPlugins":["ActiveDirectory"],"n":` + string(rune('0'+v)) + `}` }
