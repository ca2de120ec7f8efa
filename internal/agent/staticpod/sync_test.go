package staticpod

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
)

// fixture is a Syncer of node1 over a temporary directory and a fake clientset.
type fixture struct {
	dir    string
	clock  *clocktesting.FakeClock
	client *fake.Clientset
	syncer *Syncer
	logs   ktesting.Buffer
}

func newFixture(t *testing.T, mutate func(*Config), objects ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir(), clock: clocktesting.NewFakeClock(testNow), client: fake.NewClientset(objects...)}
	c := Config{Dir: f.dir, NodeName: "node1", NodeUID: "node1-uid", Clock: f.clock}
	if mutate != nil {
		mutate(&c)
	}
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	f.logs = logger.GetSink().(ktesting.Underlier).GetBuffer()
	f.syncer = NewSyncer(c, f.client, logger)
	return f
}

// sync runs one Sync and returns the requests it made, as "verb namespace/name".
func (f *fixture) sync(t *testing.T) ([]string, error) {
	t.Helper()
	f.client.ClearActions()
	err := f.syncer.Sync(context.Background())
	var out []string
	for _, a := range f.client.Actions() {
		out = append(out, describeAction(a))
	}
	return out, err
}

func (f *fixture) mustSync(t *testing.T, want ...string) {
	t.Helper()
	got, err := f.sync(t)
	if err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func describeAction(a k8stesting.Action) string {
	s := a.GetVerb() + " " + a.GetResource().Resource
	switch a := a.(type) {
	case k8stesting.CreateAction:
		obj := a.GetObject().(metav1.Object)
		return s + " " + obj.GetNamespace() + "/" + obj.GetName()
	case k8stesting.DeleteAction:
		return s + " " + a.GetNamespace() + "/" + a.GetName()
	case k8stesting.GetAction:
		return s + " " + a.GetName()
	case k8stesting.ListAction:
		return s + " " + a.GetListRestrictions().Fields.String()
	}
	return s
}

const listNode1 = "list pods spec.nodeName=node1"

func (f *fixture) pod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	p, err := f.client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting %s/%s: %v", ns, name, err)
	}
	return p
}

func TestSyncCreatesKeepsReplacesDeletes(t *testing.T) {
	f := newFixture(t, nil)
	writeFile(t, f.dir, "web.yaml", podYAML("web", "", ""))

	f.mustSync(t, listNode1, "create pods default/web-node1")
	created := f.pod(t, "default", "web-node1")
	checkMirror(t, created)
	// Deletion must be able to name the exact pod, and carry no grace: nothing is running it.
	f.client.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		opts := a.(k8stesting.DeleteActionImpl).DeleteOptions
		if opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds != 0 || opts.Preconditions == nil || opts.Preconditions.UID == nil {
			t.Errorf("delete options %+v, want grace 0 and a UID precondition", opts)
		}
		return false, nil, nil
	})

	f.clock.Step(time.Minute)
	f.mustSync(t, listNode1)

	writeFile(t, f.dir, "web.yaml", podYAML("web", "    args: [--v=2]\n", ""))
	f.mustSync(t, listNode1, "delete pods default/web-node1", "create pods default/web-node1")
	replaced := f.pod(t, "default", "web-node1")
	if replaced.Annotations[MirrorAnnotation] == created.Annotations[MirrorAnnotation] {
		t.Error("replaced mirror pod has the old hash")
	}
	if got := replaced.Annotations[SeenAnnotation]; got != "2026-03-04T05:07:07Z" {
		t.Errorf("seen = %s, want the time the new version was first seen", got)
	}
	if replaced.Spec.Containers[0].Args[0] != "--v=2" {
		t.Errorf("replaced pod runs %v", replaced.Spec.Containers[0].Args)
	}

	if err := os.Remove(filepath.Join(f.dir, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	f.mustSync(t, listNode1, "delete pods default/web-node1")
	f.mustSync(t, listNode1)
}

func TestSyncLeavesOtherPodsAlone(t *testing.T) {
	mirrorOf := func(name, node string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name), Annotations: map[string]string{MirrorAnnotation: "h"}},
			Spec:       corev1.PodSpec{NodeName: node},
		}
	}
	others := []runtime.Object{
		// The fake clientset ignores field selectors, so the list returns these too.
		mirrorOf("web-node2", "node2"),
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default", UID: "app"}, Spec: corev1.PodSpec{NodeName: "node1"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: "default", UID: "pending"}},
	}
	f := newFixture(t, nil, others...)
	f.mustSync(t, listNode1)

	// A mirror pod of this node that no manifest asks for is deleted: a file that is gone.
	stale := mirrorOf("old-node1", "node1")
	if _, err := f.client.CoreV1().Pods("default").Create(context.Background(), stale, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.mustSync(t, listNode1, "delete pods default/old-node1")
	for _, name := range []string{"web-node2", "app", "pending"} {
		f.pod(t, "default", name)
	}
}

func TestSyncReplacesMirrorPods(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*corev1.Pod)
	}{
		{name: "being deleted", mutate: func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: testNow} }},
		{name: "owned by an earlier Node of the same name", mutate: func(p *corev1.Pod) { p.OwnerReferences[0].UID = "old-node-uid" }},
		{name: "of another version", mutate: func(p *corev1.Pod) { p.Annotations[MirrorAnnotation] = "other" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil)
			writeFile(t, f.dir, "web.yaml", podYAML("web", "", ""))
			f.mustSync(t, listNode1, "create pods default/web-node1")
			p := f.pod(t, "default", "web-node1")
			tc.mutate(p)
			if err := f.client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), p, "default"); err != nil {
				t.Fatal(err)
			}
			f.mustSync(t, listNode1, "delete pods default/web-node1", "create pods default/web-node1")
			checkMirror(t, f.pod(t, "default", "web-node1"))
		})
	}
}

func TestSyncKeepsSeenTime(t *testing.T) {
	f := newFixture(t, nil)
	writeFile(t, f.dir, "web.yaml", podYAML("web", "", ""))
	f.mustSync(t, listNode1, "create pods default/web-node1")
	f.clock.Step(time.Hour)
	// Someone deletes the mirror pod; the manifest is the same version, first seen an hour ago.
	if err := f.client.CoreV1().Pods("default").Delete(context.Background(), "web-node1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.mustSync(t, listNode1, "create pods default/web-node1")
	if got := f.pod(t, "default", "web-node1").Annotations[SeenAnnotation]; got != "2026-03-04T05:06:07Z" {
		t.Errorf("seen = %s, want when the version was first seen", got)
	}
}

func TestSyncRefusedManifests(t *testing.T) {
	f := newFixture(t, nil)
	writeFile(t, f.dir, "secret.yaml", podYAML("web", "", "  volumes:\n  - name: s\n    secret:\n      secretName: db\n"))
	writeFile(t, f.dir, "good.yaml", podYAML("good", "", ""))
	f.mustSync(t, listNode1, "create pods default/good-node1")
	f.mustSync(t, listNode1)
	logs := f.logs.String()
	if n := strings.Count(logs, "Refusing static pod manifest"); n != 1 {
		t.Errorf("refusal logged %d times over two syncs, want once:\n%s", n, logs)
	}
	if !strings.Contains(logs, "secret.yaml") || !strings.Contains(logs, "spec.volumes[0].secret.secretName") {
		t.Errorf("refusal does not name the file and the field:\n%s", logs)
	}
	ms := f.syncer.Manifests()
	if len(ms) != 2 || ms[0].Err != nil || ms[1].Err == nil {
		t.Errorf("Manifests() = %+v, want good accepted and secret refused", ms)
	}

	// A manifest that becomes unusable takes its mirror pod with it, as its static pod stops.
	writeFile(t, f.dir, "good.yaml", "kind: Pod\n")
	f.mustSync(t, listNode1, "delete pods default/good-node1")
}

func TestSyncReadsTheNodeUIDWhenNotGiven(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1", UID: "registered-uid"}}
	f := newFixture(t, func(c *Config) { c.NodeUID = "" }, node)
	f.mustSync(t, listNode1)
	writeFile(t, f.dir, "a.yaml", podYAML("a", "", ""))
	writeFile(t, f.dir, "b.yaml", podYAML("b", "", ""))
	got, err := f.sync(t)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[0] != listNode1 || got[1] != "get nodes node1" {
		t.Errorf("requests %v, want a list, one read of the Node, and two creates", got)
	}
	for _, name := range []string{"a-node1", "b-node1"} {
		if owner := metav1.GetControllerOf(f.pod(t, "default", name)); owner == nil || owner.UID != "registered-uid" {
			t.Errorf("%s owner = %+v, want the Node's UID", name, owner)
		}
	}
}

func TestSyncWithoutTheNode(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.NodeUID = "" })
	writeFile(t, f.dir, "a.yaml", podYAML("a", "", ""))
	got, err := f.sync(t)
	if err == nil || !strings.Contains(err.Error(), `reading Node "node1"`) {
		t.Errorf("Sync error %v, want the Node not found", err)
	}
	if strings.Join(got, ",") != listNode1+",get nodes node1" {
		t.Errorf("requests %v, want no create without the Node", got)
	}
}

func TestSyncErrors(t *testing.T) {
	t.Run("a pod of the mirror's name that is not a mirror pod", func(t *testing.T) {
		squatter := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-node1", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: "node1"}}
		f := newFixture(t, nil, squatter)
		writeFile(t, f.dir, "web.yaml", podYAML("web", "", ""))
		writeFile(t, f.dir, "other.yaml", podYAML("other", "", ""))
		got, err := f.sync(t)
		if err == nil || !strings.Contains(err.Error(), "not a mirror pod") {
			t.Errorf("Sync error %v, want the name taken", err)
		}
		if strings.Join(got, ",") != listNode1+",create pods default/other-node1" {
			t.Errorf("requests %v, want the other manifest still created and the pod left alone", got)
		}
	})
	t.Run("the directory is gone", func(t *testing.T) {
		f := newFixture(t, nil)
		writeFile(t, f.dir, "web.yaml", podYAML("web", "", ""))
		f.mustSync(t, listNode1, "create pods default/web-node1")
		if err := os.RemoveAll(f.dir); err != nil {
			t.Fatal(err)
		}
		got, err := f.sync(t)
		if err == nil || len(got) != 0 {
			t.Errorf("Sync: requests %v error %v, want an error and nothing deleted", got, err)
		}
	})
	t.Run("a failed create does not stop the others", func(t *testing.T) {
		f := newFixture(t, nil)
		writeFile(t, f.dir, "a.yaml", podYAML("a", "", ""))
		writeFile(t, f.dir, "b.yaml", podYAML("b", "", ""))
		f.client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).Name == "a-node1" {
				return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "a-node1", errors.New("no"))
			}
			return false, nil, nil
		})
		_, err := f.sync(t)
		if err == nil || !strings.Contains(err.Error(), "a-node1") || !strings.Contains(err.Error(), "a.yaml") {
			t.Errorf("Sync error %v, want the failed pod and its file named", err)
		}
		f.pod(t, "default", "b-node1")
	})
}
