package volumes

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/idplane/idplane/internal/agent/atomicwriter"
)

const ns = "team"

// bytesEqual compares file contents as wholes; element by element a 1 MiB secret takes seconds.
var bytesEqual = cmp.Comparer(bytes.Equal)

// fakeSources serves objects from maps and records which tokens and bundles were asked for.
type fakeSources struct {
	secrets    map[string]*corev1.Secret
	configMaps map[string]*corev1.ConfigMap
	bundles    map[string][]byte // by name or signer name
	errs       map[string]error  // by "secret/<name>", "configmap/<name>", "token", "bundle"
	calls      []string
}

func (f *fakeSources) Secret(_ context.Context, namespace, name string) (*corev1.Secret, error) {
	f.calls = append(f.calls, "secret/"+name)
	if err := f.errs["secret/"+name]; err != nil {
		return nil, err
	}
	if s, ok := f.secrets[name]; ok && namespace == ns {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func (f *fakeSources) ConfigMap(_ context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	f.calls = append(f.calls, "configmap/"+name)
	if err := f.errs["configmap/"+name]; err != nil {
		return nil, err
	}
	if c, ok := f.configMaps[name]; ok && namespace == ns {
		return c, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (f *fakeSources) ServiceAccountToken(_ context.Context, pod *corev1.Pod, s *corev1.ServiceAccountTokenProjection) ([]byte, error) {
	f.calls = append(f.calls, "token/"+s.Audience)
	if err := f.errs["token"]; err != nil {
		return nil, err
	}
	return []byte("token of " + pod.Spec.ServiceAccountName + " for " + s.Audience), nil
}

func (f *fakeSources) ClusterTrustBundles(_ context.Context, s *corev1.ClusterTrustBundleProjection) ([]byte, error) {
	key := ""
	if s.Name != nil {
		key = *s.Name
	} else if s.SignerName != nil {
		key = *s.SignerName
	}
	f.calls = append(f.calls, "bundle/"+key)
	if err := f.errs["bundle"]; err != nil {
		return nil, err
	}
	if pem, ok := f.bundles[key]; ok {
		return pem, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: "certificates.k8s.io", Resource: "clustertrustbundles"}, key)
}

// allocatableSources also knows the node's allocatable resources.
type allocatableSources struct {
	*fakeSources
	alloc corev1.ResourceList
	err   error
}

func (a *allocatableSources) NodeAllocatable(context.Context) (corev1.ResourceList, error) {
	return a.alloc, a.err
}

func newSources() *fakeSources {
	return &fakeSources{
		secrets: map[string]*corev1.Secret{
			"creds": {Data: map[string][]byte{"user": []byte("admin"), "pass": []byte("s3cr3t")}},
			"tls":   {Data: map[string][]byte{"tls.crt": []byte("CRT"), "tls.key": []byte("KEY")}},
		},
		configMaps: map[string]*corev1.ConfigMap{
			"settings": {Data: map[string]string{"a.conf": "A"}, BinaryData: map[string][]byte{"blob": {0, 1, 2}}},
			"ca":       {Data: map[string]string{"ca.crt": "CA PEM"}},
		},
		bundles: map[string][]byte{
			"root-bundle":        []byte("BUNDLE PEM"),
			"example.com/signer": []byte("SIGNER PEM"),
		},
		errs: map[string]error{},
	}
}

func basePod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: ns, UID: "1234-abcd",
			Labels:      map[string]string{"app": "web", "tier": "front"},
			Annotations: map[string]string{"note": "say \"hi\"\nthen\tleave", "ünï": "cödé"},
		},
		Spec: corev1.PodSpec{
			NodeName:           "node-1",
			ServiceAccountName: "builder",
			Containers: []corev1.Container{{
				Name: "app",
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
					Limits: corev1.ResourceList{
						corev1.ResourceMemory:                resource.MustParse("100M"),
						corev1.ResourceName("hugepages-2Mi"): resource.MustParse("4Mi"),
					},
				},
			}},
			InitContainers: []corev1.Container{{
				Name:      "setup",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}},
			}},
		},
		Status: corev1.PodStatus{
			PodIP: "10.0.0.5", PodIPs: []corev1.PodIP{{IP: "10.0.0.5"}, {IP: "fd00::5"}},
			HostIP: "192.168.1.2", HostIPs: []corev1.HostIP{{IP: "192.168.1.2"}, {IP: "fd00::2"}},
		},
	}
}

func i32(v int32) *int32   { return &v }
func i64(v int64) *int64   { return &v }
func str(v string) *string { return &v }
func yes() *bool           { b := true; return &b }

// file is a FileProjection written short in expectations.
func file(data string, mode fs.FileMode) atomicwriter.FileProjection {
	return atomicwriter.FileProjection{Data: []byte(data), Mode: mode}
}

type outcome int

const (
	ok outcome = iota
	notReady
	failure
)

type buildCase struct {
	name    string
	pod     func(*corev1.Pod)
	src     func(*fakeSources) Sources
	volume  corev1.VolumeSource
	want    map[string]atomicwriter.FileProjection
	outcome outcome
	errHas  string
}

func runBuildCases(t *testing.T, cases []buildCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := basePod()
			if tc.pod != nil {
				tc.pod(pod)
			}
			fake := newSources()
			var src Sources = fake
			if tc.src != nil {
				src = tc.src(fake)
			}
			v := &corev1.Volume{Name: "vol", VolumeSource: tc.volume}
			got, err := Build(context.Background(), pod, v, src)
			switch tc.outcome {
			case ok:
				if err != nil {
					t.Fatalf("Build: %v", err)
				}
				if tc.want == nil {
					tc.want = map[string]atomicwriter.FileProjection{}
				}
				if diff := cmp.Diff(tc.want, got, bytesEqual); diff != "" {
					t.Errorf("files (-want +got):\n%s", diff)
				}
			case notReady, failure:
				if err == nil {
					t.Fatalf("Build = %v, want an error", got)
				}
				if IsNotReady(err) != (tc.outcome == notReady) {
					t.Errorf("IsNotReady(%q) = %v", err, IsNotReady(err))
				}
				if !strings.Contains(err.Error(), tc.errHas) || !strings.Contains(err.Error(), `volume "vol" of pod team/web`) {
					t.Errorf("error %q does not say %q and name the volume", err, tc.errHas)
				}
			}
		})
	}
}

func TestSupported(t *testing.T) {
	for _, tc := range []struct {
		v    *corev1.Volume
		want bool
	}{
		{nil, false},
		{&corev1.Volume{VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}}, true},
		{&corev1.Volume{VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}, true},
		{&corev1.Volume{VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{}}}, true},
		{&corev1.Volume{VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}}, true},
		{&corev1.Volume{VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}, false},
		{&corev1.Volume{VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}, false},
		{&corev1.Volume{}, false},
	} {
		if got := Supported(tc.v); got != tc.want {
			t.Errorf("Supported(%+v) = %v", tc.v, got)
		}
	}
}

func TestUnsupportedVolumes(t *testing.T) {
	runBuildCases(t, []buildCase{
		{name: "emptyDir", volume: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}, outcome: failure, errHas: "exactly one"},
		{name: "two kinds", volume: corev1.VolumeSource{
			Secret:    &corev1.SecretVolumeSource{SecretName: "creds"},
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "ca"}},
		}, outcome: failure, errHas: "has 2"},
	})
}

func TestSecretVolume(t *testing.T) {
	secret := func(s corev1.SecretVolumeSource) corev1.VolumeSource {
		if s.SecretName == "" {
			s.SecretName = "creds"
		}
		return corev1.VolumeSource{Secret: &s}
	}
	runBuildCases(t, []buildCase{
		{name: "all keys, default mode", volume: secret(corev1.SecretVolumeSource{}),
			want: map[string]atomicwriter.FileProjection{"user": file("admin", 0o644), "pass": file("s3cr3t", 0o644)}},
		{name: "defaultMode", volume: secret(corev1.SecretVolumeSource{DefaultMode: i32(0o400)}),
			want: map[string]atomicwriter.FileProjection{"user": file("admin", 0o400), "pass": file("s3cr3t", 0o400)}},
		{name: "items select keys, set paths and modes", volume: secret(corev1.SecretVolumeSource{
			DefaultMode: i32(0o440),
			Items:       []corev1.KeyToPath{{Key: "pass", Path: "db/password", Mode: i32(0o400)}, {Key: "user", Path: "username"}},
		}), want: map[string]atomicwriter.FileProjection{"db/password": file("s3cr3t", 0o400), "username": file("admin", 0o440)}},
		{name: "item path is cleaned", volume: secret(corev1.SecretVolumeSource{Items: []corev1.KeyToPath{{Key: "pass", Path: "./db//password"}}}),
			want: map[string]atomicwriter.FileProjection{"db/password": file("s3cr3t", 0o644)}},
		{name: "item key missing", volume: secret(corev1.SecretVolumeSource{Items: []corev1.KeyToPath{{Key: "token", Path: "t"}}}),
			outcome: notReady, errHas: `no key "token"`},
		{name: "item key missing, optional", volume: secret(corev1.SecretVolumeSource{Optional: yes(), Items: []corev1.KeyToPath{{Key: "token", Path: "t"}, {Key: "user", Path: "u"}}}),
			want: map[string]atomicwriter.FileProjection{"u": file("admin", 0o644)}},
		{name: "secret missing", volume: secret(corev1.SecretVolumeSource{SecretName: "absent"}), outcome: notReady, errHas: `secret "absent"`},
		{name: "secret missing, optional", volume: secret(corev1.SecretVolumeSource{SecretName: "absent", Optional: yes(), Items: []corev1.KeyToPath{{Key: "k", Path: "k"}}})},
		{name: "secret unreadable", volume: secret(corev1.SecretVolumeSource{}), outcome: notReady, errHas: "forbidden",
			src: func(f *fakeSources) Sources {
				f.errs["secret/creds"] = apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "creds", errors.New("no relationship"))
				return f
			}},
		{name: "unreadable even if optional", volume: secret(corev1.SecretVolumeSource{Optional: yes()}), outcome: notReady, errHas: "timeout",
			src: func(f *fakeSources) Sources {
				f.errs["secret/creds"] = apierrors.NewTimeoutError("timeout", 1)
				return f
			}},
		{name: "no name", volume: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}, outcome: failure, errHas: "no name"},
		{name: "too large", volume: secret(corev1.SecretVolumeSource{SecretName: "big"}), outcome: failure, errHas: "more than the API's limit",
			src: func(f *fakeSources) Sources {
				f.secrets["big"] = &corev1.Secret{Data: map[string][]byte{"a": make([]byte, corev1.MaxSecretSize/2+1), "b": make([]byte, corev1.MaxSecretSize/2)}}
				return f
			}},
		{name: "exactly the limit", volume: secret(corev1.SecretVolumeSource{SecretName: "big"}),
			src: func(f *fakeSources) Sources {
				f.secrets["big"] = &corev1.Secret{Data: map[string][]byte{"a": make([]byte, corev1.MaxSecretSize)}}
				return f
			},
			want: map[string]atomicwriter.FileProjection{"a": {Data: make([]byte, corev1.MaxSecretSize), Mode: 0o644}}},
		{name: "defaultMode too large", volume: secret(corev1.SecretVolumeSource{DefaultMode: i32(0o4755)}), outcome: failure, errHas: "defaultMode"},
		{name: "item mode negative", volume: secret(corev1.SecretVolumeSource{Items: []corev1.KeyToPath{{Key: "user", Path: "u", Mode: i32(-1)}}}), outcome: failure, errHas: "mode"},
		{name: "two items at one path", volume: secret(corev1.SecretVolumeSource{Items: []corev1.KeyToPath{{Key: "user", Path: "x"}, {Key: "pass", Path: "x"}}}),
			outcome: failure, errHas: "already written"},
		{name: "file is another's directory", volume: secret(corev1.SecretVolumeSource{Items: []corev1.KeyToPath{{Key: "user", Path: "x"}, {Key: "pass", Path: "x/y"}}}),
			outcome: failure, errHas: "also the directory"},
		{name: "hostile key without items", volume: secret(corev1.SecretVolumeSource{SecretName: "evil"}), outcome: failure, errHas: "reserved",
			src: func(f *fakeSources) Sources {
				f.secrets["evil"] = &corev1.Secret{Data: map[string][]byte{"..data": []byte("x")}}
				return f
			}},
		{name: "failure wins over not ready", volume: secret(corev1.SecretVolumeSource{Items: []corev1.KeyToPath{{Key: "missing", Path: "m"}, {Key: "user", Path: "../escape"}}}),
			outcome: failure, errHas: "'..'"},
	})
}

func TestHostileItemPaths(t *testing.T) {
	for _, p := range []string{"", "/etc/passwd", "..", "../x", "a/../../x", "a/..", "..data", "..data/x", "..2026_01_01_00_00_00.000000000", "..x", ".", "a\x00b"} {
		runBuildCases(t, []buildCase{
			{name: "secret " + p, outcome: failure, volume: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: "creds", Items: []corev1.KeyToPath{{Key: "user", Path: p}}}}},
			{name: "downwardAPI " + p, outcome: failure, volume: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
				Items: []corev1.DownwardAPIVolumeFile{{Path: p, FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
			{name: "token " + p, outcome: failure, volume: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: p}}}}},
				src: func(f *fakeSources) Sources {
					f.errs["token"] = errors.New("a token was requested for a bad path")
					return f
				}},
			{name: "bundle " + p, outcome: failure, volume: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Name: str("root-bundle"), Path: p}}}}}},
		})
	}
}

func TestConfigMapVolume(t *testing.T) {
	cm := func(c corev1.ConfigMapVolumeSource) corev1.VolumeSource {
		if c.Name == "" {
			c.Name = "settings"
		}
		return corev1.VolumeSource{ConfigMap: &c}
	}
	runBuildCases(t, []buildCase{
		{name: "data and binaryData", volume: cm(corev1.ConfigMapVolumeSource{}),
			want: map[string]atomicwriter.FileProjection{"a.conf": file("A", 0o644), "blob": file("\x00\x01\x02", 0o644)}},
		{name: "items", volume: cm(corev1.ConfigMapVolumeSource{DefaultMode: i32(0o600), Items: []corev1.KeyToPath{{Key: "blob", Path: "bin/blob", Mode: i32(0o755)}}}),
			want: map[string]atomicwriter.FileProjection{"bin/blob": file("\x00\x01\x02", 0o755)}},
		{name: "missing", volume: cm(corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}}), outcome: notReady, errHas: `configMap "absent"`},
		{name: "missing, optional", volume: cm(corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: yes()})},
		{name: "item key missing", volume: cm(corev1.ConfigMapVolumeSource{Items: []corev1.KeyToPath{{Key: "nope", Path: "n"}}}), outcome: notReady, errHas: `no key "nope"`},
		{name: "key in data and binaryData", volume: cm(corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "dup"}}), outcome: failure, errHas: "both data and binaryData",
			src: func(f *fakeSources) Sources {
				f.configMaps["dup"] = &corev1.ConfigMap{Data: map[string]string{"k": "a"}, BinaryData: map[string][]byte{"k": []byte("b")}}
				return f
			}},
		{name: "too large across data and binaryData", volume: cm(corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "big"}}), outcome: failure, errHas: "more than the API's limit",
			src: func(f *fakeSources) Sources {
				f.configMaps["big"] = &corev1.ConfigMap{Data: map[string]string{"k": strings.Repeat("x", corev1.MaxSecretSize)}, BinaryData: map[string][]byte{"b": {1}}}
				return f
			}},
	})
}

func TestFormatMap(t *testing.T) {
	for _, tc := range []struct {
		in   map[string]string
		want string
	}{
		{nil, ""},
		{map[string]string{"a": "1"}, `a="1"`},
		{map[string]string{"b": "2", "a": "1", "c": ""}, "a=\"1\"\nb=\"2\"\nc=\"\""},
		{map[string]string{"q": `say "hi"`, "nl": "x\ny", "tab": "\t", "bs": `a\b`}, "bs=\"a\\\\b\"\nnl=\"x\\ny\"\nq=\"say \\\"hi\\\"\"\ntab=\"\\t\""},
		{map[string]string{"u": "cödé", "ctl": "\x01\u2028"}, "ctl=\"\\x01\\u2028\"\nu=\"cödé\""},
	} {
		if got := formatMap(tc.in); got != tc.want {
			t.Errorf("formatMap(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestDownwardAPIVolume(t *testing.T) {
	field := func(p string) *corev1.ObjectFieldSelector { return &corev1.ObjectFieldSelector{FieldPath: p} }
	res := func(container, r, divisor string) *corev1.ResourceFieldSelector {
		s := &corev1.ResourceFieldSelector{ContainerName: container, Resource: r}
		if divisor != "" {
			s.Divisor = resource.MustParse(divisor)
		}
		return s
	}
	dapi := func(items ...corev1.DownwardAPIVolumeFile) corev1.VolumeSource {
		return corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: items}}
	}
	withAlloc := func(alloc corev1.ResourceList, err error) func(*fakeSources) Sources {
		return func(f *fakeSources) Sources { return &allocatableSources{fakeSources: f, alloc: alloc, err: err} }
	}
	runBuildCases(t, []buildCase{
		{name: "pod fields", volume: dapi(
			corev1.DownwardAPIVolumeFile{Path: "name", FieldRef: field("metadata.name")},
			corev1.DownwardAPIVolumeFile{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}},
			corev1.DownwardAPIVolumeFile{Path: "uid", FieldRef: field("metadata.uid")},
			corev1.DownwardAPIVolumeFile{Path: "meta/labels", FieldRef: field("metadata.labels")},
			corev1.DownwardAPIVolumeFile{Path: "meta/annotations", FieldRef: field("metadata.annotations"), Mode: i32(0o600)},
			corev1.DownwardAPIVolumeFile{Path: "app", FieldRef: field("metadata.labels['app']")},
			corev1.DownwardAPIVolumeFile{Path: "nolabel", FieldRef: field("metadata.labels['absent']")},
			corev1.DownwardAPIVolumeFile{Path: "note", FieldRef: field("metadata.annotations['note']")},
			corev1.DownwardAPIVolumeFile{Path: "node", FieldRef: field("spec.nodeName")},
			corev1.DownwardAPIVolumeFile{Path: "sa", FieldRef: field("spec.serviceAccountName")},
			corev1.DownwardAPIVolumeFile{Path: "ip/pod", FieldRef: field("status.podIP")},
			corev1.DownwardAPIVolumeFile{Path: "ip/pods", FieldRef: field("status.podIPs")},
			corev1.DownwardAPIVolumeFile{Path: "ip/host", FieldRef: field("status.hostIP")},
			corev1.DownwardAPIVolumeFile{Path: "ip/hosts", FieldRef: field("status.hostIPs")},
		), want: map[string]atomicwriter.FileProjection{
			"name":             file("web", 0o644),
			"namespace":        file("team", 0o644),
			"uid":              file("1234-abcd", 0o644),
			"meta/labels":      file("app=\"web\"\ntier=\"front\"", 0o644),
			"meta/annotations": file("note=\"say \\\"hi\\\"\\nthen\\tleave\"\nünï=\"cödé\"", 0o600),
			"app":              file("web", 0o644),
			"nolabel":          file("", 0o644),
			"note":             file("say \"hi\"\nthen\tleave", 0o644),
			"node":             file("node-1", 0o644),
			"sa":               file("builder", 0o644),
			"ip/pod":           file("10.0.0.5", 0o644),
			"ip/pods":          file("10.0.0.5,fd00::5", 0o644),
			"ip/host":          file("192.168.1.2", 0o644),
			"ip/hosts":         file("192.168.1.2,fd00::2", 0o644),
		}},
		{name: "empty labels", pod: func(p *corev1.Pod) { p.Labels = nil }, volume: dapi(corev1.DownwardAPIVolumeFile{Path: "l", FieldRef: field("metadata.labels")}),
			want: map[string]atomicwriter.FileProjection{"l": file("", 0o644)}},
		{name: "unsupported field", volume: dapi(corev1.DownwardAPIVolumeFile{Path: "x", FieldRef: field("status.phase")}), outcome: failure, errHas: `"status.phase" is not supported`},
		{name: "container field", volume: dapi(corev1.DownwardAPIVolumeFile{Path: "x", FieldRef: field("spec.containers[0].image")}), outcome: failure, errHas: "not supported"},
		{name: "subscript on a non-map", volume: dapi(corev1.DownwardAPIVolumeFile{Path: "x", FieldRef: field("metadata.name['a']")}), outcome: failure, errHas: "subscript"},
		{name: "invalid label key", volume: dapi(corev1.DownwardAPIVolumeFile{Path: "x", FieldRef: field("metadata.labels['bad key!']")}), outcome: failure, errHas: "invalid key"},
		{name: "other apiVersion", volume: dapi(corev1.DownwardAPIVolumeFile{Path: "x", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v2", FieldPath: "metadata.name"}}), outcome: failure, errHas: "apiVersion"},
		{name: "neither ref", volume: dapi(corev1.DownwardAPIVolumeFile{Path: "x"}), outcome: failure, errHas: "neither"},
		{name: "both refs", volume: dapi(corev1.DownwardAPIVolumeFile{Path: "x", FieldRef: field("metadata.name"), ResourceFieldRef: res("app", "requests.cpu", "")}), outcome: failure, errHas: "both"},
		{name: "item mode", volume: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{DefaultMode: i32(0o444), Items: []corev1.DownwardAPIVolumeFile{
			{Path: "a", FieldRef: field("metadata.name")}, {Path: "b", FieldRef: field("metadata.name"), Mode: i32(0o400)}}}},
			want: map[string]atomicwriter.FileProjection{"a": file("web", 0o444), "b": file("web", 0o400)}},
		{name: "resources", volume: dapi(
			corev1.DownwardAPIVolumeFile{Path: "cpu-req", ResourceFieldRef: res("app", "requests.cpu", "")},
			corev1.DownwardAPIVolumeFile{Path: "cpu-req-m", ResourceFieldRef: res("app", "requests.cpu", "1m")},
			corev1.DownwardAPIVolumeFile{Path: "mem-req-mi", ResourceFieldRef: res("app", "requests.memory", "1Mi")},
			corev1.DownwardAPIVolumeFile{Path: "mem-lim-mi", ResourceFieldRef: res("app", "limits.memory", "1Mi")},
			corev1.DownwardAPIVolumeFile{Path: "mem-lim", ResourceFieldRef: res("app", "limits.memory", "")},
			corev1.DownwardAPIVolumeFile{Path: "huge", ResourceFieldRef: res("app", "limits.hugepages-2Mi", "1Mi")},
			corev1.DownwardAPIVolumeFile{Path: "huge-req", ResourceFieldRef: res("app", "requests.hugepages-2Mi", "")},
			corev1.DownwardAPIVolumeFile{Path: "eph-req", ResourceFieldRef: res("app", "requests.ephemeral-storage", "")},
			corev1.DownwardAPIVolumeFile{Path: "init-cpu", ResourceFieldRef: res("setup", "limits.cpu", "")},
		), want: map[string]atomicwriter.FileProjection{
			"cpu-req":    file("1", 0o644),
			"cpu-req-m":  file("250", 0o644),
			"mem-req-mi": file("64", 0o644),
			"mem-lim-mi": file("96", 0o644), // 100M = 95.37Mi, rounded up
			"mem-lim":    file("100000000", 0o644),
			"huge":       file("4", 0o644),
			"huge-req":   file("0", 0o644),
			"eph-req":    file("0", 0o644),
			"init-cpu":   file("2", 0o644),
		}},
		{name: "unset limit from node allocatable", src: withAlloc(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceEphemeralStorage: resource.MustParse("10Gi")}, nil),
			volume: dapi(
				corev1.DownwardAPIVolumeFile{Path: "cpu", ResourceFieldRef: res("app", "limits.cpu", "1m")},
				corev1.DownwardAPIVolumeFile{Path: "eph", ResourceFieldRef: res("app", "limits.ephemeral-storage", "1Gi")},
				corev1.DownwardAPIVolumeFile{Path: "mem", ResourceFieldRef: res("app", "limits.memory", "")},
			), want: map[string]atomicwriter.FileProjection{"cpu": file("4000", 0o644), "eph": file("10", 0o644), "mem": file("100000000", 0o644)}},
		{name: "unset limit, allocatable unknown", volume: dapi(corev1.DownwardAPIVolumeFile{Path: "cpu", ResourceFieldRef: res("app", "limits.cpu", "")}),
			outcome: failure, errHas: "allocatable resources are not known"},
		{name: "unset limit, allocatable unreadable", src: withAlloc(nil, errors.New("node not registered")),
			volume: dapi(corev1.DownwardAPIVolumeFile{Path: "cpu", ResourceFieldRef: res("app", "limits.cpu", "")}), outcome: notReady, errHas: "node not registered"},
		{name: "unknown container", volume: dapi(corev1.DownwardAPIVolumeFile{Path: "x", ResourceFieldRef: res("sidecar", "requests.cpu", "")}), outcome: failure, errHas: `no container "sidecar"`},
		{name: "no container name", volume: dapi(corev1.DownwardAPIVolumeFile{Path: "x", ResourceFieldRef: res("", "requests.cpu", "")}), outcome: failure, errHas: "containerName"},
		{name: "extended resource", volume: dapi(corev1.DownwardAPIVolumeFile{Path: "x", ResourceFieldRef: res("app", "limits.example.com/gpu", "")}), outcome: failure, errHas: "not supported"},
		{name: "bad resource kind", volume: dapi(corev1.DownwardAPIVolumeFile{Path: "x", ResourceFieldRef: res("app", "usage.cpu", "")}), outcome: failure, errHas: "requests. or limits."},
		{name: "negative divisor", volume: dapi(corev1.DownwardAPIVolumeFile{Path: "x", ResourceFieldRef: res("app", "requests.cpu", "-1")}), outcome: failure, errHas: "negative"},
	})
}

func TestCeilRatio(t *testing.T) {
	for _, tc := range []struct{ q, d, want string }{
		{"1500m", "1", "2"},
		{"250m", "1m", "250"},
		{"250m", "1", "1"},
		{"1Gi", "1Mi", "1024"},
		{"1Gi", "1G", "2"},
		{"1", "1Ki", "1"},
		{"0", "1", "0"},
		{"-3", "1", "0"},
		{"9223372036854775807", "1", "9223372036854775807"},
		{"9223372036854775808", "1", "9223372036854775807"},
		{"1e30", "1", "9223372036854775807"},
		{"1e1000000", "1m", "9223372036854775807"},
		{"1", "1e30", "1"},
		{"1m", "1e1000000", "1"},
		{"7", "2", "4"},
		{"1.000000001", "1", "2"},
	} {
		q, d := resource.MustParse(tc.q), resource.MustParse(tc.d)
		if got := ceilRatio(&q, &d); got != tc.want {
			t.Errorf("ceilRatio(%s, %s) = %s, want %s", tc.q, tc.d, got, tc.want)
		}
	}
}

func TestProjectedVolume(t *testing.T) {
	proj := func(defaultMode *int32, sources ...corev1.VolumeProjection) corev1.VolumeSource {
		return corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: defaultMode, Sources: sources}}
	}
	tokenSrc := func(path, audience string) corev1.VolumeProjection {
		return corev1.VolumeProjection{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: path, Audience: audience}}
	}
	secretSrc := func(name string, optional bool, items ...corev1.KeyToPath) corev1.VolumeProjection {
		s := &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Items: items}
		if optional {
			s.Optional = yes()
		}
		return corev1.VolumeProjection{Secret: s}
	}
	cmSrc := func(name string, items ...corev1.KeyToPath) corev1.VolumeProjection {
		return corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Items: items}}
	}
	nsSrc := corev1.VolumeProjection{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
		{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}}
	bundle := func(b corev1.ClusterTrustBundleProjection) corev1.VolumeProjection {
		return corev1.VolumeProjection{ClusterTrustBundle: &b}
	}
	runBuildCases(t, []buildCase{
		{name: "the service-account volume", volume: proj(nil, tokenSrc("token", "api"), cmSrc("ca", corev1.KeyToPath{Key: "ca.crt", Path: "ca.crt"}), nsSrc),
			want: map[string]atomicwriter.FileProjection{
				"token":     file("token of builder for api", 0o644),
				"ca.crt":    file("CA PEM", 0o644),
				"namespace": file("team", 0o644),
			}},
		{name: "sources merged in order with defaultMode", volume: proj(i32(0o440), secretSrc("tls", false), tokenSrc("vault/token", "vault"), tokenSrc("istio/token", "ca.istio.io"),
			bundle(corev1.ClusterTrustBundleProjection{Name: str("root-bundle"), Path: "bundles/root.pem"}),
			bundle(corev1.ClusterTrustBundleProjection{SignerName: str("example.com/signer"), LabelSelector: &metav1.LabelSelector{}, Path: "bundles/signer.pem"})),
			want: map[string]atomicwriter.FileProjection{
				"tls.crt":            file("CRT", 0o440),
				"tls.key":            file("KEY", 0o440),
				"vault/token":        file("token of builder for vault", 0o440),
				"istio/token":        file("token of builder for ca.istio.io", 0o440),
				"bundles/root.pem":   file("BUNDLE PEM", 0o440),
				"bundles/signer.pem": file("SIGNER PEM", 0o440),
			}},
		{name: "optional missing secret skipped", volume: proj(nil, secretSrc("absent", true, corev1.KeyToPath{Key: "k", Path: "k"}), nsSrc),
			want: map[string]atomicwriter.FileProjection{"namespace": file("team", 0o644)}},
		{name: "missing secret", volume: proj(nil, secretSrc("absent", false), nsSrc), outcome: notReady, errHas: `source 0: secret "absent"`},
		{name: "not-ready error keeps NotFound", volume: proj(nil, cmSrc("absent")), outcome: notReady, errHas: "not found"},
		{name: "later source collides with earlier", volume: proj(nil, secretSrc("creds", false), cmSrc("settings", corev1.KeyToPath{Key: "a.conf", Path: "user"})),
			outcome: failure, errHas: `path "user" is already written by source 0: secret "creds" key "user"`},
		{name: "token collides with downward API", volume: proj(nil, nsSrc, tokenSrc("namespace", "")), outcome: failure, errHas: "already written"},
		{name: "token path is the directory of another file", volume: proj(nil, tokenSrc("token", ""), secretSrc("creds", false, corev1.KeyToPath{Key: "user", Path: "token/user"})),
			outcome: failure, errHas: "also the directory"},
		{name: "token unavailable", volume: proj(nil, tokenSrc("token", "api")), outcome: notReady, errHas: "service account missing",
			src: func(f *fakeSources) Sources { f.errs["token"] = errors.New("service account missing"); return f }},
		{name: "bundle missing", volume: proj(nil, bundle(corev1.ClusterTrustBundleProjection{Name: str("absent"), Path: "b.pem"})), outcome: notReady, errHas: "absent"},
		{name: "bundle missing, optional", volume: proj(nil, bundle(corev1.ClusterTrustBundleProjection{SignerName: str("none.example/x"), Optional: yes(), Path: "b.pem"})),
			want: map[string]atomicwriter.FileProjection{"b.pem": file("", 0o644)}},
		{name: "bundle by name and signer", volume: proj(nil, bundle(corev1.ClusterTrustBundleProjection{Name: str("a"), SignerName: str("b"), Path: "b.pem"})), outcome: failure, errHas: "exactly one of name and signerName"},
		{name: "bundle by nothing", volume: proj(nil, bundle(corev1.ClusterTrustBundleProjection{Path: "b.pem"})), outcome: failure, errHas: "exactly one of name and signerName"},
		{name: "bundle by name with selector", volume: proj(nil, bundle(corev1.ClusterTrustBundleProjection{Name: str("a"), LabelSelector: &metav1.LabelSelector{}, Path: "b.pem"})), outcome: failure, errHas: "labelSelector"},
		{name: "pod certificate", volume: proj(nil, corev1.VolumeProjection{PodCertificate: &corev1.PodCertificateProjection{SignerName: "x/y"}}), outcome: failure, errHas: "podCertificate"},
		{name: "empty source", volume: proj(nil, corev1.VolumeProjection{}), outcome: failure, errHas: "exactly one kind"},
		{name: "two kinds in one source", volume: proj(nil, corev1.VolumeProjection{Secret: &corev1.SecretProjection{}, DownwardAPI: &corev1.DownwardAPIProjection{}}), outcome: failure, errHas: "has 2"},
		{name: "bad defaultMode", volume: proj(i32(0o1777), nsSrc), outcome: failure, errHas: "defaultMode"},
		{name: "no sources", volume: proj(nil)},
	})
}

// TestTokenIsNotRequestedForARefusedPath shows that a bad path is refused before the token
// manager is asked for a token.
func TestTokenIsNotRequestedForARefusedPath(t *testing.T) {
	fake := newSources()
	v := &corev1.Volume{Name: "vol", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "../token"}},
	}}}}
	if _, err := Build(context.Background(), basePod(), v, fake); err == nil || IsNotReady(err) {
		t.Fatalf("Build = %v, want a failure", err)
	}
	if len(fake.calls) != 0 {
		t.Errorf("sources called: %v", fake.calls)
	}
}

func TestNotReadyErrorsUnwrap(t *testing.T) {
	v := &corev1.Volume{Name: "vol", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "absent"}}}
	_, err := Build(context.Background(), basePod(), v, newSources())
	if !IsNotReady(err) || !apierrors.IsNotFound(err) {
		t.Fatalf("err %v: IsNotReady %v, IsNotFound %v", err, IsNotReady(err), apierrors.IsNotFound(err))
	}
	if IsNotReady(errors.New("other")) || IsNotReady(nil) {
		t.Error("IsNotReady is true for an unrelated error")
	}
}

// TestFileModeHeuristics is the design's table: fsGroup, else a runAsUser all containers
// share, else the volume's mode; fsGroup also reaches every other file.
func TestFileModeHeuristics(t *testing.T) {
	type users struct {
		pod       *int64
		init      []*int64
		regular   []*int64
		ephemeral []*int64
	}
	volume := func(defaultMode *int32) *corev1.Volume {
		return &corev1.Volume{Name: "vol", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			DefaultMode: defaultMode,
			Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
					{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
					{Path: "private", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}, Mode: i32(0o400)},
				}}},
			},
		}}}
	}
	tok := "token of builder for "
	cases := []struct {
		name        string
		fsGroup     *int64
		users       users
		defaultMode *int32
		token       atomicwriter.FileProjection
		name0       atomicwriter.FileProjection // the downward API file with the default mode
		private     atomicwriter.FileProjection // the downward API file with mode 0400
	}{
		{name: "nothing set", users: users{regular: []*int64{nil}},
			token: file(tok, 0o644), name0: file("web", 0o644), private: file("web", 0o400)},
		{name: "nothing set, defaultMode", defaultMode: i32(0o440), users: users{regular: []*int64{nil}},
			token: file(tok, 0o440), name0: file("web", 0o440), private: file("web", 0o400)},
		{name: "fsGroup", fsGroup: i64(2000), users: users{regular: []*int64{nil}},
			token:   atomicwriter.FileProjection{Data: []byte(tok), Mode: 0o640, GID: i64(2000)},
			name0:   atomicwriter.FileProjection{Data: []byte("web"), Mode: 0o644, GID: i64(2000)},
			private: atomicwriter.FileProjection{Data: []byte("web"), Mode: 0o440, GID: i64(2000)}},
		{name: "fsGroup wins over a shared runAsUser", fsGroup: i64(2000), users: users{pod: i64(1000), regular: []*int64{nil, nil}},
			token:   atomicwriter.FileProjection{Data: []byte(tok), Mode: 0o640, GID: i64(2000)},
			name0:   atomicwriter.FileProjection{Data: []byte("web"), Mode: 0o644, GID: i64(2000)},
			private: atomicwriter.FileProjection{Data: []byte("web"), Mode: 0o440, GID: i64(2000)}},
		{name: "fsGroup with defaultMode 0400", fsGroup: i64(0), defaultMode: i32(0o400), users: users{regular: []*int64{nil}},
			token:   atomicwriter.FileProjection{Data: []byte(tok), Mode: 0o640, GID: i64(0)},
			name0:   atomicwriter.FileProjection{Data: []byte("web"), Mode: 0o440, GID: i64(0)},
			private: atomicwriter.FileProjection{Data: []byte("web"), Mode: 0o440, GID: i64(0)}},
		{name: "pod runAsUser inherited by all", users: users{pod: i64(1000), init: []*int64{nil}, regular: []*int64{nil, nil}},
			token: atomicwriter.FileProjection{Data: []byte(tok), Mode: 0o600, UID: i64(1000)}, name0: file("web", 0o644), private: file("web", 0o400)},
		{name: "each container sets the same user", users: users{init: []*int64{i64(1000)}, regular: []*int64{i64(1000), i64(1000)}},
			token: atomicwriter.FileProjection{Data: []byte(tok), Mode: 0o600, UID: i64(1000)}, name0: file("web", 0o644), private: file("web", 0o400)},
		{name: "containers override the pod alike", users: users{pod: i64(5), regular: []*int64{i64(1000), i64(1000)}},
			token: atomicwriter.FileProjection{Data: []byte(tok), Mode: 0o600, UID: i64(1000)}, name0: file("web", 0o644), private: file("web", 0o400)},
		{name: "root shared", users: users{pod: i64(0), regular: []*int64{nil}},
			token: atomicwriter.FileProjection{Data: []byte(tok), Mode: 0o600, UID: i64(0)}, name0: file("web", 0o644), private: file("web", 0o400)},
		{name: "shared user, defaultMode ignored for the token", defaultMode: i32(0o444), users: users{pod: i64(1000), regular: []*int64{nil}},
			token: atomicwriter.FileProjection{Data: []byte(tok), Mode: 0o600, UID: i64(1000)}, name0: file("web", 0o444), private: file("web", 0o400)},
		{name: "one container overrides the pod", users: users{pod: i64(1000), regular: []*int64{nil, i64(1001)}},
			token: file(tok, 0o644), name0: file("web", 0o644), private: file("web", 0o400)},
		{name: "one container has no user", users: users{regular: []*int64{i64(1000), nil}},
			token: file(tok, 0o644), name0: file("web", 0o644), private: file("web", 0o400)},
		{name: "init container has no user", users: users{init: []*int64{nil}, regular: []*int64{i64(1000)}},
			token: file(tok, 0o644), name0: file("web", 0o644), private: file("web", 0o400)},
		{name: "init container differs", users: users{init: []*int64{i64(0)}, regular: []*int64{i64(1000)}},
			token: file(tok, 0o644), name0: file("web", 0o644), private: file("web", 0o400)},
		{name: "ephemeral containers do not count", users: users{pod: i64(1000), regular: []*int64{nil}, ephemeral: []*int64{i64(0), nil}},
			token: atomicwriter.FileProjection{Data: []byte(tok), Mode: 0o600, UID: i64(1000)}, name0: file("web", 0o644), private: file("web", 0o400)},
		{name: "shared user, not fsGroup, reaches only the token", users: users{pod: i64(1000), regular: []*int64{nil}}, defaultMode: i32(0o600),
			token: atomicwriter.FileProjection{Data: []byte(tok), Mode: 0o600, UID: i64(1000)}, name0: file("web", 0o600), private: file("web", 0o400)},
	}
	sc := func(u *int64) *corev1.SecurityContext {
		if u == nil {
			return nil
		}
		return &corev1.SecurityContext{RunAsUser: u}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := basePod()
			pod.Spec.InitContainers, pod.Spec.Containers = nil, nil
			pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: tc.fsGroup, RunAsUser: tc.users.pod}
			for i, u := range tc.users.init {
				pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: "init" + string(rune('a'+i)), SecurityContext: sc(u)})
			}
			for i, u := range tc.users.regular {
				pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "c" + string(rune('a'+i)), SecurityContext: sc(u)})
			}
			for i, u := range tc.users.ephemeral {
				pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, corev1.EphemeralContainer{
					EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "e" + string(rune('a'+i)), SecurityContext: sc(u)}})
			}
			got, err := Build(context.Background(), pod, volume(tc.defaultMode), newSources())
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]atomicwriter.FileProjection{"token": tc.token, "name": tc.name0, "private": tc.private}
			if diff := cmp.Diff(want, got, bytesEqual); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFSGroupReachesEveryVolumeKind checks the fsGroup pass on volumes other than projected.
func TestFSGroupReachesEveryVolumeKind(t *testing.T) {
	withFSGroup := func(p *corev1.Pod) {
		p.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: i64(3000), RunAsUser: i64(1000)}
	}
	g := func(data string, mode fs.FileMode) atomicwriter.FileProjection {
		return atomicwriter.FileProjection{Data: []byte(data), Mode: mode, GID: i64(3000)}
	}
	runBuildCases(t, []buildCase{
		{name: "secret", pod: withFSGroup, volume: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds", DefaultMode: i32(0o600)}},
			want: map[string]atomicwriter.FileProjection{"user": g("admin", 0o640), "pass": g("s3cr3t", 0o640)}},
		{name: "configMap", pod: withFSGroup, volume: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "ca"}, DefaultMode: i32(0o004)}},
			want: map[string]atomicwriter.FileProjection{"ca.crt": g("CA PEM", 0o444)}},
		{name: "downwardAPI", pod: withFSGroup, volume: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "n", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}, Mode: i32(0o200)}}}},
			want: map[string]atomicwriter.FileProjection{"n": g("web", 0o640)}},
	})
}
