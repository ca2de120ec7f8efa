package main

import (
	"context"
	"encoding/json"
	"fmt"
	mathrand "math/rand/v2"
	"net/http"
	goruntime "runtime"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/idplane/idplane/internal/agent/objects"
	"github.com/idplane/idplane/internal/podwalk"
)

const (
	// podWorkers is how many pods a node sets up at once, as the agent's pod manager.
	podWorkers = 8
	// Token refreshes follow the agent: at 80 % of the issued lifetime, at most a day.
	tokenRefreshFraction = 0.8
	maxTokenRefreshAge   = 24 * time.Hour
	// Failed requests of the periodic loops are retried sooner, as the agent does.
	retryInitial = 100 * time.Millisecond
	// conditionCredentialsReady is the pod condition the agent sets once a pod's volumes are written.
	conditionCredentialsReady = "CredentialsReady"
)

// nodeConfig is the timing of the simulated agents.
type nodeConfig struct {
	// leaseDuration is the Lease's duration; it is renewed every quarter of it (agent: 40 s).
	leaseDuration time.Duration
	// statusReport is how often its status is written when nothing changed (agent: 5 min; it
	// reads nothing in between).
	statusReport time.Duration
	// getInterval is how often a node GETs one of its secrets besides watching it; 0 never.
	getInterval time.Duration
	// spread starts every periodic task at a random point of its period, as in a cluster that has
	// been running for a while; without it every token refresh and status report of a node
	// falls due a whole period after its start.
	spread bool
	// requestTimeout bounds every request but watches.
	requestTimeout time.Duration
}

// simNode does what an idplane agent does against the API, without writing anything to disk.
type simNode struct {
	name string
	cs   kubernetes.Interface
	cfg  nodeConfig
	rec  *recorder

	mu      sync.Mutex
	nodeUID types.UID
	pods    map[types.UID]bool
	watches map[objects.Ref]chan struct{}
	secrets []objects.Ref
	// setups counts the pods being set up; ready waits for the initial ones.
	setups sync.WaitGroup
	podSem chan struct{}
}

func newSimNode(name string, cs kubernetes.Interface, cfg nodeConfig, rec *recorder) *simNode {
	return &simNode{
		name: name, cs: cs, cfg: cfg, rec: rec,
		pods: map[types.UID]bool{}, watches: map[objects.Ref]chan struct{}{}, podSem: make(chan struct{}, podWorkers),
	}
}

// run registers the node, starts its lease and status loops and its pod watch, sets up the pods
// bound to it and calls ready once every one of them has its objects and tokens; then it keeps
// going until ctx ends.
func (n *simNode) run(ctx context.Context, ready func()) {
	if !n.retry(ctx, n.register) {
		return
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { n.leaseLoop(ctx) })
	wg.Go(func() { n.statusLoop(ctx) })

	onNode := fields.OneTermEqualSelector("spec.nodeName", n.name).String()
	synced := make(chan struct{})
	wg.Go(func() {
		watchLoop(ctx, objects.ListWatch(n.cs.CoreV1().Pods(metav1.NamespaceAll), onNode),
			n.rec, synced, func(ev watch.Event) {
				if pod, ok := ev.Object.(*corev1.Pod); ok && ev.Type != watch.Deleted {
					n.addPod(ctx, pod)
				}
			})
	})
	select {
	case <-synced:
	case <-ctx.Done():
		return
	}
	// The pods of the initial state were added, and their setups counted, before the bookmark
	// that closed synced.
	n.setups.Wait()
	if ctx.Err() != nil {
		return
	}
	ready()
	if n.cfg.getInterval > 0 {
		wg.Go(func() { n.getLoop(ctx) })
	}
}

// retry calls f until it succeeds, backing off up to 10 s; false when ctx ended first.
func (n *simNode) retry(ctx context.Context, f func(context.Context) error) bool {
	delay := retryInitial
	for {
		err := f(ctx)
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		n.rec.noteError(err)
		if !pause(ctx, delay) {
			return false
		}
		delay = min(2*delay, 10*time.Second)
	}
}

func (n *simNode) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, n.cfg.requestTimeout)
}

// register creates the Node as the agent does: its labels, addresses and a Ready condition.
func (n *simNode) register(ctx context.Context) error {
	ctx, cancel := n.call(ctx)
	defer cancel()
	now := metav1.Now()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{
			corev1.LabelHostname: n.name, corev1.LabelOSStable: goruntime.GOOS, corev1.LabelArchStable: goruntime.GOARCH,
		}},
		Status: corev1.NodeStatus{
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: n.name}},
			NodeInfo:  corev1.NodeSystemInfo{OperatingSystem: goruntime.GOOS, Architecture: goruntime.GOARCH, KubeletVersion: "nodesim"},
			Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				Message: "idplane nodesim is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now,
			}},
		},
	}
	// A node registered by an earlier attempt (its answer lost) is found by a 409.
	created, err := n.cs.CoreV1().Nodes().Create(expectStatus(ctx, http.StatusConflict), node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = n.cs.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("registering node: %w", err)
	}
	n.mu.Lock()
	n.nodeUID = created.UID
	n.mu.Unlock()
	return nil
}

// leaseLoop holds kube-node-lease/<node>: created once, then updated from the copy last written
// every quarter of its duration, reading it again only after a conflict.
func (n *simNode) leaseLoop(ctx context.Context) {
	interval := n.cfg.leaseDuration / 4
	leases := n.cs.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	var lease *coordinationv1.Lease
	renew := func(ctx context.Context) error {
		ctx, cancel := n.call(ctx)
		defer cancel()
		var err error
		if lease != nil {
			var updated *coordinationv1.Lease
			if updated, err = leases.Update(ctx, n.renewed(lease), metav1.UpdateOptions{}); err == nil {
				lease = updated
				return nil
			}
			lease = nil
			if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				return fmt.Errorf("renewing lease: %w", err)
			}
		}
		current, err := leases.Get(expectStatus(ctx, http.StatusNotFound), n.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			fresh := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: n.name, Namespace: corev1.NamespaceNodeLease}}
			if lease, err = leases.Create(ctx, n.renewed(fresh), metav1.CreateOptions{}); err != nil {
				lease = nil
				return fmt.Errorf("creating lease: %w", err)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading lease: %w", err)
		}
		if lease, err = leases.Update(ctx, n.renewed(current), metav1.UpdateOptions{}); err != nil {
			lease = nil
			return fmt.Errorf("renewing lease: %w", err)
		}
		return nil
	}
	// The first lease is created at once, as the agent does right after registering.
	n.periodic(ctx, 0, interval, renew)
}

func (n *simNode) renewed(l *coordinationv1.Lease) *coordinationv1.Lease {
	l = l.DeepCopy()
	l.Spec.HolderIdentity = ptr.To(n.name)
	l.Spec.LeaseDurationSeconds = ptr.To(int32(n.cfg.leaseDuration / time.Second))
	l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	n.mu.Lock()
	uid := n.nodeUID
	n.mu.Unlock()
	l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: n.name, UID: uid}}
	return l
}

// statusLoop writes a status heartbeat every report period, as the agent does when nothing
// about the node changes; like the agent, it reads nothing in between.
func (n *simNode) statusLoop(ctx context.Context) {
	report := func(ctx context.Context) error {
		ctx, cancel := n.call(ctx)
		defer cancel()
		patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []map[string]any{{
			"type": corev1.NodeReady, "lastHeartbeatTime": metav1.Now(),
		}}}})
		if err != nil {
			return err
		}
		if _, err := n.cs.CoreV1().Nodes().Patch(ctx, n.name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			return fmt.Errorf("patching node status: %w", err)
		}
		return nil
	}
	n.periodic(ctx, n.firstDelay(n.cfg.statusReport), n.cfg.statusReport, report)
}

// getLoop re-reads one of the node's secrets every interval, in turn, standing for agents that
// restart or resync and read what they already watch.
func (n *simNode) getLoop(ctx context.Context) {
	i := 0
	get := func(ctx context.Context) error {
		n.mu.Lock()
		if len(n.secrets) == 0 {
			n.mu.Unlock()
			return nil
		}
		r := n.secrets[i%len(n.secrets)]
		n.mu.Unlock()
		i++
		ctx, cancel := n.call(ctx)
		defer cancel()
		if _, err := n.cs.CoreV1().Secrets(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("reading secret: %w", err)
		}
		return nil
	}
	n.periodic(ctx, n.firstDelay(n.cfg.getInterval), n.cfg.getInterval, get)
}

// periodic runs f after first and then every interval, retrying a failure sooner (doubling from
// a tenth of a second up to the interval) as the agent's loops do.
func (n *simNode) periodic(ctx context.Context, first, interval time.Duration, f func(context.Context) error) {
	if !pause(ctx, first) {
		return
	}
	backoff := retryInitial
	for {
		delay := interval
		if err := f(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			n.rec.noteError(err)
			delay, backoff = backoff, min(2*backoff, interval)
		} else {
			backoff = retryInitial
		}
		if !pause(ctx, delay) {
			return
		}
	}
}

func (n *simNode) firstDelay(interval time.Duration) time.Duration {
	if n.cfg.spread {
		return randomWithin(interval)
	}
	return interval
}

func randomWithin(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return time.Duration(mathrand.Int64N(int64(d)))
}

// addPod sets up a pod the first time the node sees it: the watches of its objects, its tokens
// and its CredentialsReady condition. Later events of a known pod cost the agent no request.
func (n *simNode) addPod(ctx context.Context, pod *corev1.Pod) {
	n.mu.Lock()
	known := n.pods[pod.UID]
	n.pods[pod.UID] = true
	n.mu.Unlock()
	if known || pod.DeletionTimestamp != nil {
		return
	}
	n.setups.Add(1)
	go func() {
		defer n.setups.Done()
		select {
		case n.podSem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		defer func() { <-n.podSem }()
		n.setUpPod(ctx, pod)
	}()
}

func (n *simNode) setUpPod(ctx context.Context, pod *corev1.Pod) {
	for _, r := range objects.PodRefs(pod) {
		select {
		case <-n.watch(ctx, r):
		case <-ctx.Done():
			return
		}
	}
	var firsts []chan struct{}
	for _, src := range podTokens(pod) {
		first := make(chan struct{})
		firsts = append(firsts, first)
		go n.tokenLoop(ctx, pod, src, first)
	}
	for _, first := range firsts {
		select {
		case <-first:
		case <-ctx.Done():
			return
		}
	}
	n.retry(ctx, func(ctx context.Context) error { return n.setCondition(ctx, pod) })
}

// watch starts, once per node, the single-object watch of r and returns the channel closed when
// its initial state is in.
func (n *simNode) watch(ctx context.Context, r objects.Ref) <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if ch, ok := n.watches[r]; ok {
		return ch
	}
	synced := make(chan struct{})
	n.watches[r] = synced
	byName := fields.OneTermEqualSelector("metadata.name", r.Name).String()
	var lw *cache.ListWatch
	if r.Kind == objects.Secret {
		n.secrets = append(n.secrets, r)
		lw = objects.ListWatch(n.cs.CoreV1().Secrets(r.Namespace), byName)
	} else {
		lw = objects.ListWatch(n.cs.CoreV1().ConfigMaps(r.Namespace), byName)
	}
	// The agent writes volumes from what the watch delivers; the simulation only needs to read it.
	go watchLoop(ctx, lw, n.rec, synced, func(watch.Event) {})
	return synced
}

// tokenLoop keeps one projected token of a pod: requested at once, then refreshed at 80 % of
// its issued lifetime (at most a day), the first refresh at a random point of that when the
// periods are spread. first is closed after the first token.
func (n *simNode) tokenLoop(ctx context.Context, pod *corev1.Pod, src corev1.ServiceAccountTokenProjection, first chan struct{}) {
	initial := true
	for {
		var age time.Duration
		ok := n.retry(ctx, func(ctx context.Context) error {
			var err error
			age, err = n.requestToken(ctx, pod, src)
			return err
		})
		if !ok {
			return
		}
		delay := age
		if initial {
			close(first)
			initial = false
			if n.cfg.spread {
				delay = randomWithin(age)
			}
		}
		if !pause(ctx, delay) {
			return
		}
	}
}

// requestToken asks for a token bound to the pod and returns the age at which to refresh it.
func (n *simNode) requestToken(ctx context.Context, pod *corev1.Pod, src corev1.ServiceAccountTokenProjection) (time.Duration, error) {
	ctx, cancel := n.call(ctx)
	defer cancel()
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: src.ExpirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
	}}
	if src.Audience != "" {
		tr.Spec.Audiences = []string{src.Audience}
	}
	requested := time.Now()
	out, err := n.cs.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, pod.Spec.ServiceAccountName, tr, metav1.CreateOptions{})
	if err != nil {
		return 0, fmt.Errorf("requesting a token for pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return refreshAge(requested, out.Status.ExpirationTimestamp.Time)
}

// refreshAge is when, after issuing, the agent refreshes a token expiring at expires.
func refreshAge(requested, expires time.Time) (time.Duration, error) {
	lifetime := expires.Sub(requested)
	if lifetime <= 0 {
		return 0, fmt.Errorf("token issued at %s expires at %s", requested.Format(time.RFC3339), expires.Format(time.RFC3339))
	}
	return min(time.Duration(tokenRefreshFraction*float64(lifetime)), maxTokenRefreshAge), nil
}

// setCondition writes the pod's CredentialsReady condition through pods/status, as the agent does
// once a pod's volumes are written.
func (n *simNode) setCondition(ctx context.Context, pod *corev1.Pod) error {
	ctx, cancel := n.call(ctx)
	defer cancel()
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": pod.UID},
		"status": map[string]any{"conditions": []corev1.PodCondition{{
			Type: conditionCredentialsReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now(),
		}}},
	})
	if err != nil {
		return err
	}
	_, err = n.cs.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("setting the condition of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// podTokens are a pod's projected service-account token sources, expirationSeconds defaulted
// as the API does.
func podTokens(pod *corev1.Pod) []corev1.ServiceAccountTokenProjection {
	var out []corev1.ServiceAccountTokenProjection
	for p := range podwalk.Projections(&pod.Spec) {
		if p.ServiceAccountToken == nil {
			continue
		}
		src := *p.ServiceAccountToken
		if src.ExpirationSeconds == nil {
			src.ExpirationSeconds = ptr.To[int64](3600)
		}
		out = append(out, src)
	}
	return out
}
