package apiserver

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// A node that stops renewing its lease is marked by the leader's node lifecycle controller
// through the assembled server, and unmarked when its agent reports Ready again; the node
// itself cannot lift the taints.
func TestNodeLifecycleThroughTheServer(t *testing.T) {
	s := startRBACServerWith(t, func(o *Options) {
		o.NodeLifecycle = NodeLifecycleOptions{GracePeriod: 2 * time.Second, MonitorPeriod: 100 * time.Millisecond}
	})
	ctx := context.Background()
	self := nodeClient(t, s, "node1")
	now := metav1.Now()
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}
	_, err := self.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{ready}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "node1", Namespace: corev1.NamespaceNodeLease},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr("node1"), LeaseDurationSeconds: ptr[int32](1), RenewTime: &metav1.MicroTime{Time: now.Time}},
	}
	if _, err := self.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ensureServiceAccount(t, s.client, "default", "default")
	// The server's shared informer keeps a slimmed pod (no labels, no image); the mark must not
	// lose them.
	labeled := func(p *corev1.Pod) { p.Labels = map[string]string{"app": "web"} }
	pod, err := s.client.CoreV1().Pods("default").Create(ctx, newPod("web", onNode("node1"), labeled), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
	if _, err := s.client.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Silent past the grace period: Unknown, tainted, pod not ready.
	node := waitForNode1(t, s.client, "silent node1 Ready Unknown and tainted unreachable", func(n *corev1.Node) bool {
		return readyOf(n).Status == corev1.ConditionUnknown && hasLifecycleTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute) && hasLifecycleTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule)
	})
	if c := readyOf(node); c.Reason != "NodeStatusUnknown" || c.Message != "Kubelet stopped posting node status." {
		t.Errorf("Ready condition %+v, want upstream's reason and message", c)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := s.client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse
		}), nil
	})
	if err != nil {
		t.Errorf("pod web on silent node1 never turned not Ready: %v", err)
	}
	if p, err := s.client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{}); err != nil || p.Labels["app"] != "web" || p.Spec.Containers[0].Image == "" {
		t.Errorf("pod web after the mark: %v, %+v; want its label and image kept", err, p)
	}

	// The node cannot untaint itself.
	lifted := node.DeepCopy()
	lifted.Spec.Taints = nil
	if _, err := self.CoreV1().Nodes().Update(ctx, lifted, metav1.UpdateOptions{}); err == nil {
		t.Error("node1 removed its own unreachable taints")
	}

	// The agent comes back: lease renewed, Ready reported; the taints go.
	l, err := self.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "node1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	if _, err := self.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	node, err = self.CoreV1().Nodes().Get(ctx, "node1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	back := metav1.Now()
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			node.Status.Conditions[i] = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: back, LastTransitionTime: back}
		}
	}
	if _, err := self.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForNode1(t, s.client, "node1 Ready again and untainted", func(n *corev1.Node) bool {
		return readyOf(n).Status == corev1.ConditionTrue && len(n.Spec.Taints) == 0
	})
}

func waitForNode1(t *testing.T, client kubernetes.Interface, what string, ok func(*corev1.Node) bool) *corev1.Node {
	t.Helper()
	var last *corev1.Node
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, "node1", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = n
		return ok(n), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v; last seen conditions %+v, taints %+v", what, err, last.Status.Conditions, last.Spec.Taints)
	}
	return last
}

func readyOf(n *corev1.Node) corev1.NodeCondition {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c
		}
	}
	return corev1.NodeCondition{}
}

func hasLifecycleTaint(n *corev1.Node, key string, effect corev1.TaintEffect) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == key && t.Effect == effect && (effect != corev1.TaintEffectNoExecute || t.TimeAdded != nil)
	})
}

func TestNodeLifecycleOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		modify  func(*NodeLifecycleOptions)
		wantErr string
	}{
		{"defaults", func(*NodeLifecycleOptions) {}, ""},
		{"no grace period", func(o *NodeLifecycleOptions) { o.GracePeriod = 0 }, "--node-monitor-grace-period 0s must be positive"},
		{"negative monitor period", func(o *NodeLifecycleOptions) { o.MonitorPeriod = -time.Second }, "--node-monitor-period -1s must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			tc.modify(&o.NodeLifecycle)
			err := o.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Validate: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
	if o := NewOptions(); o.NodeLifecycle.GracePeriod != 50*time.Second {
		t.Errorf("default grace period %v, want upstream's 50s", o.NodeLifecycle.GracePeriod)
	}
}
