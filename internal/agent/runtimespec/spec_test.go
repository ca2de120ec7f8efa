package runtimespec

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const volDir = "/var/lib/idplane/pods/uid-1/volumes"

func testPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-1"},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{
				{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "logs", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log/web"}}},
				{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
				{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db"}}},
				{Name: "settings", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
				{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{}}},
			},
			Containers: []corev1.Container{{Name: "app", Image: "app:1"}},
		},
	}
}

func testDirs() map[string]string {
	return map[string]string{
		"token":    volDir + "/token",
		"data":     volDir + "/data",
		"creds":    volDir + "/creds",
		"settings": volDir + "/settings",
		"info":     volDir + "/info",
	}
}

// volumeMounts are the spec's mounts of the pod's volumes, without the kernel filesystems
// every container gets.
func volumeMounts(s *specs.Spec) []specs.Mount {
	var out []specs.Mount
	for _, m := range s.Mounts {
		if m.Type == "bind" && m.Source != hostShm.Source {
			out = append(out, m)
		}
	}
	return out
}

func mustSpec(t *testing.T, p Params) *specs.Spec {
	t.Helper()
	s, err := Spec(p)
	if err != nil {
		t.Fatalf("Spec: %v", err)
	}
	return s
}

func TestLinuxUserAndGroups(t *testing.T) {
	for _, tc := range []struct {
		name string
		psc  *corev1.PodSecurityContext
		csc  *corev1.SecurityContext
		want specs.User
	}{
		{name: "nothing set: image's user, written as 0", want: specs.User{}},
		{
			name: "pod user and group",
			psc:  &corev1.PodSecurityContext{RunAsUser: ptr.To(int64(1000)), RunAsGroup: ptr.To(int64(3000))},
			want: specs.User{UID: 1000, GID: 3000},
		},
		{
			name: "container overrides the user, group from the pod",
			psc:  &corev1.PodSecurityContext{RunAsUser: ptr.To(int64(1000)), RunAsGroup: ptr.To(int64(3000))},
			csc:  &corev1.SecurityContext{RunAsUser: ptr.To(int64(1001))},
			want: specs.User{UID: 1001, GID: 3000},
		},
		{
			name: "fsGroup and supplementalGroups: sorted, deduplicated",
			psc: &corev1.PodSecurityContext{
				RunAsUser: ptr.To(int64(1000)), FSGroup: ptr.To(int64(2000)),
				SupplementalGroups: []int64{5000, 2000, 4000, 5000},
			},
			want: specs.User{UID: 1000, AdditionalGids: []uint32{2000, 4000, 5000}},
		},
		{
			name: "fsGroup alone",
			psc:  &corev1.PodSecurityContext{FSGroup: ptr.To(int64(2000))},
			want: specs.User{AdditionalGids: []uint32{2000}},
		},
		{
			name: "runAsNonRoot with a user",
			psc:  &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
			csc:  &corev1.SecurityContext{RunAsUser: ptr.To(int64(65534))},
			want: specs.User{UID: 65534},
		},
		{
			name: "largest IDs",
			csc:  &corev1.SecurityContext{RunAsUser: ptr.To(int64(4294967295)), RunAsGroup: ptr.To(int64(4294967295))},
			want: specs.User{UID: 4294967295, GID: 4294967295},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod()
			pod.Spec.SecurityContext = tc.psc
			pod.Spec.Containers[0].SecurityContext = tc.csc
			s := mustSpec(t, Params{Pod: pod, Container: &pod.Spec.Containers[0]})
			if diff := cmp.Diff(tc.want, s.Process.User); diff != "" {
				t.Errorf("user (-want +got):\n%s", diff)
			}
			if s.Windows != nil {
				t.Errorf("a Linux pod has a Windows section")
			}
		})
	}
}

func TestLinuxRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		psc  *corev1.PodSecurityContext
		csc  *corev1.SecurityContext
		want string
	}{
		{"runAsNonRoot with uid 0", &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
			&corev1.SecurityContext{RunAsUser: ptr.To(int64(0))}, "runAsNonRoot is set but runAsUser is 0"},
		{"negative user", nil, &corev1.SecurityContext{RunAsUser: ptr.To(int64(-1))}, "runAsUser -1 is not a valid ID"},
		{"group too large", nil, &corev1.SecurityContext{RunAsGroup: ptr.To(int64(1 << 32))}, "runAsGroup 4294967296 is not a valid ID"},
		{"bad fsGroup", &corev1.PodSecurityContext{FSGroup: ptr.To(int64(-5))}, nil, "fsGroup -5 is not a valid ID"},
		{"bad supplemental group", &corev1.PodSecurityContext{SupplementalGroups: []int64{1, -2}}, nil, "supplementalGroups -2 is not a valid ID"},
		{"unknown capability", nil, &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"MAKE_COFFEE"}}},
			`capabilities.add: unknown capability "MAKE_COFFEE"`},
		{"unknown dropped capability", nil, &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"NOPE"}}},
			`capabilities.drop: unknown capability "NOPE"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod()
			pod.Spec.SecurityContext = tc.psc
			pod.Spec.Containers[0].SecurityContext = tc.csc
			_, err := Spec(Params{Pod: pod, Container: &pod.Spec.Containers[0]})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), `container "app" of pod ns/web`) {
				t.Errorf("error %q does not say which container", err)
			}
		})
	}
}

func TestCapabilities(t *testing.T) {
	defaults := []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETGID",
		"CAP_SETUID", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_NET_RAW", "CAP_SYS_CHROOT", "CAP_MKNOD",
		"CAP_AUDIT_WRITE", "CAP_SETFCAP"}
	all := make([]string, len(linuxCaps))
	for i, c := range linuxCaps {
		all[i] = "CAP_" + c
	}
	caps := func(add []corev1.Capability, drop ...corev1.Capability) *corev1.SecurityContext {
		return &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: add, Drop: drop}}
	}
	without := func(list []string, drop ...string) []string {
		var out []string
		for _, c := range list {
			if !strings.Contains(" "+strings.Join(drop, " ")+" ", " "+c+" ") {
				out = append(out, c)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		csc  *corev1.SecurityContext
		want []string
	}{
		{"default set", nil, defaults},
		{"add one, kernel order", caps([]corev1.Capability{"NET_ADMIN"}), []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER",
			"CAP_FSETID", "CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_NET_ADMIN",
			"CAP_NET_RAW", "CAP_SYS_CHROOT", "CAP_MKNOD", "CAP_AUDIT_WRITE", "CAP_SETFCAP"}},
		{"drop one", caps(nil, "NET_RAW"), without(defaults, "CAP_NET_RAW")},
		{"names with prefix or lower case", caps([]corev1.Capability{"cap_sys_time"}, "Cap_Kill"),
			without(append(defaults[:len(defaults):len(defaults)], "CAP_SYS_TIME"), "CAP_KILL")},
		{"drop ALL", caps(nil, "ALL"), nil},
		{"drop ALL, add one back", caps([]corev1.Capability{"NET_BIND_SERVICE"}, "ALL"), []string{"CAP_NET_BIND_SERVICE"}},
		{"add ALL", caps([]corev1.Capability{"ALL"}), all},
		{"add ALL, drop one", caps([]corev1.Capability{"ALL"}, "SYS_ADMIN"), without(all, "CAP_SYS_ADMIN")},
		{"drop wins over add", caps([]corev1.Capability{"NET_ADMIN"}, "NET_ADMIN"), defaults},
		{"privileged: everything, add and drop ignored",
			&corev1.SecurityContext{Privileged: ptr.To(true), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}, all},
		{"privileged false: defaults", &corev1.SecurityContext{Privileged: ptr.To(false)}, defaults},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod()
			pod.Spec.Containers[0].SecurityContext = tc.csc
			s := mustSpec(t, Params{Pod: pod, Container: &pod.Spec.Containers[0]})
			got := s.Process.Capabilities
			// Kernel order for the expected lists too.
			want := without(all, without(all, tc.want...)...)
			if diff := cmp.Diff(want, got.Bounding); diff != "" {
				t.Errorf("bounding (-want +got):\n%s", diff)
			}
			if !cmp.Equal(got.Bounding, got.Effective) || !cmp.Equal(got.Bounding, got.Permitted) {
				t.Errorf("effective %v and permitted %v differ from bounding %v", got.Effective, got.Permitted, got.Bounding)
			}
			if len(got.Inheritable) > 0 || len(got.Ambient) > 0 {
				t.Errorf("inheritable %v / ambient %v, want none", got.Inheritable, got.Ambient)
			}
		})
	}
}

func TestLinuxProcessFlags(t *testing.T) {
	for _, tc := range []struct {
		name         string
		csc          *corev1.SecurityContext
		wantNNP, wRO bool
	}{
		{name: "unset: privilege escalation allowed, writable root"},
		{name: "allowPrivilegeEscalation false", csc: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false)}, wantNNP: true},
		{name: "allowPrivilegeEscalation true", csc: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(true)}},
		{name: "readOnlyRootFilesystem", csc: &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true)}, wRO: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod()
			pod.Spec.Containers[0].SecurityContext = tc.csc
			s := mustSpec(t, Params{Pod: pod, Container: &pod.Spec.Containers[0]})
			if s.Process.NoNewPrivileges != tc.wantNNP {
				t.Errorf("noNewPrivileges %v, want %v", s.Process.NoNewPrivileges, tc.wantNNP)
			}
			if s.Root == nil || s.Root.Path != "rootfs" || s.Root.Readonly != tc.wRO {
				t.Errorf("root %+v, want rootfs readonly=%v", s.Root, tc.wRO)
			}
		})
	}
}

func TestWindows(t *testing.T) {
	const credSpec = `{
  "CmsPlugins": ["ActiveDirectory"],
  "DomainJoinConfig": {"DnsName": "contoso.com", "MachineAccountName": "WebApp1", "Sid": "S-1-5-21-1"},
  "ActiveDirectoryConfig": {"GroupManagedServiceAccounts": [{"Name": "WebApp1", "Scope": "CONTOSO"}]}
}`
	winPod := func(psc *corev1.PodSecurityContext, csc *corev1.SecurityContext) *corev1.Pod {
		pod := testPod()
		pod.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
		pod.Spec.SecurityContext = psc
		pod.Spec.Containers[0].SecurityContext = csc
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: `C:\data`, ReadOnly: true}}
		return pod
	}

	t.Run("user name and credential spec from the pod, user overridden by the container", func(t *testing.T) {
		pod := winPod(
			&corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{
				GMSACredentialSpecName: ptr.To("webapp1"), GMSACredentialSpec: ptr.To(credSpec),
				RunAsUserName: ptr.To("ContainerUser"),
			}},
			&corev1.SecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{RunAsUserName: ptr.To(`NT AUTHORITY\NETWORK SERVICE`)}},
		)
		s := mustSpec(t, Params{Pod: pod, Container: &pod.Spec.Containers[0], VolumeDirs: testDirs()})
		if s.Process.User.Username != `NT AUTHORITY\NETWORK SERVICE` {
			t.Errorf("username %q", s.Process.User.Username)
		}
		if s.Linux != nil || s.Root != nil || s.Process.Capabilities != nil {
			t.Errorf("a Windows pod has Linux parts: linux %+v root %+v caps %+v", s.Linux, s.Root, s.Process.Capabilities)
		}
		if s.Windows == nil || s.Windows.HyperV != nil {
			t.Fatalf("windows section %+v, want one without HyperV", s.Windows)
		}
		if _, ok := s.Annotations[AnnotationHostProcess]; ok {
			t.Errorf("hostProcess annotation on a non-HostProcess container")
		}
		if diff := cmp.Diff([]specs.Mount{{Destination: `C:\data`, Source: volDir + "/data", Options: []string{"rbind", "ro"}}}, s.Mounts); diff != "" {
			t.Errorf("mounts (-want +got):\n%s", diff)
		}

		// config.json carries the credential spec as an object, not as a string holding one.
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		var doc struct {
			Windows struct {
				CredentialSpec json.RawMessage `json:"credentialSpec"`
			} `json:"windows"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("unmarshal config.json: %v", err)
		}
		var got, want map[string]any
		if err := json.Unmarshal(doc.Windows.CredentialSpec, &got); err != nil {
			t.Fatalf("credentialSpec in config.json is not an object: %s (%v)", doc.Windows.CredentialSpec, err)
		}
		if err := json.Unmarshal([]byte(credSpec), &want); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("credentialSpec (-want +got):\n%s", diff)
		}
		// And it reads back through the spec's own types.
		var back specs.Spec
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("config.json does not read back: %v", err)
		}
		if diff := cmp.Diff(want, back.Windows.CredentialSpec); diff != "" {
			t.Errorf("credentialSpec read back (-want +got):\n%s", diff)
		}
	})

	t.Run("container's own credential spec", func(t *testing.T) {
		pod := winPod(
			&corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{
				GMSACredentialSpecName: ptr.To("webapp1"), GMSACredentialSpec: ptr.To(credSpec),
			}},
			&corev1.SecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{
				GMSACredentialSpecName: ptr.To("webapp2"), GMSACredentialSpec: ptr.To(`{"CmsPlugins":["ActiveDirectory"],"n":2}`),
			}},
		)
		s := mustSpec(t, Params{Pod: pod, Container: &pod.Spec.Containers[0], VolumeDirs: testDirs()})
		got, _ := json.Marshal(s.Windows.CredentialSpec)
		if string(got) != `{"CmsPlugins":["ActiveDirectory"],"n":2}` {
			t.Errorf("credentialSpec %s", got)
		}
		if s.Process.User.Username != "" {
			t.Errorf("username %q, want none", s.Process.User.Username)
		}
	})

	t.Run("no windows options", func(t *testing.T) {
		pod := winPod(nil, nil)
		s := mustSpec(t, Params{Pod: pod, Container: &pod.Spec.Containers[0], VolumeDirs: testDirs()})
		if s.Windows == nil || s.Windows.CredentialSpec != nil || s.Process.User.Username != "" {
			t.Errorf("windows %+v user %+v, want an empty Windows section", s.Windows, s.Process.User)
		}
		b, _ := json.Marshal(s)
		if strings.Contains(string(b), "credentialSpec") {
			t.Errorf("config.json has a credentialSpec: %s", b)
		}
	})

	t.Run("hostProcess", func(t *testing.T) {
		pod := winPod(&corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{
			HostProcess: ptr.To(true), RunAsUserName: ptr.To(`NT AUTHORITY\SYSTEM`),
		}}, nil)
		s := mustSpec(t, Params{Pod: pod, Container: &pod.Spec.Containers[0], VolumeDirs: testDirs()})
		if s.Annotations[AnnotationHostProcess] != "true" {
			t.Errorf("annotations %v, want the hostProcess marker", s.Annotations)
		}
	})

	for _, bad := range []string{`"a string"`, `[1,2]`, `{"a":1`, `{"a":1} {"b":2}`, `null`, `nope`} {
		t.Run("credential spec refused: "+bad, func(t *testing.T) {
			pod := winPod(nil, &corev1.SecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{
				GMSACredentialSpecName: ptr.To("x"), GMSACredentialSpec: ptr.To(bad),
			}})
			_, err := Spec(Params{Pod: pod, Container: &pod.Spec.Containers[0], VolumeDirs: testDirs()})
			if err == nil || !strings.Contains(err.Error(), "gmsaCredentialSpec") {
				t.Fatalf("error %v, want one about gmsaCredentialSpec", err)
			}
		})
	}
}

func TestMounts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mounts  []corev1.VolumeMount
		env     []corev1.EnvVar
		want    []specs.Mount
		wantErr string
	}{
		{
			name:   "read-write mount of a volume directory",
			mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
			want:   []specs.Mount{{Destination: "/data", Type: "bind", Source: volDir + "/data", Options: []string{"rbind", "rw", "rprivate"}}},
		},
		{
			name:   "read-only",
			mounts: []corev1.VolumeMount{{Name: "token", MountPath: "/var/run/secrets/tokens", ReadOnly: true}},
			want:   []specs.Mount{{Destination: "/var/run/secrets/tokens", Type: "bind", Source: volDir + "/token", Options: []string{"rbind", "ro", "rprivate"}}},
		},
		{
			name: "volumes written from the API are read-only whatever the mount says",
			mounts: []corev1.VolumeMount{
				{Name: "token", MountPath: "/var/run/secrets/tokens"},
				{Name: "creds", MountPath: "/etc/db", ReadOnly: false},
				{Name: "settings", MountPath: "/etc/app.conf", SubPath: "app.conf"},
				{Name: "info", MountPath: "/etc/podinfo", MountPropagation: ptr.To(corev1.MountPropagationHostToContainer)},
				{Name: "creds", MountPath: "/etc/db2", RecursiveReadOnly: ptr.To(corev1.RecursiveReadOnlyEnabled)},
			},
			want: []specs.Mount{
				{Destination: "/var/run/secrets/tokens", Type: "bind", Source: volDir + "/token", Options: []string{"rbind", "ro", "rprivate"}},
				{Destination: "/etc/db", Type: "bind", Source: volDir + "/creds", Options: []string{"rbind", "ro", "rprivate"}},
				{Destination: "/etc/app.conf", Type: "bind", Source: volDir + "/settings/app.conf", Options: []string{"rbind", "ro", "rprivate"}},
				{Destination: "/etc/podinfo", Type: "bind", Source: volDir + "/info", Options: []string{"rbind", "ro", "rslave"}},
				{Destination: "/etc/db2", Type: "bind", Source: volDir + "/creds", Options: []string{"rbind", "ro", "rprivate", "rro"}},
			},
		},
		{
			name: "recursive read-only enabled",
			mounts: []corev1.VolumeMount{{Name: "logs", MountPath: "/logs", ReadOnly: true,
				RecursiveReadOnly: ptr.To(corev1.RecursiveReadOnlyEnabled)}},
			want: []specs.Mount{{Destination: "/logs", Type: "bind", Source: "/var/log/web", Options: []string{"rbind", "ro", "rprivate", "rro"}}},
		},
		{
			name:   "hostPath not in the map: its own path",
			mounts: []corev1.VolumeMount{{Name: "logs", MountPath: "/logs"}},
			want:   []specs.Mount{{Destination: "/logs", Type: "bind", Source: "/var/log/web", Options: []string{"rbind", "rw", "rprivate"}}},
		},
		{
			name: "subPath, in the container's order, propagation",
			mounts: []corev1.VolumeMount{
				{Name: "data", MountPath: "/etc/app.conf", SubPath: "conf/app.conf", ReadOnly: true},
				{Name: "data", MountPath: "/cache", SubPath: "cache", MountPropagation: ptr.To(corev1.MountPropagationHostToContainer)},
				{Name: "logs", MountPath: "/shared", MountPropagation: ptr.To(corev1.MountPropagationBidirectional)},
			},
			want: []specs.Mount{
				{Destination: "/etc/app.conf", Type: "bind", Source: volDir + "/data/conf/app.conf", Options: []string{"rbind", "ro", "rprivate"}},
				{Destination: "/cache", Type: "bind", Source: volDir + "/data/cache", Options: []string{"rbind", "rw", "rslave"}},
				{Destination: "/shared", Type: "bind", Source: "/var/log/web", Options: []string{"rbind", "rw", "rshared"}},
			},
		},
		{
			name:   "subPath with a harmless dot-dot-like name",
			mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPath: "a/..b/c.."}},
			want:   []specs.Mount{{Destination: "/d", Type: "bind", Source: volDir + "/data/a/..b/c..", Options: []string{"rbind", "rw", "rprivate"}}},
		},
		{
			name:   "subPathExpr from the environment",
			env:    []corev1.EnvVar{{Name: "SHARD", Value: "7"}},
			mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPathExpr: "shard-$(SHARD)"}},
			want:   []specs.Mount{{Destination: "/d", Type: "bind", Source: volDir + "/data/shard-7", Options: []string{"rbind", "rw", "rprivate"}}},
		},
		{name: "unknown volume", mounts: []corev1.VolumeMount{{Name: "ghost", MountPath: "/g"}}, wantErr: `volume "ghost" is not a volume of the pod`},
		{name: "volume without a directory", mounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/c"}}, wantErr: `volume "cfg" has no directory on the host`},
		{name: "absolute subPath", mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPath: "/etc"}}, wantErr: `subPath "/etc" is absolute`},
		{name: "backslash-absolute subPath", mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPath: `\Windows`}}, wantErr: "is absolute"},
		{name: "drive subPath", mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPath: `C:\Windows`}}, wantErr: "is absolute"},
		{name: "dot-dot subPath", mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPath: "../../../etc"}}, wantErr: `contains '..'`},
		{name: "inner dot-dot subPath", mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPath: "a/../../b"}}, wantErr: `contains '..'`},
		{name: "windows dot-dot subPath", mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPath: `a\..\..\b`}}, wantErr: `contains '..'`},
		{
			name:    "subPathExpr expanding to dot-dot",
			env:     []corev1.EnvVar{{Name: "P", Value: "../.."}},
			mounts:  []corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPathExpr: "$(P)/etc"}},
			wantErr: `subPathExpr "../../etc" contains '..'`,
		},
		{
			name:    "subPathExpr with a value from the API",
			env:     []corev1.EnvVar{{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
			mounts:  []corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPathExpr: "$(POD)"}},
			wantErr: `refers to "POD"`,
		},
		{name: "empty mountPath", mounts: []corev1.VolumeMount{{Name: "data"}}, wantErr: "mountPath is empty"},
		{
			name:    "unknown propagation",
			mounts:  []corev1.VolumeMount{{Name: "data", MountPath: "/d", MountPropagation: ptr.To(corev1.MountPropagationMode("Sideways"))}},
			wantErr: `unknown mountPropagation "Sideways"`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod()
			pod.Spec.Containers[0].VolumeMounts = tc.mounts
			pod.Spec.Containers[0].Env = tc.env
			s, err := Spec(Params{Pod: pod, Container: &pod.Spec.Containers[0], VolumeDirs: testDirs()})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				if s != nil {
					t.Errorf("a spec came with the error")
				}
				return
			}
			if err != nil {
				t.Fatalf("Spec: %v", err)
			}
			if diff := cmp.Diff(tc.want, volumeMounts(s)); diff != "" {
				t.Errorf("mounts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEphemeralContainer(t *testing.T) {
	pod := testPod()
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To(int64(1000)), FSGroup: ptr.To(int64(2000))}
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debugger", Image: "busybox", Command: []string{"sh"}, TTY: true, Stdin: true,
			SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_PTRACE"}}},
			VolumeMounts:    []corev1.VolumeMount{{Name: "data", MountPath: "/data", ReadOnly: true}},
		},
		TargetContainerName: "app",
	}}
	c := corev1.Container(pod.Spec.EphemeralContainers[0].EphemeralContainerCommon)
	s := mustSpec(t, Params{Pod: pod, Container: &c, VolumeDirs: testDirs()})
	if s.Annotations[AnnotationContainerName] != "debugger" {
		t.Errorf("container name annotation %q", s.Annotations[AnnotationContainerName])
	}
	if !s.Process.Terminal || !cmp.Equal(s.Process.Args, []string{"sh"}) {
		t.Errorf("process terminal=%v args=%v", s.Process.Terminal, s.Process.Args)
	}
	if diff := cmp.Diff(specs.User{UID: 1000, AdditionalGids: []uint32{2000}}, s.Process.User); diff != "" {
		t.Errorf("user (-want +got):\n%s", diff)
	}
	if !strings.Contains(strings.Join(s.Process.Capabilities.Bounding, " "), "CAP_SYS_PTRACE") {
		t.Errorf("capabilities %v lack CAP_SYS_PTRACE", s.Process.Capabilities.Bounding)
	}
	if m := volumeMounts(s); len(m) != 1 || m[0].Source != volDir+"/data" {
		t.Errorf("mounts %+v", m)
	}
}

func TestProcessAndIdentity(t *testing.T) {
	pod := testPod()
	pod.Spec.Containers[0].Command = []string{"/bin/app", "--listen=$(ADDR)"}
	pod.Spec.Containers[0].Args = []string{"--greeting=$(GREETING)", "$$(ADDR)", "$(UNDEFINED)", "$(SECRET)"}
	pod.Spec.Containers[0].WorkingDir = "/srv"
	pod.Spec.Containers[0].Env = []corev1.EnvVar{
		{Name: "HOST", Value: "0.0.0.0"},
		{Name: "ADDR", Value: "$(HOST):$(PORT)"}, // PORT comes later: not expanded
		{Name: "PORT", Value: "8080"},
		{Name: "SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}},
		{Name: "GREETING", Value: "hi"},
		{Name: "HOST", Value: "127.0.0.1"}, // redefined: last value, first place
	}
	s := mustSpec(t, Params{Pod: pod, Container: &pod.Spec.Containers[0]})
	if diff := cmp.Diff([]string{"/bin/app", "--listen=0.0.0.0:$(PORT)", "--greeting=hi", "$(ADDR)", "$(UNDEFINED)", "$(SECRET)"}, s.Process.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"PATH=" + defaultPath, "HOST=127.0.0.1", "ADDR=0.0.0.0:$(PORT)", "PORT=8080", "GREETING=hi"}, s.Process.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if s.Process.Cwd != "/srv" {
		t.Errorf("cwd %q", s.Process.Cwd)
	}
	if s.Hostname != "web" {
		t.Errorf("hostname %q", s.Hostname)
	}
	want := map[string]string{
		AnnotationPodNamespace: "ns", AnnotationPodName: "web", AnnotationPodUID: "uid-1", AnnotationContainerName: "app",
	}
	if diff := cmp.Diff(want, s.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}

	pod.Spec.Containers[0].WorkingDir = ""
	pod.Spec.Hostname = "web-0"
	s = mustSpec(t, Params{Pod: pod, Container: &pod.Spec.Containers[0]})
	if s.Process.Cwd != "/" || s.Hostname != "web-0" {
		t.Errorf("cwd %q hostname %q, want / and web-0", s.Process.Cwd, s.Hostname)
	}
}

func TestHostname(t *testing.T) {
	long := strings.Repeat("a", 60) + "-.-bcd"
	for _, tc := range []struct{ name, hostname, want string }{
		{name: "short", want: "short"},
		{name: "pod", hostname: "host", want: "host"},
		{name: long, want: strings.Repeat("a", 60)},
		{name: "x", hostname: strings.Repeat("b", 70), want: strings.Repeat("b", 63)},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tc.name}, Spec: corev1.PodSpec{Hostname: tc.hostname}}
		if got := hostname(pod); got != tc.want {
			t.Errorf("hostname(name %q, hostname %q) = %q, want %q", tc.name, tc.hostname, got, tc.want)
		}
	}
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "alpha", "B": "", "C": "$(A)"}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	for _, tc := range []struct {
		in, want string
		missing  []string
	}{
		{in: "plain", want: "plain"},
		{in: "$(A)", want: "alpha"},
		{in: "x$(A)y$(A)", want: "xalphayalpha"},
		{in: "$(B)", want: ""},
		{in: "$(C)", want: "$(A)"}, // values are not expanded twice
		{in: "$$(A)", want: "$(A)"},
		{in: "$$$(A)", want: "$alpha"},
		{in: "$(Z)", want: "$(Z)", missing: []string{"Z"}},
		{in: "$(A", want: "$(A"},
		{in: "$A", want: "$A"},
		{in: "cost: 5$", want: "cost: 5$"},
		{in: "$()", want: "$()", missing: []string{""}},
	} {
		got, missing := expand(tc.in, lookup)
		if got != tc.want || !cmp.Equal(missing, tc.missing) {
			t.Errorf("expand(%q) = %q, %q; want %q, %q", tc.in, got, missing, tc.want, tc.missing)
		}
	}
}

func TestSpecRequiresPodAndContainer(t *testing.T) {
	if _, err := Spec(Params{Pod: testPod()}); err == nil {
		t.Errorf("no error without a container")
	}
	if _, err := Spec(Params{Container: &corev1.Container{}}); err == nil {
		t.Errorf("no error without a pod")
	}
}

// TestGoldenLinux compares one full spec, as config.json, with testdata/linux.json.
func TestGoldenLinux(t *testing.T) {
	pod := testPod()
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{
		RunAsUser: ptr.To(int64(1000)), RunAsGroup: ptr.To(int64(3000)), RunAsNonRoot: ptr.To(true),
		FSGroup: ptr.To(int64(2000)), SupplementalGroups: []int64{4000},
		Sysctls: []corev1.Sysctl{{Name: "net.ipv4.ip_unprivileged_port_start", Value: "80"}},
	}
	pod.Spec.Containers[0] = corev1.Container{
		Name: "app", Image: "app:1",
		Command:    []string{"/app"},
		Args:       []string{"--port=$(PORT)"},
		Env:        []corev1.EnvVar{{Name: "PORT", Value: "8080"}},
		WorkingDir: "/srv",
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE"}},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "token", MountPath: "/var/run/secrets/tokens", ReadOnly: true},
			{Name: "data", MountPath: "/srv/data", SubPath: "app"},
		},
	}
	s := mustSpec(t, Params{Pod: pod, Container: &pod.Spec.Containers[0], VolumeDirs: testDirs()})
	got, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	golden := filepath.Join("testdata", "linux.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("config.json differs from %s (-want +got):\n%s", golden, diff)
	}
}

// TestLinuxRuntimeDefaults checks what a runtime needs to run the spec as it is: namespaces,
// kernel filesystems, masked paths, devices, rlimits, resources and PATH.
func TestLinuxRuntimeDefaults(t *testing.T) {
	ns := func(types ...specs.LinuxNamespaceType) []specs.LinuxNamespace {
		var out []specs.LinuxNamespace
		for _, typ := range types {
			out = append(out, specs.LinuxNamespace{Type: typ})
		}
		return out
	}
	destinations := func(ms []specs.Mount) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.Destination+" "+m.Type+" "+strings.Join(m.Options, ","))
		}
		return out
	}
	standard := []string{
		"/proc proc nosuid,noexec,nodev",
		"/dev tmpfs nosuid,strictatime,mode=755,size=65536k",
		"/dev/pts devpts nosuid,noexec,newinstance,ptmxmode=0666,mode=0620,gid=5",
		"/dev/shm tmpfs nosuid,noexec,nodev,mode=1777,size=65536k",
		"/dev/mqueue mqueue nosuid,noexec,nodev",
		"/sys sysfs nosuid,noexec,nodev,ro",
		"/sys/fs/cgroup cgroup nosuid,noexec,nodev,relatime,ro",
	}
	for _, tc := range []struct {
		name       string
		pod        func(*corev1.Pod)
		namespaces []specs.LinuxNamespace
		hostname   string
		mounts     []string
		masked     bool
		devices    int // rules in the device cgroup; 1 is allow-all
	}{
		{
			name:       "own namespaces",
			namespaces: ns(specs.MountNamespace, specs.PIDNamespace, specs.IPCNamespace, specs.NetworkNamespace, specs.UTSNamespace),
			hostname:   "web", mounts: standard, masked: true, devices: len(defaultDevices),
		},
		{
			name:       "host PID",
			pod:        func(p *corev1.Pod) { p.Spec.HostPID = true },
			namespaces: ns(specs.MountNamespace, specs.IPCNamespace, specs.NetworkNamespace, specs.UTSNamespace),
			hostname:   "web", mounts: standard, masked: true, devices: len(defaultDevices),
		},
		{
			name:       "host IPC: the host's /dev/shm",
			pod:        func(p *corev1.Pod) { p.Spec.HostIPC = true },
			namespaces: ns(specs.MountNamespace, specs.PIDNamespace, specs.NetworkNamespace, specs.UTSNamespace),
			hostname:   "web",
			mounts:     slices.Concat(standard[:3], []string{"/dev/shm bind rbind,rw,rprivate"}, standard[4:]),
			masked:     true, devices: len(defaultDevices),
		},
		{
			name:       "host network: the host's UTS namespace and no hostname",
			pod:        func(p *corev1.Pod) { p.Spec.HostNetwork = true },
			namespaces: ns(specs.MountNamespace, specs.PIDNamespace, specs.IPCNamespace),
			mounts:     standard, masked: true, devices: len(defaultDevices),
		},
		{
			name: "privileged: /sys read-write, nothing masked, every device",
			pod: func(p *corev1.Pod) {
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
			},
			namespaces: ns(specs.MountNamespace, specs.PIDNamespace, specs.IPCNamespace, specs.NetworkNamespace, specs.UTSNamespace),
			hostname:   "web",
			mounts: slices.Concat(standard[:5], []string{
				"/sys sysfs nosuid,noexec,nodev,rw", "/sys/fs/cgroup cgroup nosuid,noexec,nodev,relatime,rw",
			}),
			devices: 1,
		},
		{
			name: "procMount Unmasked",
			pod: func(p *corev1.Pod) {
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{ProcMount: ptr.To(corev1.UnmaskedProcMount)}
			},
			namespaces: ns(specs.MountNamespace, specs.PIDNamespace, specs.IPCNamespace, specs.NetworkNamespace, specs.UTSNamespace),
			hostname:   "web", mounts: standard, devices: len(defaultDevices),
		},
		{
			name: "a volume at /dev/shm replaces the tmpfs",
			pod: func(p *corev1.Pod) {
				p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/dev/shm/"}}
			},
			namespaces: ns(specs.MountNamespace, specs.PIDNamespace, specs.IPCNamespace, specs.NetworkNamespace, specs.UTSNamespace),
			hostname:   "web",
			mounts:     slices.Concat(standard[:3], standard[4:], []string{"/dev/shm/ bind rbind,rw,rprivate"}),
			masked:     true, devices: len(defaultDevices),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod()
			if tc.pod != nil {
				tc.pod(pod)
			}
			s := mustSpec(t, Params{Pod: pod, Container: &pod.Spec.Containers[0], VolumeDirs: testDirs()})
			if s.Linux == nil {
				t.Fatal("no linux section")
			}
			if diff := cmp.Diff(tc.namespaces, s.Linux.Namespaces); diff != "" {
				t.Errorf("namespaces (-want +got):\n%s", diff)
			}
			if s.Hostname != tc.hostname {
				t.Errorf("hostname %q, want %q", s.Hostname, tc.hostname)
			}
			if diff := cmp.Diff(tc.mounts, destinations(s.Mounts)); diff != "" {
				t.Errorf("mounts (-want +got):\n%s", diff)
			}
			wantMasked, wantRO := []string(nil), []string(nil)
			if tc.masked {
				wantMasked = []string{"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
					"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
					"/sys/firmware", "/sys/devices/virtual/powercap"}
				wantRO = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
			}
			if !cmp.Equal(wantMasked, s.Linux.MaskedPaths) || !cmp.Equal(wantRO, s.Linux.ReadonlyPaths) {
				t.Errorf("masked %v read-only %v, want %v and %v", s.Linux.MaskedPaths, s.Linux.ReadonlyPaths, wantMasked, wantRO)
			}
			if s.Linux.Resources == nil || len(s.Linux.Resources.Devices) != tc.devices {
				t.Fatalf("device cgroup %+v, want %d rules", s.Linux.Resources, tc.devices)
			}
			if d := s.Linux.Resources.Devices[0]; d.Allow != (tc.devices == 1) || d.Access != "rwm" || d.Type != "" {
				t.Errorf("first device rule %+v", d)
			}
			if diff := cmp.Diff([]specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 1024, Soft: 1024}}, s.Process.Rlimits); diff != "" {
				t.Errorf("rlimits (-want +got):\n%s", diff)
			}
			if len(s.Process.Env) == 0 || s.Process.Env[0] != "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" {
				t.Errorf("env %v does not start with the default PATH", s.Process.Env)
			}
		})
	}
}

func TestPathFromEnvWins(t *testing.T) {
	pod := testPod()
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "PATH", Value: "/opt/bin"}}
	s := mustSpec(t, Params{Pod: pod, Container: &pod.Spec.Containers[0]})
	if diff := cmp.Diff([]string{"A=1", "PATH=/opt/bin"}, s.Process.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
}

func TestResources(t *testing.T) {
	u := func(v uint64) *uint64 { return &v }
	i := func(v int64) *int64 { return &v }
	rl := func(kv ...string) corev1.ResourceList {
		l := corev1.ResourceList{}
		for j := 0; j < len(kv); j += 2 {
			l[corev1.ResourceName(kv[j])] = resource.MustParse(kv[j+1])
		}
		return l
	}
	for _, tc := range []struct {
		name     string
		res      corev1.ResourceRequirements
		cpu      *specs.LinuxCPU
		memLimit *int64
	}{
		{name: "nothing: the least weight, no limits", cpu: &specs.LinuxCPU{Shares: u(2)}},
		{
			name: "requests and limits",
			res:  corev1.ResourceRequirements{Requests: rl("cpu", "250m", "memory", "64Mi"), Limits: rl("cpu", "1500m", "memory", "128Mi")},
			cpu:  &specs.LinuxCPU{Shares: u(256), Quota: i(150000), Period: u(100000)}, memLimit: i(128 << 20),
		},
		{
			name: "a limit alone is the request too",
			res:  corev1.ResourceRequirements{Limits: rl("cpu", "2")},
			cpu:  &specs.LinuxCPU{Shares: u(2048), Quota: i(200000), Period: u(100000)},
		},
		{
			name: "tiny request and limit: the kernel's least",
			res:  corev1.ResourceRequirements{Requests: rl("cpu", "1m"), Limits: rl("cpu", "1m")},
			cpu:  &specs.LinuxCPU{Shares: u(2), Quota: i(1000), Period: u(100000)},
		},
		{
			name: "huge request and limit: capped, not wrapped around",
			res:  corev1.ResourceRequirements{Requests: rl("cpu", "9e15"), Limits: rl("cpu", "9e15", "memory", "1Ei")},
			cpu:  &specs.LinuxCPU{Shares: u(262144), Quota: i(17592186000000), Period: u(100000)}, memLimit: i(1 << 60),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod()
			pod.Spec.Containers[0].Resources = tc.res
			s := mustSpec(t, Params{Pod: pod, Container: &pod.Spec.Containers[0]})
			if diff := cmp.Diff(tc.cpu, s.Linux.Resources.CPU); diff != "" {
				t.Errorf("cpu (-want +got):\n%s", diff)
			}
			var got *int64
			if s.Linux.Resources.Memory != nil {
				got = s.Linux.Resources.Memory.Limit
			}
			if diff := cmp.Diff(tc.memLimit, got); diff != "" {
				t.Errorf("memory limit (-want +got):\n%s", diff)
			}
		})
	}
}

// fakeEnv resolves valueFrom by the referenced key, and envFrom by object name.
type fakeEnv struct {
	values  map[string]string // "secret/name/key", "configMap/name/key", "field/path"
	objects map[string]map[string]string
}

func (f fakeEnv) Value(src *corev1.EnvVarSource) (string, bool, error) {
	var key string
	optional := false
	switch {
	case src.SecretKeyRef != nil:
		key, optional = "secret/"+src.SecretKeyRef.Name+"/"+src.SecretKeyRef.Key, ptr.Deref(src.SecretKeyRef.Optional, false)
	case src.ConfigMapKeyRef != nil:
		key, optional = "configMap/"+src.ConfigMapKeyRef.Name+"/"+src.ConfigMapKeyRef.Key, ptr.Deref(src.ConfigMapKeyRef.Optional, false)
	case src.FieldRef != nil:
		key = "field/" + src.FieldRef.FieldPath
	}
	v, ok := f.values[key]
	if !ok && !optional {
		return "", false, fmt.Errorf("%s is missing", key)
	}
	return v, ok, nil
}

func (f fakeEnv) Object(src *corev1.EnvFromSource) (map[string]string, bool, error) {
	name := ""
	if src.SecretRef != nil {
		name = src.SecretRef.Name
	}
	if src.ConfigMapRef != nil {
		name = src.ConfigMapRef.Name
	}
	data, ok := f.objects[name]
	return data, ok, nil
}

func TestEnvFromTheAPI(t *testing.T) {
	src := fakeEnv{
		values: map[string]string{"secret/db/password": "s3cret", "configMap/cfg/mode": "$(HOST)", "field/metadata.name": "web"},
		objects: map[string]map[string]string{
			"shared": {"B": "from-shared", "A": "first"},
		},
	}
	secretKey := func(name, key string, optional bool) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: &optional}}
	}
	for _, tc := range []struct {
		name    string
		c       corev1.Container
		want    []string
		args    []string
		wantErr string
	}{
		{
			name: "valueFrom and envFrom in the kubelet's order, values not expanded",
			c: corev1.Container{
				EnvFrom: []corev1.EnvFromSource{{Prefix: "S_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shared"}}}},
				Env: []corev1.EnvVar{
					{Name: "HOST", Value: "h"},
					{Name: "PASSWORD", ValueFrom: secretKey("db", "password", false)},
					{Name: "MODE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "mode"}}},
					{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "URL", Value: "db://$(POD):$(PASSWORD)"},
					{Name: "S_B", Value: "overridden"},
				},
				Args: []string{"$(POD)", "$(MODE)"},
			},
			want: []string{"PATH=" + defaultPath, "S_A=first", "S_B=overridden", "HOST=h", "PASSWORD=s3cret", "MODE=$(HOST)", "POD=web", "URL=db://web:s3cret"},
			args: []string{"web", "$(HOST)"},
		},
		{
			name: "optional and missing: left out",
			c: corev1.Container{
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "ghost"}}}},
				Env:     []corev1.EnvVar{{Name: "X", ValueFrom: secretKey("db", "nope", true)}},
			},
			want: []string{"PATH=" + defaultPath},
		},
		{
			name:    "required and missing: no spec",
			c:       corev1.Container{Env: []corev1.EnvVar{{Name: "X", ValueFrom: secretKey("db", "nope", false)}}},
			wantErr: "env[0] (X): secret/db/nope is missing",
		},
		{
			name: "a key that cannot be a variable name is refused, not cut",
			c: corev1.Container{
				EnvFrom: []corev1.EnvFromSource{{Prefix: "A=", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shared"}}}},
			},
			wantErr: `invalid environment variable name "A=A"`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod()
			tc.c.Name = "app"
			pod.Spec.Containers[0] = tc.c
			s, err := Spec(Params{Pod: pod, Container: &pod.Spec.Containers[0], Env: src})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, s.Process.Env); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
			if tc.args != nil && !cmp.Equal(tc.args, s.Process.Args) {
				t.Errorf("args %q, want %q", s.Process.Args, tc.args)
			}
		})
	}
}
