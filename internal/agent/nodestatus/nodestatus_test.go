package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/idplane/idplane/internal/version"
)

func testConfig(clk *clocktesting.FakeClock) Config {
	return Config{
		NodeName:    "node-a",
		Hostname:    "Node-A",
		Addresses:   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.10"}},
		OS:          "linux",
		Arch:        "arm64",
		KubeletPort: 10250,
		Clock:       clk,
	}
}

// run starts Run and returns a function that stops it and reports its result.
func run(t *testing.T, client *fake.Clientset, cfg Config) func() error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, client, cfg) }()
	stop := func() error {
		cancel()
		return <-done
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		last = check()
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: %v", what, last)
	}
}

// settled waits until the status loop sleeps on the clock again. (The lease controller spaces
// its renewals on the real clock.)
func settled(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	eventually(t, "status loop waiting on the clock", func() error {
		if n := clk.Waiters(); n != 1 {
			return fmt.Errorf("%d waiters", n)
		}
		return nil
	})
}

// withUIDs gives created Nodes a UID, as the server does.
func withUIDs(client *fake.Clientset) {
	client.PrependReactor("create", "nodes", func(a clienttesting.Action) (bool, runtime.Object, error) {
		a.(clienttesting.CreateAction).GetObject().(*corev1.Node).UID = "uid-1"
		return false, nil, nil
	})
}

func getNode(t *testing.T, client *fake.Clientset) *corev1.Node {
	t.Helper()
	n, err := client.CoreV1().Nodes().Get(context.Background(), "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// getLease reads the lease from the fake's store, so that the reads are not among the client's
// actions.
func getLease(client *fake.Clientset) (*coordinationv1.Lease, error) {
	o, err := client.Tracker().Get(coordinationv1.SchemeGroupVersion.WithResource("leases"), corev1.NamespaceNodeLease, "node-a")
	if err != nil {
		return nil, err
	}
	return o.(*coordinationv1.Lease), nil
}

// leaseRenewedAt waits until the lease was last renewed at renewed.
func leaseRenewedAt(t *testing.T, client *fake.Clientset, renewed time.Time) *coordinationv1.Lease {
	t.Helper()
	var l *coordinationv1.Lease
	eventually(t, "lease renewed", func() error {
		var err error
		if l, err = getLease(client); err != nil {
			return err
		}
		if !l.Spec.RenewTime.Time.Equal(renewed) {
			return fmt.Errorf("lease renewed at %v, want %v", l.Spec.RenewTime, renewed)
		}
		return nil
	})
	return l
}

func readyCondition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func TestRegistersNodeAndLease(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	client := fake.NewClientset()
	withUIDs(client)
	run(t, client, testConfig(clk))
	settled(t, clk)

	n := getNode(t, client)
	wantLabels := map[string]string{
		"kubernetes.io/hostname": "node-a", "kubernetes.io/os": "linux", "kubernetes.io/arch": "arm64",
		"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "arm64",
	}
	for k, v := range wantLabels {
		if n.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, n.Labels[k], v)
		}
	}
	wantAddresses := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.10"}, {Type: corev1.NodeHostName, Address: "Node-A"}}
	if fmt.Sprint(n.Status.Addresses) != fmt.Sprint(wantAddresses) {
		t.Errorf("addresses %v, want %v", n.Status.Addresses, wantAddresses)
	}
	info := n.Status.NodeInfo
	if info.OperatingSystem != "linux" || info.Architecture != "arm64" || info.KubeletVersion != version.Info().GitVersion {
		t.Errorf("node info %+v", info)
	}
	if n.Status.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
		t.Errorf("daemon endpoints %+v", n.Status.DaemonEndpoints)
	}
	ready := readyCondition(n)
	if ready == nil || ready.Status != corev1.ConditionTrue || !ready.LastHeartbeatTime.Time.Equal(clk.Now()) {
		t.Fatalf("Ready condition %+v", ready)
	}

	lease := leaseRenewedAt(t, client, clk.Now())
	if *lease.Spec.HolderIdentity != "node-a" || *lease.Spec.LeaseDurationSeconds != 40 {
		t.Errorf("lease spec %+v", lease.Spec)
	}
	if len(lease.OwnerReferences) != 1 || lease.OwnerReferences[0].Kind != "Node" || lease.OwnerReferences[0].UID != "uid-1" {
		t.Errorf("lease owners %+v, want the Node", lease.OwnerReferences)
	}

	// Five minutes after the last report the status is written again, with the same transition.
	transition := ready.LastTransitionTime
	for range 30 {
		clk.Step(10 * time.Second)
		settled(t, clk)
	}
	ready = readyCondition(getNode(t, client))
	if !ready.LastHeartbeatTime.Time.Equal(clk.Now()) || !ready.LastTransitionTime.Equal(&transition) {
		t.Errorf("after 5 min Ready %+v, want heartbeat %v and transition %v", ready, clk.Now(), transition)
	}
}

// TestLeaseRenewal: the lease is renewed every quarter of its duration, each renewal written
// from the copy last written (no read) and stamped by the agent's clock; a renewal does not
// rewrite the Node's status.
func TestLeaseRenewal(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	client := fake.NewClientset()
	withUIDs(client)
	var mu sync.Mutex
	var renewals []time.Time
	client.PrependReactor("update", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		renewals = append(renewals, time.Now())
		return false, nil, nil
	})
	cfg := testConfig(clk)
	// The controller spaces renewals on the real clock: a one-second lease, renewed every 250 ms,
	// keeps the test short.
	cfg.LeaseDuration = time.Second
	run(t, client, cfg)
	settled(t, clk)
	registered := clk.Now()
	leaseRenewedAt(t, client, registered)

	clk.Step(10 * time.Second)
	settled(t, clk)
	lease := leaseRenewedAt(t, client, clk.Now())
	if *lease.Spec.HolderIdentity != "node-a" || *lease.Spec.LeaseDurationSeconds != 1 || len(lease.OwnerReferences) != 1 || lease.OwnerReferences[0].UID != "uid-1" {
		t.Errorf("renewed lease %+v, want it held by the node, of one second, owned by the Node", lease)
	}
	if got := readyCondition(getNode(t, client)).LastHeartbeatTime; !got.Time.Equal(registered) {
		t.Errorf("status heartbeat rewritten at %v before it was due", got)
	}

	eventually(t, "three renewals", func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(renewals) < 3 {
			return fmt.Errorf("%d renewals", len(renewals))
		}
		return nil
	})
	mu.Lock()
	times := slices.Clone(renewals)
	mu.Unlock()
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap < cfg.LeaseDuration/4 {
			t.Errorf("renewal %d came %v after the one before, want at least a quarter of the lease duration", i, gap)
		}
	}
	var verbs []string
	for _, a := range client.Actions() {
		if a.GetResource().Resource == "leases" {
			verbs = append(verbs, a.GetVerb())
		}
	}
	if len(verbs) < 2 || verbs[0] != "get" || verbs[1] != "create" || slices.ContainsFunc(verbs[2:], func(v string) bool { return v != "update" }) {
		t.Errorf("lease requests %v, want get and create, then updates only", verbs)
	}
}

func TestRegisterExistingNode(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	existing := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "uid-old", Labels: map[string]string{
			"team": "blue", "kubernetes.io/os": "windows", "node-restriction.kubernetes.io/trusted": "yes",
		}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown"},
			{Type: "NetworkUnavailable", Status: corev1.ConditionFalse},
		}},
	}
	client := fake.NewClientset(existing)
	run(t, client, testConfig(clk))
	settled(t, clk)

	n := getNode(t, client)
	if n.Labels["team"] != "blue" || n.Labels["node-restriction.kubernetes.io/trusted"] != "yes" || n.Labels["kubernetes.io/os"] != "linux" {
		t.Errorf("labels %v: want the others' kept and kubernetes.io/os corrected", n.Labels)
	}
	if len(n.Spec.Taints) != 1 {
		t.Errorf("taints %v, want them untouched", n.Spec.Taints)
	}
	ready := readyCondition(n)
	if ready.Status != corev1.ConditionTrue || !ready.LastTransitionTime.Time.Equal(clk.Now()) {
		t.Errorf("Ready %+v, want True since now", ready)
	}
	if len(n.Status.Conditions) != 2 {
		t.Errorf("conditions %+v, want the other condition kept", n.Status.Conditions)
	}
	var patched bool
	for _, a := range client.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok {
			patched = true
			if p.GetSubresource() != "status" || p.GetPatchType() != types.StrategicMergePatchType {
				t.Errorf("patch %s of %q, want a strategic merge patch of status", p.GetPatchType(), p.GetSubresource())
			}
		}
	}
	if !patched {
		t.Error("existing node not patched")
	}
	if lease := leaseRenewedAt(t, client, clk.Now()); len(lease.OwnerReferences) != 1 || lease.OwnerReferences[0].UID != "uid-old" {
		t.Errorf("lease %+v, want it owned by the existing Node", lease)
	}
}

// TestRetriesWhileServerDown: registration and lease renewal fail while the server is
// unreachable and succeed once it answers, with backoff in between (registration's on the
// agent's clock, the lease controller's on the real one).
func TestRetriesWhileServerDown(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	client := fake.NewClientset()
	var down atomic.Bool
	down.Store(true)
	var failures, leaseFailures atomic.Int32
	client.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if down.Load() {
			failures.Add(1)
			if a.GetResource().Resource == "leases" {
				leaseFailures.Add(1)
			}
			return true, nil, errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
		}
		return false, nil, nil
	})
	cfg := testConfig(clk)
	cfg.LeaseDuration = time.Second // renewed every 250 ms of real time
	run(t, client, cfg)

	for range 5 {
		eventually(t, "registration retry waiting on the clock", func() error {
			if !clk.HasWaiters() {
				return fmt.Errorf("no timer")
			}
			return nil
		})
		clk.Step(7 * time.Second)
	}
	if n := failures.Load(); n < 5 {
		t.Fatalf("%d failed requests, want registration retried", n)
	}
	down.Store(false)
	eventually(t, "registration retry waiting on the clock", func() error {
		if !clk.HasWaiters() {
			return fmt.Errorf("no timer")
		}
		return nil
	})
	clk.Step(7 * time.Second)
	eventually(t, "node registered once the server answers", func() error {
		_, err := client.CoreV1().Nodes().Get(context.Background(), "node-a", metav1.GetOptions{})
		return err
	})
	settled(t, clk)

	leaseRenewedAt(t, client, clk.Now())

	// A failed renewal is retried (the controller tries the update again at once, then reads the
	// lease with backoff), and the lease is renewed once the server answers.
	down.Store(true)
	eventually(t, "renewal retried while the server is down", func() error {
		if n := leaseFailures.Load(); n < 6 {
			return fmt.Errorf("%d failed lease requests", n)
		}
		return nil
	})
	clk.Step(time.Second)
	down.Store(false)
	leaseRenewedAt(t, client, clk.Now())
}

// TestStatusDrift: the status checks read nothing; what something else changed in the agent's
// fields is written back at the next due write, and a deleted Node is registered again then.
func TestStatusDrift(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	client := fake.NewClientset()
	run(t, client, testConfig(clk))
	settled(t, clk)

	n := getNode(t, client)
	n.Status.Addresses = nil
	n.Labels["team"] = "ops"
	if _, err := client.CoreV1().Nodes().UpdateStatus(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	client.ClearActions()
	clk.Step(10 * time.Second)
	settled(t, clk)
	for _, a := range client.Actions() {
		if a.GetResource().Resource == "nodes" {
			t.Errorf("a status check before the update period made a request: %s", a.GetVerb())
		}
	}
	clk.Step(DefaultStatusUpdateFrequency)
	settled(t, clk)
	got := getNode(t, client)
	if len(got.Status.Addresses) != 2 {
		t.Errorf("addresses %v after the due write, want them written back", got.Status.Addresses)
	}
	if got.Labels["team"] != "ops" {
		t.Errorf("the due write dropped a label the agent does not own: %v", got.Labels)
	}

	if err := client.CoreV1().Nodes().Delete(context.Background(), "node-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	clk.Step(DefaultStatusUpdateFrequency)
	settled(t, clk)
	getNode(t, client)
}

func TestConfigValidation(t *testing.T) {
	cases := []struct {
		name   string
		change func(*Config)
	}{
		{"no node name", func(c *Config) { c.NodeName = "" }},
		{"invalid node name", func(c *Config) { c.NodeName = "Node_A" }},
		{"hostname too long for a label", func(c *Config) { c.Hostname = fmt.Sprintf("%070d", 0) }},
		{"sub-second lease", func(c *Config) { c.LeaseDuration = time.Millisecond }},
		{"negative frequency", func(c *Config) { c.StatusUpdateFrequency = -time.Second }},
		{"port out of range", func(c *Config) { c.KubeletPort = 70000 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(clocktesting.NewFakeClock(time.Now()))
			tc.change(&cfg)
			if err := Run(context.Background(), fake.NewClientset(), cfg); err == nil {
				t.Error("Run accepted the configuration")
			}
		})
	}
}

// TestDualStackHeartbeat: a strategic merge patch merges addresses by type, so two InternalIPs
// cannot be written that way; the periodic status write must still succeed and keep both.
func TestDualStackHeartbeat(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	client := fake.NewClientset()
	cfg := testConfig(clk)
	cfg.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: "192.0.2.10"},
		{Type: corev1.NodeInternalIP, Address: "fd00::2"},
	}
	run(t, client, cfg)
	settled(t, clk)

	want := "[{InternalIP 192.0.2.10} {InternalIP fd00::2} {Hostname Node-A}]"
	for i := range 3 {
		clk.Step(DefaultStatusUpdateFrequency)
		settled(t, clk)
		n := getNode(t, client)
		if got := fmt.Sprint(n.Status.Addresses); got != want {
			t.Fatalf("write %d: addresses %s, want %s", i+1, got, want)
		}
		if beat := readyCondition(n).LastHeartbeatTime; !beat.Time.Equal(clk.Now()) {
			t.Fatalf("write %d: heartbeat %v, want %v", i+1, beat, clk.Now())
		}
	}
}

// An agent whose lease renewals kept failing (cut off from the server, which may meanwhile
// have marked the Node Unknown) writes its whole status at the next check, not at the next
// due write: its cached Node cannot show what the node lifecycle controller did.
func TestStatusWrittenAfterHeartbeatsLapsed(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	client := fake.NewClientset()
	withUIDs(client)
	var failing atomic.Bool
	var failures atomic.Int32
	client.PrependReactor("update", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
		if failing.Load() {
			failures.Add(1)
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	cfg := testConfig(clk)
	cfg.LeaseDuration = time.Second // renewed every 250 ms on the real clock
	run(t, client, cfg)
	settled(t, clk)

	// A check before anything failed writes nothing.
	client.ClearActions()
	clk.Step(10 * time.Second)
	settled(t, clk)
	for _, a := range client.Actions() {
		if a.GetResource().Resource == "nodes" {
			t.Fatalf("a status check with healthy heartbeats made a request: %s", a.GetVerb())
		}
	}

	failing.Store(true)
	// The third failure comes after the lease controller reported the second.
	eventually(t, "repeated renewal failures", func() error {
		if n := failures.Load(); n < 3 {
			return fmt.Errorf("%d failures", n)
		}
		return nil
	})
	failing.Store(false)
	client.ClearActions()
	clk.Step(10 * time.Second)
	settled(t, clk)
	patched := slices.ContainsFunc(client.Actions(), func(a clienttesting.Action) bool {
		return a.GetResource().Resource == "nodes" && a.GetSubresource() == "status" && a.GetVerb() == "patch"
	})
	if !patched {
		t.Fatal("no status write at the first check after the heartbeats lapsed")
	}
	if got := readyCondition(getNode(t, client)).LastHeartbeatTime; !got.Time.Equal(clk.Now()) {
		t.Errorf("Ready heartbeat %v, want the check's time %v", got, clk.Now())
	}
}
