package nodelifecycle

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
)

// harness drives the controller by hand: the informers are never started, and sync copies what
// the fake server holds into their stores, so each pass sees exactly the state the test made.
type harness struct {
	t       *testing.T
	client  *fake.Clientset
	factory informers.SharedInformerFactory
	clock   *testingclock.FakeClock
	events  *record.FakeRecorder
	c       *Controller
}

func newHarness(t *testing.T, objs ...any) *harness {
	h := &harness{t: t, client: fake.NewClientset(), clock: testingclock.NewFakeClock(created), events: record.NewFakeRecorder(100)}
	ctx := context.Background()
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Node:
			_, err = h.client.CoreV1().Nodes().Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Pod:
			_, err = h.client.CoreV1().Pods(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *coordinationv1.Lease:
			_, err = h.client.CoordinationV1().Leases(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	h.factory = informers.NewSharedInformerFactory(h.client, 0)
	core := h.factory.Core().V1()
	c, err := New(h.client, core.Nodes(), h.factory.Coordination().V1().Leases(), core.Pods(),
		Config{GracePeriod: 50 * time.Second, StartupGracePeriod: time.Minute, Clock: h.clock, Recorder: h.events})
	if err != nil {
		t.Fatal(err)
	}
	h.c = c
	return h
}

func (h *harness) sync() {
	h.t.Helper()
	ctx := context.Background()
	nodes, _ := h.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	leases, _ := h.client.CoordinationV1().Leases("").List(ctx, metav1.ListOptions{})
	pods, _ := h.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	var n, l, p []any
	for i := range nodes.Items {
		n = append(n, &nodes.Items[i])
	}
	for i := range leases.Items {
		l = append(l, &leases.Items[i])
	}
	for i := range pods.Items {
		p = append(p, &pods.Items[i])
	}
	for _, r := range []struct {
		store interface{ Replace([]any, string) error }
		objs  []any
	}{
		{h.factory.Core().V1().Nodes().Informer().GetStore(), n},
		{h.factory.Coordination().V1().Leases().Informer().GetStore(), l},
		{h.factory.Core().V1().Pods().Informer().GetStore(), p},
	} {
		if err := r.store.Replace(r.objs, ""); err != nil {
			h.t.Fatal(err)
		}
	}
}

// pass advances the clock by d and makes one monitor pass over the synced state.
func (h *harness) pass(d time.Duration) {
	h.t.Helper()
	h.clock.Step(d)
	h.sync()
	if err := h.c.Monitor(context.Background()); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) node(name string) *corev1.Node {
	h.t.Helper()
	n, err := h.client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return n
}

func (h *harness) podReady(ns, name string) corev1.ConditionStatus {
	h.t.Helper()
	p, err := h.client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status
		}
	}
	return ""
}

func (h *harness) renew(name string) {
	h.t.Helper()
	ctx := context.Background()
	l, err := h.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	l.Spec.RenewTime = &metav1.MicroTime{Time: h.clock.Now()}
	if _, err := h.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// agentReports writes the Ready condition as a returning agent does.
func (h *harness) agentReports(name string) {
	h.t.Helper()
	n := h.node(name)
	for i, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			n.Status.Conditions[i] = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: metav1.NewTime(h.clock.Now()), LastTransitionTime: metav1.NewTime(h.clock.Now())}
		}
	}
	if _, err := h.client.CoreV1().Nodes().UpdateStatus(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

func readyNode(name string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady")}},
	}
}

func nodeLease(name string) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: name},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &name, RenewTime: &metav1.MicroTime{Time: created}},
	}
}

func readyPod(name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

func readyStatus(n *corev1.Node) corev1.NodeCondition {
	if c := condition(n, corev1.NodeReady); c != nil {
		return *c
	}
	return corev1.NodeCondition{}
}

func TestSilentNodeIsMarkedAndRecovers(t *testing.T) {
	h := newHarness(t, readyNode("node1"), nodeLease("node1"), readyNode("node2"), nodeLease("node2"),
		readyPod("web", "node1"), readyPod("db", "node2"))

	h.pass(0) // first sight: every node gets a full grace period from now
	for range 5 {
		h.renew("node2")
		h.pass(10 * time.Second)
	}
	// 50 s: node1 is at its grace period, not past it.
	if got := readyStatus(h.node("node1")); got.Status != corev1.ConditionTrue {
		t.Fatalf("node1 at the grace period: Ready %s, want True", got.Status)
	}
	h.renew("node2")
	h.pass(time.Second)

	n1 := h.node("node1")
	if got := readyStatus(n1); got.Status != corev1.ConditionUnknown || got.Reason != ReasonStatusUnknown || got.Message != MessageStatusUnknown {
		t.Errorf("silent node1's Ready = %+v, want Unknown %s", got, ReasonStatusUnknown)
	}
	if len(n1.Spec.Taints) != 2 || n1.Spec.Taints[0].Key != corev1.TaintNodeUnreachable || n1.Spec.Taints[1].TimeAdded == nil {
		t.Errorf("silent node1's taints = %+v, want unreachable NoSchedule and NoExecute with time added", n1.Spec.Taints)
	}
	if got := h.podReady("default", "web"); got != corev1.ConditionFalse {
		t.Errorf("pod web on node1: Ready %s, want False", got)
	}
	n2 := h.node("node2")
	if got := readyStatus(n2); got.Status != corev1.ConditionTrue || len(n2.Spec.Taints) != 0 {
		t.Errorf("renewing node2 was touched: Ready %s, taints %v", got.Status, n2.Spec.Taints)
	}
	if got := h.podReady("default", "db"); got != corev1.ConditionTrue {
		t.Errorf("pod db on renewing node2: Ready %s, want True", got)
	}
	wantEvents(t, h.events, "Normal NodeNotReady Node node1 status is now: NodeNotReady", "Warning NodeNotReady Node is not ready")

	// A pod bound to the silent node later is marked as well.
	if _, err := h.client.CoreV1().Pods("default").Create(context.Background(), readyPod("late", "node1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.pass(5 * time.Second)
	if got := h.podReady("default", "late"); got != corev1.ConditionFalse {
		t.Errorf("pod bound later to silent node1: Ready %s, want False", got)
	}

	// The lease renews: the taints stay until the agent reports Ready, which is what lifts them.
	h.renew("node1")
	h.pass(5 * time.Second)
	if got := readyStatus(h.node("node1")); got.Status != corev1.ConditionUnknown {
		t.Errorf("after a renewal alone, Ready = %s: the controller must not claim the node ready", got.Status)
	}
	h.agentReports("node1")
	h.pass(5 * time.Second)
	if n1 := h.node("node1"); len(n1.Spec.Taints) != 0 || readyStatus(n1).Status != corev1.ConditionTrue {
		t.Errorf("after the agent reported: Ready %s, taints %v; want True and none", readyStatus(n1).Status, n1.Spec.Taints)
	}
	// And the node is watched afresh: silent for the grace period again, marked again.
	h.pass(30 * time.Second)
	if got := readyStatus(h.node("node1")); got.Status != corev1.ConditionTrue {
		t.Errorf("30 s after the report: Ready %s, want True", got.Status)
	}
	h.pass(25 * time.Second)
	if got := readyStatus(h.node("node1")); got.Status != corev1.ConditionUnknown {
		t.Errorf("55 s after the report: Ready %s, want Unknown", got.Status)
	}
}

// A node's own clock buys it nothing: a renew time far in the future is one more renewal, and
// a lease that stops moving makes the node silent all the same.
func TestFutureRenewTimeDoesNotExtendTheGrace(t *testing.T) {
	n := nodeLease("node1")
	n.Spec.RenewTime = &metav1.MicroTime{Time: created.Add(365 * 24 * time.Hour)}
	h := newHarness(t, readyNode("node1"), n)
	h.pass(0)
	h.pass(51 * time.Second)
	if got := readyStatus(h.node("node1")); got.Status != corev1.ConditionUnknown {
		t.Errorf("node with a future renew time that stopped renewing: Ready %s, want Unknown", got.Status)
	}
}

func TestNodeThatNeverReportedGetsTheStartupGrace(t *testing.T) {
	h := newHarness(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1", CreationTimestamp: metav1.NewTime(created)}})
	h.pass(0)
	h.pass(55 * time.Second)
	if c := condition(h.node("node1"), corev1.NodeReady); c != nil {
		t.Fatalf("within the startup grace: Ready %+v, want none", c)
	}
	h.pass(10 * time.Second)
	got := readyStatus(h.node("node1"))
	if got.Status != corev1.ConditionUnknown || got.Reason != ReasonNeverUpdated || got.Message != MessageNeverUpdated {
		t.Errorf("past the startup grace: Ready %+v, want Unknown %s", got, ReasonNeverUpdated)
	}
}

func wantEvents(t *testing.T, events *record.FakeRecorder, want ...string) {
	t.Helper()
	for _, w := range want {
		select {
		case got := <-events.Events:
			if got != w {
				t.Errorf("event %q, want %q", got, w)
			}
		default:
			t.Errorf("no event, want %q", w)
		}
	}
}

// The controller marks a pod from the stored pod, not from its informer copy, which a server may
// keep only in part (idplane's shared informer keeps no labels, image or tolerations): what the
// copy lacks stays stored.
func TestPodIsMarkedFromTheStoredPod(t *testing.T) {
	pod := readyPod("web", "node1")
	pod.UID = "uid-web"
	pod.Labels = map[string]string{"app": "web"}
	pod.Annotations = map[string]string{"note": "kept"}
	pod.Spec.Containers = []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}
	h := newHarness(t, readyNode("node1"), nodeLease("node1"), pod)
	h.pass(0)

	// Past the grace period, with an informer copy that has the pod's name, UID, node and
	// status only.
	h.clock.Step(51 * time.Second)
	h.sync()
	partial := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "uid-web"}, Spec: corev1.PodSpec{NodeName: "node1"}, Status: pod.Status}
	if err := h.factory.Core().V1().Pods().Informer().GetStore().Replace([]any{partial}, ""); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Monitor(context.Background()); err != nil {
		t.Fatal(err)
	}

	got, err := h.client.CoreV1().Pods("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h.podReady("default", "web") != corev1.ConditionFalse {
		t.Errorf("pod web on silent node1 not marked: %+v", got.Status)
	}
	if got.Labels["app"] != "web" || got.Annotations["note"] != "kept" || len(got.Spec.Containers) != 1 || got.Spec.Containers[0].Image == "" {
		t.Errorf("the write lost what the informer copy lacks: %+v", got)
	}
}

// A pod deleted and created again under the same name since the informer saw it is not marked
// from the old one's record.
func TestReplacedPodIsLeftToTheNextPass(t *testing.T) {
	pod := readyPod("web", "node1")
	pod.UID = "uid-new"
	h := newHarness(t, readyNode("node1"), nodeLease("node1"), pod)
	h.pass(0)
	h.clock.Step(51 * time.Second)
	h.sync()
	old := readyPod("web", "node1")
	old.UID = "uid-old"
	if err := h.factory.Core().V1().Pods().Informer().GetStore().Replace([]any{old}, ""); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Monitor(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := h.podReady("default", "web"); got != corev1.ConditionTrue {
		t.Errorf("the new pod web was marked from the old one's record: Ready %s", got)
	}
}
