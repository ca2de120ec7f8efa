package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"k8s.io/component-base/metrics/testutil"

	"github.com/idplane/idplane/internal/authz/node/nodetest"
	"github.com/idplane/idplane/internal/authz/rbac/bootstrap"
)

// wait bounds waits that succeed in a correct implementation: generous, since only a bug
// makes a test take it.
const wait = 10 * time.Second

// fixedRevisions reports the same revisions on every read, and current revision 0.
type fixedRevisions map[string]int64

func (f fixedRevisions) LatestRevisions(context.Context, []string) (int64, map[string]int64, error) {
	return 0, f, nil
}

// gatedSource reports latest; each read announces itself on called and, while gate is
// non-nil, waits for a value on gate before answering.
type gatedSource struct {
	current int64
	latest  map[string]int64
	err     error
	reads   atomic.Int32
	called  chan struct{}
	gate    chan struct{}
	// exact is what the last read was asked about.
	exact atomic.Pointer[[]string]
}

func newGatedSource(latest map[string]int64, gated bool) *gatedSource {
	s := &gatedSource{latest: latest, called: make(chan struct{}, 100)}
	if gated {
		s.gate = make(chan struct{})
	}
	return s
}

func (s *gatedSource) LatestRevisions(ctx context.Context, exact []string) (int64, map[string]int64, error) {
	s.reads.Add(1)
	s.exact.Store(&exact)
	s.called <- struct{}{}
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		}
	}
	return s.current, s.latest, s.err
}

type decision struct {
	d      authorizer.Decision
	reason string
}

// staleGraph starts a populator on informers over a fake clientset holding pod ns/p, which
// uses secret s, holds the informers' events, and binds the pod to node n1 at revision 7:
// storage has the binding, the graph does not.
func staleGraph(t *testing.T, src RevisionSource, maxWait time.Duration) (*Authorizer, *nodetest.Hold) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pod := newPod("ns", "p", "", withSecretVolume("s"), withRV("6"))
	client := fake.NewClientset(pod)
	factory := informers.NewSharedInformerFactory(client, 0)
	gate := &nodetest.Gate{}
	g := NewGraph()
	p, err := NewPopulator(g, gate.Pods(factory.Core().V1().Pods()), gate.PersistentVolumes(factory.Core().V1().PersistentVolumes()),
		gate.VolumeAttachments(factory.Storage().V1().VolumeAttachments()), gate.PodCertificateRequests(factory.Certificates().V1().PodCertificateRequests()))
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), p.HasSynced) {
		t.Fatal("populator did not sync")
	}
	hold := gate.Pause()
	t.Cleanup(func() {
		hold.Release()
		cancel()
		factory.Shutdown()
	})
	bound := pod.DeepCopy()
	bound.Spec.NodeName, bound.ResourceVersion = "n1", "7"
	if _, err := client.CoreV1().Pods("ns").Update(ctx, bound, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return NewAuthorizer(g, NewFreshness(src, p, maxWait), bootstrap.NodeRules()), hold
}

func authorizeAsync(t *testing.T, a *Authorizer, node string, r call) <-chan decision {
	out := make(chan decision, 1)
	attrs := r.attrs(t, nodeUser(node))
	go func() {
		d, reason, _ := a.Authorize(context.Background(), attrs)
		out <- decision{d, reason}
	}()
	return out
}

// TestNoDenialFromAStaleGraph is the scenario: a pod is bound, and its node reads
// the secret before this server's graph has the pod. Released within the bound, the
// populator applies the pod and the read is allowed.
func TestNoDenialFromAStaleGraph(t *testing.T) {
	src := newGatedSource(map[string]int64{"pods": 7}, false)
	a, hold := staleGraph(t, src, wait)
	result := authorizeAsync(t, a, "n1", call{verb: "get", resource: "secrets", ns: "ns", name: "s"})
	// The store's revisions are read only by a decision about to refuse: it now waits.
	<-src.called
	select {
	case r := <-result:
		t.Fatalf("decided before the graph caught up: %v %q", r.d, r.reason)
	default:
	}
	hold.Release()
	if r := <-result; r.d != authorizer.DecisionAllow {
		t.Errorf("decision = %v (%q), want Allow", r.d, r.reason)
	}
}

// TestStaleGraphDeniedAfterMaxWait keeps the populator paused: the request is refused once
// the bound has passed, not before.
func TestStaleGraphDeniedAfterMaxWait(t *testing.T) {
	const maxWait = 100 * time.Millisecond
	a, _ := staleGraph(t, fixedRevisions{"pods": 7}, maxWait)
	start := time.Now()
	r := <-authorizeAsync(t, a, "n1", call{verb: "get", resource: "secrets", ns: "ns", name: "s"})
	if elapsed := time.Since(start); elapsed < maxWait {
		t.Errorf("refused after %v, before the %v bound", elapsed, maxWait)
	}
	want := `no relationship found between node "n1" and secret "ns/s"`
	if r.d != authorizer.DecisionNoOpinion || r.reason != want {
		t.Errorf("decision = %v %q, want NoOpinion %q", r.d, r.reason, want)
	}
}

// TestFreshGraphDeniesAtOnce: when the graph is current, an unrelated object is refused
// after one revision read, without waiting out the bound.
func TestFreshGraphDeniesAtOnce(t *testing.T) {
	src := newGatedSource(map[string]int64{"pods": 0}, false)
	g, p, _ := newPopulator(t, fake.NewClientset())
	a := NewAuthorizer(g, NewFreshness(src, p, wait), bootstrap.NodeRules())
	start := time.Now()
	if d, _ := decide(t, a, "n1", call{verb: "get", resource: "secrets", ns: "ns", name: "unrelated"}); d != authorizer.DecisionNoOpinion {
		t.Errorf("decision = %v, want NoOpinion", d)
	}
	if elapsed := time.Since(start); elapsed > wait/2 {
		t.Errorf("refusal took %v", elapsed)
	}
	if n := src.reads.Load(); n != 1 {
		t.Errorf("%d revision reads, want 1", n)
	}
}

// TestWaitFreshSharesReads: waiters arriving while a read runs share the next read, not
// the running one, which may predate what they need to see.
func TestWaitFreshSharesReads(t *testing.T) {
	src := newGatedSource(map[string]int64{}, true)
	_, p, _ := newPopulator(t, fake.NewClientset())
	f := NewFreshness(src, p, wait)

	first := f.join()
	<-src.called
	second, third := f.join(), f.join()
	if second == first || third != second {
		t.Fatalf("waiters arriving during a read got reads %p, %p; want one new read, not the running %p", second, third, first)
	}
	src.gate <- struct{}{}
	<-first.done
	<-src.called
	if fourth := f.join(); fourth == second {
		t.Error("a waiter arriving during the second read joined it")
	}
	src.gate <- struct{}{}
	<-second.done
	<-src.called
	src.gate <- struct{}{}
	if n := src.reads.Load(); n != 3 {
		t.Errorf("%d reads for four waiters in three arrival groups, want 3", n)
	}
}

// TestWaitFreshConcurrent has many waiters at once, for the race detector.
func TestWaitFreshConcurrent(t *testing.T) {
	src := newGatedSource(map[string]int64{"pods": 3}, false)
	_, p, _ := newPopulator(t, fake.NewClientset())
	f := NewFreshness(src, p, wait)
	const waiters = 20
	done := make(chan bool, waiters)
	for range waiters {
		go func() { done <- f.WaitFresh(context.Background()) }()
	}
	p.addPod(newPod("ns", "p", "n1", withRV("3")))
	for range waiters {
		if !<-done {
			t.Error("a waiter did not see the graph catch up")
		}
	}
	if n := src.reads.Load(); n > waiters {
		t.Errorf("%d reads for %d waiters", n, waiters)
	}
}

// TestWaitFreshResults: each way a wait ends, and the metric that counts it. A store that
// cannot be read is answered at once, never by waiting out the bound.
func TestWaitFreshResults(t *testing.T) {
	RegisterMetrics()
	cases := []struct {
		name    string
		src     func() *gatedSource
		ctx     func() context.Context
		maxWait time.Duration
		want    waitResult
	}{
		{"caught up", func() *gatedSource { return newGatedSource(map[string]int64{"pods": 0}, false) }, context.Background, wait, waitCaughtUp},
		{"storage error", func() *gatedSource {
			s := newGatedSource(nil, false)
			s.err = errors.New("etcd unavailable")
			return s
		}, context.Background, wait, waitUnavailable},
		{"read outlasts the bound", func() *gatedSource { return newGatedSource(nil, true) }, context.Background, 50 * time.Millisecond, waitTimeout},
		{"request ends", func() *gatedSource { return newGatedSource(nil, true) }, func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}, wait, waitCancelled},
		{"graph behind", func() *gatedSource { return newGatedSource(map[string]int64{"volumeattachments": 4}, false) }, context.Background, 50 * time.Millisecond, waitTimeout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			counter := liveMetrics.Load().waits[tc.want]
			before, err := testutil.GetCounterMetricValue(counter)
			if err != nil {
				t.Fatal(err)
			}
			_, p, _ := newPopulator(t, fake.NewClientset())
			start := time.Now()
			if got := NewFreshness(tc.src(), p, tc.maxWait).WaitFresh(tc.ctx()); got != (tc.want == waitCaughtUp) {
				t.Errorf("WaitFresh = %v", got)
			}
			if tc.want == waitUnavailable && time.Since(start) > wait/2 {
				t.Errorf("an unreadable store made the wait last %v", time.Since(start))
			}
			if after, _ := testutil.GetCounterMetricValue(counter); after != before+1 {
				t.Errorf("%s waits counted %v, want %v", waitResultNames[tc.want], after, before+1)
			}
		})
	}
}

// TestLargeResourceWaitsForTheStoreRevision: the store is asked for the newest revision among
// the objects of small resources only; a resource the graph holds more of is waited for up to
// the store's current revision.
func TestLargeResourceWaitsForTheStoreRevision(t *testing.T) {
	src := newGatedSource(map[string]int64{"persistentvolumes": 0, "volumeattachments": 0, "podcertificaterequests": 0}, false)
	src.current = 5000
	_, p, _ := newPopulator(t, fake.NewClientset())
	for i := range exactObjects + 1 {
		p.addPod(newPod("ns", fmt.Sprintf("p%d", i), "n1", withRV(strconv.Itoa(i+1))))
	}
	if NewFreshness(src, p, 50*time.Millisecond).WaitFresh(context.Background()) {
		t.Error("caught up with pods applied up to revision 1001 of 5000")
	}
	if exact := *src.exact.Load(); !slices.Equal(exact, []string{"persistentvolumes", "volumeattachments", "podcertificaterequests"}) {
		t.Errorf("the store was asked about %v; want the volumes only, not %d pods", exact, exactObjects+1)
	}
	p.updatePod(nil, newPod("ns", "p0", "n1", withRV("5000")))
	if !NewFreshness(src, p, wait).WaitFresh(context.Background()) {
		t.Error("not caught up with pods applied up to the store's revision")
	}
}
