package pods

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/clock"
)

func TestMain(m *testing.M) {
	// client-go's fake clientset cannot stream a watch's initial list.
	os.Setenv("KUBE_FEATURE_WatchListClient", "false")
	os.Exit(m.Run())
}

func pod(name string, volumes ...corev1.Volume) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: k8stypes.UID("uid-" + name)},
		Spec: corev1.PodSpec{
			NodeName: "n1", ServiceAccountName: "app", Volumes: volumes,
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		},
	}
}

func secretVolume(name, secret string, items ...corev1.KeyToPath) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret, Items: items}}}
}

// harness runs a manager on a fake clientset that issues tokens.
type harness struct {
	client *fake.Clientset
	root   string
	events *record.FakeRecorder
	logs   ktesting.Buffer // the manager's log at the default verbosity
	mu     sync.Mutex
	tokens int
	stop   func() // ends the running manager and waits for it
}

func start(t *testing.T, objects ...runtime.Object) *harness {
	t.Helper()
	h := &harness{client: fake.NewClientset(objects...), root: t.TempDir()}
	h.client.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "token" {
			return false, nil, nil
		}
		h.mu.Lock()
		h.tokens++
		h.mu.Unlock()
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		tr.Status = authenticationv1.TokenRequestStatus{Token: "a.b.c", ExpirationTimestamp: metav1.NewTime(time.Now().Add(time.Hour))}
		return true, tr, nil
	})
	h.run(t)
	t.Cleanup(func() { h.stop() })
	return h
}

// run starts a manager on the harness's client and root, as a restarted agent would, with a
// fresh event recorder and log.
func (h *harness) run(t *testing.T) {
	h.events = record.NewFakeRecorder(100)
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(0), ktesting.BufferLogs(true)))
	h.logs = logger.GetSink().(ktesting.Underlier).GetBuffer()
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	m := New(Config{NodeName: "n1", RootDir: h.root, Client: h.client, Recorder: h.events, Clock: clock.RealClock{}, Workers: 2})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		if err := m.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	h.stop = func() { cancel(); <-stopped }
}

func (h *harness) volumeDir(p *corev1.Pod, volume string) string {
	return filepath.Join(h.root, "pods", string(p.UID), "volumes", volume)
}

func (h *harness) condition(t *testing.T, p *corev1.Pod) *corev1.PodCondition {
	t.Helper()
	got, err := h.client.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	for _, c := range got.Status.Conditions {
		if c.Type == ConditionCredentialsReady {
			return &c
		}
	}
	return nil
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func TestHostileSpecIsRefusedAndOthersGoOn(t *testing.T) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{"k": []byte("v")}}
	// API validation would refuse these paths; the agent must not rely on it.
	hostile := pod("hostile", secretVolume("v", "s", corev1.KeyToPath{Key: "k", Path: "../../../escaped"}))
	good := pod("good", secretVolume("v", "s"))
	h := start(t, secret, hostile, good)

	eventually(t, "the good pod's file", func() bool {
		data, err := os.ReadFile(filepath.Join(h.volumeDir(good, "v"), "k"))
		return err == nil && string(data) == "v"
	})
	eventually(t, "the hostile pod's condition", func() bool {
		c := h.condition(t, hostile)
		return c != nil && c.Status == corev1.ConditionFalse && c.Reason == "FailedMount"
	})
	eventually(t, "the good pod ready", func() bool {
		c := h.condition(t, good)
		return c != nil && c.Status == corev1.ConditionTrue
	})
	for _, p := range []string{filepath.Join(h.root, "escaped"), filepath.Join(h.root, "pods", "escaped"), filepath.Join(h.root, "pods", string(hostile.UID), "escaped")} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists (err %v)", p, err)
		}
	}
	select {
	case e := <-h.events.Events:
		t.Logf("event: %s", e)
	case <-time.After(5 * time.Second):
		t.Error("no event for the hostile pod")
	}
}

func TestMissingSecretWaitsThenWrites(t *testing.T) {
	p := pod("p", secretVolume("v", "late"))
	h := start(t, p)
	eventually(t, "VolumeNotReady", func() bool {
		c := h.condition(t, p)
		return c != nil && c.Status == corev1.ConditionFalse && c.Reason == "VolumeNotReady"
	})
	_, err := h.client.CoreV1().Secrets("ns").Create(context.Background(),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "late"}, Data: map[string][]byte{"k": []byte("v")}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the file once the secret exists", func() bool {
		_, err := os.Stat(filepath.Join(h.volumeDir(p, "v"), "k"))
		return err == nil
	})
	eventually(t, "CredentialsReady", func() bool {
		c := h.condition(t, p)
		return c != nil && c.Status == corev1.ConditionTrue
	})
}

func TestDeletedPodIsRemoved(t *testing.T) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{"k": []byte("v")}}
	p := pod("p", secretVolume("v", "s"), corev1.Volume{Name: "tok", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}},
	}}})
	h := start(t, secret, p)
	eventually(t, "the token", func() bool {
		_, err := os.Stat(filepath.Join(h.volumeDir(p, "tok"), "token"))
		return err == nil
	})
	// The specs are written after every volume.
	eventually(t, "the runtime spec", func() bool {
		_, err := os.Stat(filepath.Join(h.root, "pods", string(p.UID), "containers", "c", "config.json"))
		return err == nil
	})
	if err := h.client.CoreV1().Pods("ns").Delete(context.Background(), "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the pod directory removed", func() bool {
		_, err := os.Stat(filepath.Join(h.root, "pods", string(p.UID)))
		return errors.Is(err, os.ErrNotExist)
	})
}

// A restarted agent drops the directories of pods that went while it was not running.
func TestRestartRemovesOrphans(t *testing.T) {
	root := t.TempDir()
	orphan := filepath.Join(root, "pods", "gone-uid", "volumes", "v")
	if err := os.MkdirAll(orphan, 0o755); err != nil {
		t.Fatal(err)
	}
	p := pod("p")
	client := fake.NewClientset(p)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := New(Config{NodeName: "n1", RootDir: root, Client: client, Recorder: record.NewFakeRecorder(10), Clock: clock.RealClock{}})
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	eventually(t, "the orphan removed", func() bool {
		_, err := os.Stat(filepath.Join(root, "pods", "gone-uid"))
		return errors.Is(err, os.ErrNotExist)
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestRuntimeSpecMountsHostPathsAndEmptyDirs(t *testing.T) {
	p := pod("p",
		corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log"}}},
		corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	)
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "host", MountPath: "/logs"}, {Name: "scratch", MountPath: "/tmp"}}
	h := start(t, p)
	specPath := filepath.Join(h.root, "pods", string(p.UID), "containers", "c", "config.json")
	eventually(t, "the runtime spec", func() bool {
		_, err := os.Stat(specPath)
		return err == nil
	})
	data, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Mounts []struct{ Destination, Source string }
	}
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	sources := map[string]string{}
	for _, m := range spec.Mounts {
		sources[m.Destination] = m.Source
	}
	if sources["/logs"] != "/var/log" {
		t.Errorf("hostPath mount source = %q, want the host's path", sources["/logs"])
	}
	scratch := h.volumeDir(p, "scratch")
	if sources["/tmp"] != scratch {
		t.Errorf("emptyDir mount source = %q, want %q", sources["/tmp"], scratch)
	}
	if info, err := os.Stat(scratch); err != nil || info.Mode().Perm() != 0o777 || !info.IsDir() {
		t.Errorf("emptyDir directory: %v, %v", info, err)
	}
}

// A pod synced again with nothing new to say costs no status write, even before the agent's
// cache shows its own last write.
func TestConditionWrittenOnce(t *testing.T) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{"k": []byte("v1")}}
	p := pod("p", secretVolume("v", "s"))
	h := start(t, secret, p)
	eventually(t, "CredentialsReady", func() bool {
		c := h.condition(t, p)
		return c != nil && c.Status == corev1.ConditionTrue
	})
	secret.Data["k"] = []byte("v2")
	if _, err := h.client.CoreV1().Secrets("ns").Update(context.Background(), secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new secret content", func() bool {
		data, err := os.ReadFile(filepath.Join(h.volumeDir(p, "v"), "k"))
		return err == nil && string(data) == "v2"
	})
	patches := 0
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "patch" && a.GetSubresource() == "status" {
			patches++
		}
	}
	if patches != 1 {
		t.Errorf("%d status patches, want 1", patches)
	}
}

// TestTamperedVolumeIsRewritten: a link planted in a secret volume (as a container with a
// read-write mount once did) does not stop the volume's updates; the next write rewrites it
// from the API, leaves the link's target alone, and says so in an event.
func TestTamperedVolumeIsRewritten(t *testing.T) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{"a": []byte("v1")}}
	p := pod("p", secretVolume("v", "s"))
	h := start(t, secret, p)
	dir := h.volumeDir(p, "v")
	eventually(t, "the first version", func() bool {
		data, err := os.ReadFile(filepath.Join(dir, "a"))
		return err == nil && string(data) == "v1"
	})
	outside := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(outside, []byte("root:x"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The tampering happens while the agent is down: a sync running beside it could have read
	// the directory just before the link went in and then replaced it, link and all, with
	// nothing to report. The restarted agent's first sync finds it.
	h.stop()
	if err := os.MkdirAll(filepath.Join(dir, "..data", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "..data", "x", "pw")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "..data", "a"), []byte("forged"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.run(t)

	for _, version := range []string{"v2", "v3"} {
		secret.Data["a"] = []byte(version)
		if _, err := h.client.CoreV1().Secrets("ns").Update(context.Background(), secret, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the secret's "+version, func() bool {
			data, err := os.ReadFile(filepath.Join(dir, "a"))
			return err == nil && string(data) == version
		})
	}
	if _, err := os.Lstat(filepath.Join(dir, "..data", "x")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the planted directory survived: %v", err)
	}
	if data, err := os.ReadFile(outside); err != nil || string(data) != "root:x" {
		t.Errorf("the link's target: %q, %v", data, err)
	}
	if c := h.condition(t, p); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("CredentialsReady: %+v", c)
	}
	found := false
	for len(h.events.Events) > 0 {
		if e := <-h.events.Events; strings.Contains(e, "VolumeTampered") && strings.Contains(e, "x/pw") {
			found = true
		}
	}
	if !found {
		t.Error("no VolumeTampered event naming the planted link")
	}
}

// TestRuntimeSpecEnvFromTheAPI: the spec carries env values from secrets, config maps and the
// pod, and waits (without an event) for a secret the environment names that is not there yet.
func TestRuntimeSpecEnvFromTheAPI(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg"}, Data: map[string]string{"MODE": "fast"}}
	p := pod("p")
	p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}
	p.Spec.Containers[0].Env = []corev1.EnvVar{
		{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "late"}, Key: "pw"}}},
		{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "MEM", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.memory", Divisor: resource.MustParse("1Mi")}}},
	}
	p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}
	h := start(t, cm, p)
	eventually(t, "the spec waiting for the secret", func() bool {
		c := h.condition(t, p)
		return c != nil && c.Status == corev1.ConditionFalse && strings.Contains(c.Message, `secret "late"`)
	})
	if len(h.events.Events) > 0 {
		t.Errorf("an event for a secret that is merely not there yet: %s", <-h.events.Events)
	}
	_, err := h.client.CoreV1().Secrets("ns").Create(context.Background(),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "late"}, Data: map[string][]byte{"pw": []byte("s3cret")}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var spec struct{ Process struct{ Env []string } }
	eventually(t, "the runtime spec", func() bool {
		data, err := os.ReadFile(filepath.Join(h.root, "pods", string(p.UID), "containers", "c", "config.json"))
		return err == nil && json.Unmarshal(data, &spec) == nil
	})
	want := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "MODE=fast", "PASSWORD=s3cret", "POD=p", "MEM=64"}
	if !slices.Equal(spec.Process.Env, want) {
		t.Errorf("env %q, want %q", spec.Process.Env, want)
	}
}
