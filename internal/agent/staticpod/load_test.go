package staticpod

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

var testNow = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func testConfig(dir string) Config {
	return Config{Dir: dir, NodeName: "node1", NodeUID: "node1-uid", Clock: clocktesting.NewFakeClock(testNow)}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// podYAML is a manifest of a pod named name whose container is given extra YAML, indented for
// the container's fields, and whose spec is given spec.
func podYAML(name, container, spec string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\nspec:\n  containers:\n  - name: c\n    image: registry.example/app:1\n" + container + spec
}

// loadOne loads a directory with a single manifest and returns its outcome.
func loadOne(t *testing.T, name, content string) Manifest {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, name, content)
	ms, err := Load(testConfig(dir))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if len(ms) != 1 {
		t.Fatalf("Load: %d outcomes, want 1: %+v", len(ms), ms)
	}
	return ms[0]
}

func TestLoadRefuses(t *testing.T) {
	cases := []struct {
		name    string
		file    string
		content string
		// wantErr are parts of the refusal: the field or reason a reader needs.
		wantErr []string
	}{
		{name: "not YAML", file: "bad.yaml", content: "apiVersion: v1\nkind: Pod\nmetadata: [unclosed\n", wantErr: []string{"not YAML or JSON"}},
		{name: "not JSON", file: "bad.json", content: `{"apiVersion": "v1", "kind": "Pod",`, wantErr: []string{"not YAML or JSON"}},
		{name: "empty", file: "empty.yaml", content: "# nothing here\n", wantErr: []string{"empty"}},
		{name: "a Deployment", file: "deploy.yaml", content: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n", wantErr: []string{"not a Pod", "apps/v1", "Deployment"}},
		{name: "a ConfigMap", file: "cm.yaml", content: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: d\n", wantErr: []string{"not a Pod", "ConfigMap"}},
		{name: "a PodList", file: "list.yaml", content: "apiVersion: v1\nkind: PodList\nitems: []\n", wantErr: []string{"not a Pod", "PodList"}},
		{name: "no kind", file: "nokind.yaml", content: "apiVersion: v1\nmetadata:\n  name: x\n", wantErr: []string{"not a Pod"}},
		{name: "two pods in one file", file: "two.yaml", content: podYAML("a", "", "") + "---\n" + podYAML("b", "", ""), wantErr: []string{"2 documents"}},
		{name: "no name", file: "noname.yaml", content: podYAML("", "", ""), wantErr: []string{"metadata.name", "Required"}},
		{name: "bad name", file: "badname.yaml", content: podYAML("Web_1", "", ""), wantErr: []string{"metadata.name", "Web_1-node1"}},
		{
			name: "no containers", file: "empty-spec.yaml",
			content: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers: []\n",
			wantErr: []string{"invalid pod", "spec.containers"},
		},
		{
			name: "secret volume", file: "secret.yaml",
			content: podYAML("web", "", "  volumes:\n  - name: s\n    secret:\n      secretName: db-password\n"),
			wantErr: []string{"may not reference", `secrets "db-password"`, "spec.volumes[0].secret.secretName"},
		},
		{
			name: "configmap environment", file: "cm-env.yaml",
			content: podYAML("web", "    env:\n    - name: A\n      valueFrom:\n        configMapKeyRef:\n          name: settings\n          key: a\n", ""),
			wantErr: []string{`configmaps "settings"`, "spec.containers[0].env[0].valueFrom.configMapKeyRef.name"},
		},
		{
			name: "secret envFrom", file: "envfrom.yaml",
			content: podYAML("web", "    envFrom:\n    - secretRef:\n        name: creds\n", ""),
			wantErr: []string{`secrets "creds"`, "spec.containers[0].envFrom[0].secretRef.name"},
		},
		{
			name: "service account", file: "sa.yaml",
			content: podYAML("web", "", "  serviceAccountName: builder\n"),
			wantErr: []string{`serviceaccounts "builder"`, "spec.serviceAccountName"},
		},
		{
			name: "service account token projection", file: "token.yaml",
			content: podYAML("web", "", "  volumes:\n  - name: t\n    projected:\n      sources:\n      - serviceAccountToken:\n          path: token\n"),
			wantErr: []string{"serviceaccounts", "spec.volumes[0].projected.sources[0].serviceAccountToken"},
		},
		{
			name: "persistent volume claim", file: "pvc.yaml",
			content: podYAML("web", "", "  volumes:\n  - name: data\n    persistentVolumeClaim:\n      claimName: data\n"),
			wantErr: []string{`persistentvolumeclaims "data"`, "spec.volumes[0].persistentVolumeClaim.claimName"},
		},
		{
			name: "image pull secret", file: "pull.yaml",
			content: podYAML("web", "", "  imagePullSecrets:\n  - name: registry\n"),
			wantErr: []string{`secrets "registry"`, "spec.imagePullSecrets[0].name"},
		},
		{
			name: "cluster trust bundle", file: "ctb.yaml",
			content: podYAML("web", "", "  volumes:\n  - name: ca\n    projected:\n      sources:\n      - clusterTrustBundle:\n          name: roots\n          path: ca.crt\n"),
			wantErr: []string{`clustertrustbundles "roots"`, "spec.volumes[0].projected.sources[0].clusterTrustBundle.name"},
		},
		{
			name: "resource claim", file: "claim.yaml",
			content: podYAML("web", "", "  resourceClaims:\n  - name: gpu\n    resourceClaimName: gpu-claim\n"),
			wantErr: []string{`resourceclaims "gpu-claim"`, "spec.resourceClaims[0].resourceClaimName"},
		},
		{
			name: "every reference named", file: "many.yaml",
			content: podYAML("web", "", "  serviceAccountName: sa\n  volumes:\n  - name: s\n    secret:\n      secretName: s1\n"),
			wantErr: []string{"spec.serviceAccountName", "spec.volumes[0].secret.secretName"},
		},
		{
			name: "a debug container", file: "debug.yaml",
			content: podYAML("web", "", "  ephemeralContainers:\n  - name: dbg\n    image: busybox\n"),
			wantErr: []string{"spec.ephemeralContainers"},
		},
		{name: "too large", file: "big.yaml", content: podYAML("web", "", "") + "#" + strings.Repeat("x", MaxManifestBytes), wantErr: []string{"larger than"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := loadOne(t, tc.file, tc.content)
			if m.Pod != nil || m.Err == nil {
				t.Fatalf("got pod %v, err %v; want a refusal", m.Pod, m.Err)
			}
			t.Log(m.Err)
			if filepath.Base(m.File) != tc.file {
				t.Errorf("File = %q, want it to name %q", m.File, tc.file)
			}
			for _, part := range tc.wantErr {
				if !strings.Contains(m.Err.Error(), part) {
					t.Errorf("error %q does not contain %q", m.Err, part)
				}
			}
		})
	}
}

func TestLoadAccepts(t *testing.T) {
	cases := []struct {
		name    string
		file    string
		content string
		check   func(t *testing.T, pod *corev1.Pod)
	}{
		{
			name: "YAML with node-local volumes", file: "web.yaml",
			content: podYAML("web", "    volumeMounts:\n    - name: host\n      mountPath: /host\n    env:\n    - name: POD\n      valueFrom:\n        fieldRef:\n          fieldPath: metadata.name\n",
				"  volumes:\n  - name: host\n    hostPath:\n      path: /var/lib/web\n  - name: tmp\n    emptyDir: {}\n  - name: self\n    downwardAPI:\n      items:\n      - path: labels\n        fieldRef:\n          fieldPath: metadata.labels\n  - name: projected-self\n    projected:\n      sources:\n      - downwardAPI:\n          items:\n          - path: name\n            fieldRef:\n              fieldPath: metadata.name\n"),
			check: func(t *testing.T, pod *corev1.Pod) {
				if len(pod.Spec.Volumes) != 4 {
					t.Errorf("volumes = %v", pod.Spec.Volumes)
				}
			},
		},
		{
			name: "JSON in its own namespace", file: "etcd.json",
			content: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"etcd","namespace":"kube-system","labels":{"tier":"control-plane"}},
				"spec":{"hostNetwork":true,"containers":[{"name":"etcd","image":"registry.example/etcd:3","ports":[{"containerPort":2379}]}]}}`,
			check: func(t *testing.T, pod *corev1.Pod) {
				if pod.Namespace != "kube-system" || pod.Name != "etcd-node1" || pod.Labels["tier"] != "control-plane" {
					t.Errorf("metadata = %+v", pod.ObjectMeta)
				}
				// The server's defaults: host networking mirrors container ports onto the host.
				if got := pod.Spec.Containers[0].Ports[0]; got.HostPort != 2379 || got.Protocol != corev1.ProtocolTCP {
					t.Errorf("port = %+v, want hostPort 2379 TCP", got)
				}
			},
		},
		{
			name: "yml, with what kubectl get -o yaml leaves behind", file: "copied.yml",
			content: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: copied\n  uid: 0e5b1c4e-0000-0000-0000-000000000000\n  resourceVersion: \"42\"\n  creationTimestamp: \"2020-01-01T00:00:00Z\"\n  ownerReferences:\n  - apiVersion: apps/v1\n    kind: ReplicaSet\n    name: rs\n    uid: x\nspec:\n  containers:\n  - name: c\n    image: app\n  tolerations:\n  - operator: Exists\n    effect: NoExecute\nstatus:\n  phase: Running\n  podIP: 10.0.0.1\n",
			check: func(t *testing.T, pod *corev1.Pod) {
				if pod.ResourceVersion != "" || !pod.CreationTimestamp.IsZero() || pod.Status.Phase != "" || pod.Status.PodIP != "" {
					t.Errorf("server-set fields kept: %+v %+v", pod.ObjectMeta, pod.Status)
				}
				if len(pod.OwnerReferences) != 1 || pod.OwnerReferences[0].Kind != "Node" {
					t.Errorf("ownerReferences = %+v, want only the Node", pod.OwnerReferences)
				}
				if len(pod.Spec.Tolerations) != 1 {
					t.Errorf("tolerations = %+v, want the manifest's one NoExecute toleration, not a second", pod.Spec.Tolerations)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := loadOne(t, tc.file, tc.content)
			if m.Err != nil {
				t.Fatalf("refused: %v", m.Err)
			}
			checkMirror(t, m.Pod)
			tc.check(t, m.Pod)
		})
	}
}

// checkMirror checks what every mirror pod of node1 carries: the kubelet's static pod defaults,
// the annotations and the owner NodeRestriction requires, and the server's defaults.
func checkMirror(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	hash := pod.Annotations[HashAnnotation]
	if len(hash) != 32 {
		t.Errorf("hash annotation %q, want 32 hex digits", hash)
	}
	if pod.UID != types.UID(hash) {
		t.Errorf("UID = %q, want the hash %q", pod.UID, hash)
	}
	want := map[string]string{
		MirrorAnnotation: hash,
		SourceAnnotation: "file",
		SeenAnnotation:   "2026-03-04T05:06:07Z",
	}
	for k, v := range want {
		if pod.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, pod.Annotations[k], v)
		}
	}
	if !strings.HasSuffix(pod.Name, "-node1") || pod.Namespace == "" || pod.Spec.NodeName != "node1" {
		t.Errorf("name %s/%s on %q, want <name>-node1 on node1", pod.Namespace, pod.Name, pod.Spec.NodeName)
	}
	owner := metav1.GetControllerOf(pod)
	if owner == nil || owner.APIVersion != "v1" || owner.Kind != "Node" || owner.Name != "node1" || owner.UID != "node1-uid" || owner.BlockOwnerDeletion != nil {
		t.Errorf("controller = %+v, want Node node1 node1-uid", owner)
	}
	if !hasToleration(pod.Spec.Tolerations, noExecuteToleration) {
		t.Errorf("tolerations = %+v, want every NoExecute taint tolerated", pod.Spec.Tolerations)
	}
	s := pod.Spec
	if s.RestartPolicy != corev1.RestartPolicyAlways || s.DNSPolicy != corev1.DNSClusterFirst || s.TerminationGracePeriodSeconds == nil || s.SchedulerName == "" {
		t.Errorf("spec defaults missing: restart %q dns %q grace %v scheduler %q", s.RestartPolicy, s.DNSPolicy, s.TerminationGracePeriodSeconds, s.SchedulerName)
	}
	if s.ServiceAccountName != "" || s.AutomountServiceAccountToken != nil {
		t.Errorf("service account %q automount %v, want none: a mirror pod references no account", s.ServiceAccountName, s.AutomountServiceAccountToken)
	}
}

func TestLoadDefaultNamespace(t *testing.T) {
	m := loadOne(t, "web.yaml", podYAML("web", "", ""))
	if m.Err != nil {
		t.Fatal(m.Err)
	}
	if m.Pod.Namespace != "default" || m.Pod.Name != "web-node1" {
		t.Errorf("got %s/%s, want default/web-node1", m.Pod.Namespace, m.Pod.Name)
	}
}

func TestLoadSkipsAndOrders(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	writeFile(t, dir, "b.yaml", podYAML("b", "", ""))
	writeFile(t, dir, "a.json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"app"}]}}`)
	writeFile(t, dir, ".hidden.yaml", podYAML("hidden", "", ""))
	writeFile(t, dir, "README.md", "notes")
	writeFile(t, dir, "b.yaml~", podYAML("backup", "", ""))
	writeFile(t, dir, "dup.yaml", podYAML("b", "", ""))
	if err := os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	target := writeFile(t, outside, "linked.yaml", podYAML("linked", "", ""))
	symlink(t, target, filepath.Join(dir, "linked.yaml"))
	symlink(t, filepath.Join(outside, "missing.yaml"), filepath.Join(dir, "dangling.yaml"))

	ms, err := Load(testConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	type outcome struct{ file, pod, err string }
	want := []outcome{
		{file: "a.json", pod: "default/a-node1"},
		{file: "b.yaml", pod: "default/b-node1"},
		{file: "dangling.yaml", err: "no such file"},
		{file: "dup.yaml", err: "default/b-node1 is already defined by b.yaml"},
		{file: "linked.yaml", pod: "default/linked-node1"},
		{file: "sub.yaml", err: "is a directory"},
	}
	if len(ms) != len(want) {
		t.Fatalf("got %d outcomes, want %d: %+v", len(ms), len(want), ms)
	}
	for i, w := range want {
		m := ms[i]
		if m.File != filepath.Join(dir, w.file) {
			t.Errorf("outcome %d is %s, want %s", i, m.File, w.file)
			continue
		}
		switch {
		case w.err != "":
			if m.Err == nil || !strings.Contains(m.Err.Error(), w.err) || m.Pod != nil {
				t.Errorf("%s: got pod %v err %v, want refusal %q", w.file, m.Pod, m.Err, w.err)
			}
		case m.Err != nil:
			t.Errorf("%s: refused: %v", w.file, m.Err)
		case m.Pod.Namespace+"/"+m.Pod.Name != w.pod:
			t.Errorf("%s: pod %s/%s, want %s", w.file, m.Pod.Namespace, m.Pod.Name, w.pod)
		}
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
}

func TestLoadDirectoryErrors(t *testing.T) {
	if _, err := Load(Config{Dir: filepath.Join(t.TempDir(), "missing"), NodeName: "n"}); err == nil {
		t.Error("missing directory: no error; a sync would delete every mirror pod")
	}
	if _, err := Load(Config{Dir: t.TempDir()}); err == nil {
		t.Error("no node name: no error")
	}
	if _, err := Load(Config{NodeName: "n"}); err == nil {
		t.Error("no directory: no error")
	}
}

func TestLoadHash(t *testing.T) {
	dir := t.TempDir()
	hashOf := func(c Config) string {
		t.Helper()
		ms, err := Load(c)
		if err != nil || len(ms) != 1 || ms[0].Err != nil {
			t.Fatalf("Load: %v %+v", err, ms)
		}
		return ms[0].Pod.Annotations[HashAnnotation]
	}
	c := testConfig(dir)
	writeFile(t, dir, "web.yaml", podYAML("web", "", ""))
	first := hashOf(c)
	if again := hashOf(c); again != first {
		t.Errorf("same file, hash %s then %s", first, again)
	}
	c.Clock = clocktesting.NewFakeClock(testNow.Add(time.Hour))
	if later := hashOf(c); later != first {
		t.Errorf("hash changed with the time: %s then %s", first, later)
	}
	writeFile(t, dir, "web.yaml", "# formatting and comments are not the pod\n"+podYAML("web", "", "")+"\n\n")
	if reformatted := hashOf(c); reformatted != first {
		t.Errorf("hash changed with formatting: %s then %s", first, reformatted)
	}
	writeFile(t, dir, "web.yaml", podYAML("web", "    args: [--verbose]\n", ""))
	changed := hashOf(c)
	if changed == first {
		t.Error("hash unchanged when the pod changed")
	}
	other := c
	other.NodeName = "node2"
	if hashOf(other) == changed {
		t.Error("same hash on another node")
	}
}
