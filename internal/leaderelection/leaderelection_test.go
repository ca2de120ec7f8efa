package leaderelection

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

const (
	leaseNamespace = "kube-system"
	leaseName      = "test-controllers"
	// Short enough for a test, long enough for client-go's checks (renew > 1.2 × retry).
	leaseDuration = time.Second
	renewDeadline = 500 * time.Millisecond
	retryPeriod   = 100 * time.Millisecond
	// bound is how long anything in these tests may take; nothing waits for it unless stuck.
	bound = 30 * time.Second
)

// replica is one elector whose terms report on channels.
type replica struct {
	identity string
	// started receives each term's context as it starts.
	started chan context.Context
	// ended receives when a term's Lead returns, with the lease holder seen as it returned.
	ended chan string
	stop  context.CancelFunc
	done  chan struct{}
}

func startReplica(t *testing.T, client *fake.Clientset, identity string) *replica {
	t.Helper()
	r := &replica{identity: identity, started: make(chan context.Context, 10), ended: make(chan string, 10), done: make(chan struct{})}
	e, err := New(Config{
		Leases: client.CoordinationV1(), Namespace: leaseNamespace, Name: leaseName, Identity: identity,
		LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
		Lead: func(ctx context.Context) {
			r.started <- ctx
			<-ctx.Done()
			r.ended <- holder(t, client)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	go func() {
		defer close(r.done)
		e.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

// newClient is a fake clientset whose Leases keep optimistic concurrency as the real API does:
// an update naming an old resourceVersion is refused, which is how a replica learns that it lost
// the lease.
func newClient() *fake.Clientset {
	client := fake.NewClientset()
	var version int
	client.PrependReactor("*", "leases", func(action k8stesting.Action) (bool, runtime.Object, error) {
		var lease *coordinationv1.Lease
		switch action.GetVerb() {
		case "create":
			lease = action.(k8stesting.CreateAction).GetObject().(*coordinationv1.Lease)
		case "update":
			lease = action.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
			current, err := client.Tracker().Get(action.GetResource(), lease.Namespace, lease.Name)
			if err != nil {
				return true, nil, err
			}
			if current.(*coordinationv1.Lease).ResourceVersion != lease.ResourceVersion {
				return true, nil, apierrors.NewConflict(action.GetResource().GroupResource(), lease.Name, errors.New("the lease has changed"))
			}
		default:
			return false, nil, nil
		}
		version++
		lease.ResourceVersion = strconv.Itoa(version)
		return false, nil, nil
	})
	return client
}

func holder(t *testing.T, client *fake.Clientset) string {
	lease, err := client.CoordinationV1().Leases(leaseNamespace).Get(context.Background(), leaseName, metav1.GetOptions{})
	if err != nil {
		t.Errorf("reading the lease: %v", err)
		return ""
	}
	return ptr.Deref(lease.Spec.HolderIdentity, "")
}

func receive[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(bound):
		t.Fatalf("%s: nothing after %v", what, bound)
		panic("unreachable")
	}
}

func TestOneLeaderAndHandOverOnStop(t *testing.T) {
	client := newClient()
	a := startReplica(t, client, "a")
	receive(t, "a leads", a.started)
	b := startReplica(t, client, "b")
	if got := holder(t, client); got != "a" {
		t.Fatalf("holder %q, want a", got)
	}

	a.stop()
	if got := receive(t, "a's term ends", a.ended); got != "a" {
		t.Errorf("when a's work returned the lease named %q; it must still name a, released only after the work stopped", got)
	}
	receive(t, "a's Run returns", a.done)
	// b may already have taken over; otherwise the lease must have been given up, not left to expire.
	if got := holder(t, client); got != "" && got != "b" {
		t.Errorf("after a stopped the lease names %q, want it released", got)
	}
	receive(t, "b leads", b.started)
	if got := holder(t, client); got != "b" {
		t.Errorf("holder %q, want b", got)
	}
	select {
	case <-a.started:
		t.Error("a led again after it was stopped")
	default:
	}
}

func TestLostLeaseEndsTheTermAndTheReplicaCampaignsAgain(t *testing.T) {
	client := newClient()
	a := startReplica(t, client, "a")
	first := receive(t, "a leads", a.started)

	// Another holder takes the lease (as if a's renewals had not reached the store): a must stop
	// its work and, once the thief's lease runs out, lead again.
	leases := client.CoordinationV1().Leases(leaseNamespace)
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, bound, true, func(ctx context.Context) (bool, error) {
		lease, err := leases.Get(ctx, leaseName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		lease.Spec.HolderIdentity = ptr.To("thief")
		lease.Spec.LeaseDurationSeconds = ptr.To[int32](1)
		lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	receive(t, "a's first term ends", a.ended)
	if first.Err() == nil {
		t.Fatal("the first term's context is still live")
	}
	second := receive(t, "a leads again", a.started)
	if second.Err() != nil {
		t.Error("the second term began already over")
	}
	if got := holder(t, client); got != "a" {
		t.Errorf("holder %q, want a", got)
	}
}

func TestNewRefusesBadSettings(t *testing.T) {
	client := fake.NewClientset()
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"renew deadline not below the lease duration", func(c *Config) { c.RenewDeadline = c.LeaseDuration }, "leaseDuration must be greater than renewDeadline"},
		{"retry period too close to the renew deadline", func(c *Config) { c.RetryPeriod = c.RenewDeadline }, "retryPeriod"},
		{"no identity", func(c *Config) { c.Identity = "" }, "identity"},
		{"no lease name", func(c *Config) { c.Name = "" }, "lease namespace and name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{
				Leases: client.CoordinationV1(), Namespace: leaseNamespace, Name: leaseName, Identity: "x",
				LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
				Lead: func(context.Context) {},
			}
			tc.mutate(&cfg)
			_, err := New(cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

func TestNewIdentity(t *testing.T) {
	a, err := NewIdentity()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewIdentity()
	if a == b || !strings.Contains(a, "_") {
		t.Errorf("identities %q and %q: want host_suffix, unique", a, b)
	}
}
