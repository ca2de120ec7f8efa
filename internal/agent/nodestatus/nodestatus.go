// Package nodestatus registers the agent's Node and keeps it alive as the kubelet does: the
// Lease kube-node-lease/<node> renewed every quarter of its duration by the kubelet's own lease
// controller (component-helpers), and the Node's status (Ready condition, addresses, node info)
// written through nodes/status when it changes and at least every status update period.
package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-helpers/apimachinery/lease"
	nodeutil "k8s.io/component-helpers/node/util"
	"k8s.io/klog/v2"
	kubeletapis "k8s.io/kubelet/pkg/apis"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/idplane/idplane/internal/agent/clockwait"
	"github.com/idplane/idplane/internal/version"
)

// Config describes the node the agent reports.
type Config struct {
	NodeName string
	// Hostname is the kubernetes.io/hostname label and a Hostname address; empty means the
	// node name for the label and no such address.
	Hostname  string
	Addresses []corev1.NodeAddress
	// OS and Arch are the kubernetes.io/os and kubernetes.io/arch labels and the node info;
	// empty means runtime.GOOS and runtime.GOARCH.
	OS   string
	Arch string
	// KubeletPort is reported as status.daemonEndpoints.kubeletEndpoint; 0 when the agent
	// serves nothing.
	KubeletPort int32
	// LeaseDuration is the Lease's duration; it is renewed every quarter of it. Default 40 s.
	LeaseDuration time.Duration
	// StatusUpdateFrequency is how often the status is rewritten when nothing changed (the
	// kubelet's nodeStatusReportFrequency). Default 5 min.
	StatusUpdateFrequency time.Duration
	// Clock times the status checks and the retries, and stamps the Lease's renew time; nil is
	// the real clock. The lease controller spaces its renewals on the real clock.
	Clock clock.Clock
}

const (
	DefaultLeaseDuration         = 40 * time.Second
	DefaultStatusUpdateFrequency = 5 * time.Minute
	// statusCheckInterval is how often the status is compared with the Node (the kubelet's
	// nodeStatusUpdateFrequency); a write happens only on a difference or when one is due.
	statusCheckInterval = 10 * time.Second
)

// Run registers the Node, then renews its Lease and keeps its status current until ctx ends;
// it returns nil then. Failed requests are retried with backoff, so Run outlasts an unreachable
// server. It returns an error at once only for an invalid configuration.
func Run(ctx context.Context, client kubernetes.Interface, c Config) error {
	r, err := newReporter(client, c)
	if err != nil {
		return err
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("node", c.NodeName))
	if !r.register(ctx) {
		return nil
	}
	// Renewal starts once the Node exists, so that the Lease names it as its owner from the first.
	leases := lease.NewController(r.clock, client, c.NodeName, int32(r.cfg.LeaseDuration/time.Second), r.heartbeatFailed,
		r.cfg.LeaseDuration/4, c.NodeName, corev1.NamespaceNodeLease, r.ownLease)
	var wg sync.WaitGroup
	wg.Go(func() { leases.Run(ctx) })
	r.reportStatus(ctx)
	wg.Wait()
	return nil
}

// reporter holds what the status loop and the lease controller share: the Node's UID, which the
// Lease names as its owner so that the Lease goes with the Node.
type reporter struct {
	client kubernetes.Interface
	cfg    Config
	clock  clock.Clock

	mu      sync.Mutex
	nodeUID types.UID
	// node is the Node as the server last returned it to the agent; the status checks compare
	// against it instead of reading the Node again.
	node *corev1.Node

	// lapsed: lease renewals failed since the last status write, for long enough that the node
	// lifecycle controller may have marked the Node Unknown, which the cached Node would not
	// show; the next status check writes everything the agent owns.
	lapsed atomic.Bool
}

// heartbeatFailed is the lease controller's word that renewals keep failing.
func (r *reporter) heartbeatFailed() { r.lapsed.Store(true) }

func newReporter(client kubernetes.Interface, c Config) (*reporter, error) {
	if c.OS == "" {
		c.OS = runtime.GOOS
	}
	if c.Arch == "" {
		c.Arch = runtime.GOARCH
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.StatusUpdateFrequency == 0 {
		c.StatusUpdateFrequency = DefaultStatusUpdateFrequency
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return &reporter{client: client, cfg: c, clock: c.Clock}, nil
}

func (c Config) validate() error {
	var errs []error
	if msgs := validation.IsDNS1123Subdomain(c.NodeName); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("node name %q: %s", c.NodeName, strings.Join(msgs, "; ")))
	}
	for key, value := range c.labels() {
		if msgs := validation.IsValidLabelValue(value); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("label %s=%q: %s", key, value, strings.Join(msgs, "; ")))
		}
	}
	if c.LeaseDuration < time.Second {
		errs = append(errs, fmt.Errorf("lease duration %v is under a second", c.LeaseDuration))
	}
	if c.StatusUpdateFrequency <= 0 {
		errs = append(errs, fmt.Errorf("status update frequency %v must be positive", c.StatusUpdateFrequency))
	}
	if c.KubeletPort < 0 || c.KubeletPort > 65535 {
		errs = append(errs, fmt.Errorf("kubelet port %d is not in 0..65535", c.KubeletPort))
	}
	return errors.Join(errs...)
}

// labels are the well-known labels the kubelet sets on its Node, and the only ones the agent
// writes: NodeRestriction lets a node set exactly this kind.
func (c Config) labels() map[string]string {
	hostname := c.Hostname
	if hostname == "" {
		hostname = c.NodeName
	}
	return map[string]string{
		corev1.LabelHostname:   strings.ToLower(hostname),
		corev1.LabelOSStable:   c.OS,
		corev1.LabelArchStable: c.Arch,
		kubeletapis.LabelOS:    c.OS,
		kubeletapis.LabelArch:  c.Arch,
	}
}

// addresses are the configured ones, with the host name as a Hostname address unless one is given.
func (c Config) addresses() []corev1.NodeAddress {
	out := append([]corev1.NodeAddress(nil), c.Addresses...)
	if c.Hostname == "" {
		return out
	}
	for _, a := range out {
		if a.Type == corev1.NodeHostName {
			return out
		}
	}
	return append(out, corev1.NodeAddress{Type: corev1.NodeHostName, Address: c.Hostname})
}

// desired is node with the agent's labels and status applied, the Ready heartbeat at heartbeat.
// Everything else (other labels, spec, other conditions) stays as it is.
func (r *reporter) desired(node *corev1.Node, heartbeat time.Time) *corev1.Node {
	n := node.DeepCopy()
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	for k, v := range r.cfg.labels() {
		n.Labels[k] = v
	}
	n.Status.Addresses = r.cfg.addresses()
	n.Status.NodeInfo.OperatingSystem = r.cfg.OS
	n.Status.NodeInfo.Architecture = r.cfg.Arch
	n.Status.NodeInfo.KubeletVersion = version.Info().GitVersion
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = r.cfg.KubeletPort

	ready := corev1.NodeCondition{
		Type:              corev1.NodeReady,
		Status:            corev1.ConditionTrue,
		Reason:            "KubeletReady",
		Message:           "idplane agent is posting ready status",
		LastHeartbeatTime: metav1.NewTime(heartbeat),
	}
	for i, c := range n.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		ready.LastTransitionTime = c.LastTransitionTime
		if c.Status != ready.Status {
			ready.LastTransitionTime = metav1.NewTime(r.clock.Now())
		}
		n.Status.Conditions[i] = ready
		return n
	}
	ready.LastTransitionTime = metav1.NewTime(r.clock.Now())
	n.Status.Conditions = append(n.Status.Conditions, ready)
	return n
}

// register creates the Node, or brings an existing one's labels and status in line, retrying
// until it succeeds; false when ctx ended first.
func (r *reporter) register(ctx context.Context) bool {
	logger := klog.FromContext(ctx)
	backoff := retryBackoff(7 * time.Second)
	for {
		node, err := r.tryRegister(ctx)
		if err == nil {
			r.setNode(node)
			logger.Info("Node registered", "uid", node.UID)
			return true
		}
		delay := backoff.Step()
		logger.Error(err, "Registering the node failed, retrying", "retryIn", delay)
		if !clockwait.Sleep(ctx, r.clock, delay) {
			return false
		}
	}
}

func (r *reporter) tryRegister(ctx context.Context) (*corev1.Node, error) {
	nodes := r.client.CoreV1().Nodes()
	initial := r.desired(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: r.cfg.NodeName}}, r.clock.Now())
	created, err := nodes.Create(ctx, initial, metav1.CreateOptions{})
	if err == nil {
		return created, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating node %s: %w", r.cfg.NodeName, err)
	}
	existing, err := nodes.Get(ctx, r.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the existing node %s: %w", r.cfg.NodeName, err)
	}
	return r.patchStatus(ctx, existing, r.desired(existing, r.clock.Now()))
}

// patchStatus writes the difference between node and want through nodes/status. A strategic
// merge patch touches only what the agent owns, so others' writes in between survive. The
// library the kubelet uses replaces the address list instead of merging it: addresses merge by
// type, and a dual-stack node has two InternalIPs.
func (r *reporter) patchStatus(ctx context.Context, node, want *corev1.Node) (*corev1.Node, error) {
	patched, _, err := nodeutil.PatchNodeStatus(r.client.CoreV1(), types.NodeName(node.Name), node, want)
	if err != nil {
		return nil, fmt.Errorf("patching the status of node %s: %w", node.Name, err)
	}
	return patched, nil
}

// reportStatus compares the Node with what the agent reports every check interval and writes
// the status when they differ or the last heartbeat is a status update period old.
func (r *reporter) reportStatus(ctx context.Context) {
	logger := klog.FromContext(ctx)
	interval := min(statusCheckInterval, r.cfg.StatusUpdateFrequency)
	backoff := retryBackoff(interval)
	for {
		delay := interval
		if err := r.syncStatus(ctx); err != nil {
			delay = backoff.Step()
			logger.Error(err, "Updating the node status failed, retrying", "retryIn", delay)
		} else {
			backoff = retryBackoff(interval)
		}
		if !clockwait.Sleep(ctx, r.clock, delay) {
			return
		}
	}
}

// syncStatus writes the status when what the agent reports changed since its last write, or when
// a write is due. It reads nothing: in steady state a node costs the server one write per status
// update period besides its lease. A due write sends every field the agent owns, so what others
// changed in them is repaired then.
func (r *reporter) syncStatus(ctx context.Context) error {
	last := r.getNode()
	now := r.clock.Now()
	beat, hasReady := lastHeartbeat(last)
	lapsed := r.lapsed.Swap(false)
	due := !hasReady || now.Sub(beat) >= r.cfg.StatusUpdateFrequency || lapsed
	if !due && apiequality.Semantic.DeepEqual(last, r.desired(last, beat)) {
		return nil
	}
	base := last
	if due {
		base = r.withoutOwned(last)
	}
	patched, err := r.patchStatus(ctx, base, r.desired(last, now))
	if err != nil {
		if lapsed {
			r.lapsed.Store(true)
		}
		// The library does not keep the server's error, so a failed write asks whether the
		// Node is still there.
		if _, getErr := r.client.CoreV1().Nodes().Get(ctx, r.cfg.NodeName, metav1.GetOptions{}); !apierrors.IsNotFound(getErr) {
			return err
		}
		// Someone deleted the Node: register it again rather than report into nothing.
		klog.FromContext(ctx).Info("Node object is gone, registering again")
		if !r.register(ctx) {
			return ctx.Err()
		}
		return nil
	}
	r.setNode(patched)
	return nil
}

// withoutOwned is node without what the agent reports: a patch from it to the desired Node
// carries every field the agent owns and nothing else.
func (r *reporter) withoutOwned(node *corev1.Node) *corev1.Node {
	n := node.DeepCopy()
	for k := range r.cfg.labels() {
		delete(n.Labels, k)
	}
	// The address list is replaced only when the old one is non-empty and differs from the new
	// one; an address no node reports stands for "unknown" so that the whole list is sent.
	n.Status.Addresses = []corev1.NodeAddress{{}}
	n.Status.NodeInfo.OperatingSystem, n.Status.NodeInfo.Architecture, n.Status.NodeInfo.KubeletVersion = "", "", ""
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = 0
	n.Status.Conditions = slices.DeleteFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool { return c.Type == corev1.NodeReady })
	return n
}

func lastHeartbeat(node *corev1.Node) (time.Time, bool) {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.LastHeartbeatTime.Time, true
		}
	}
	return time.Time{}, false
}

func (r *reporter) setNode(node *corev1.Node) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.node, r.nodeUID = node, node.UID
}

func (r *reporter) getNode() *corev1.Node {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.node
}

func (r *reporter) getNodeUID() types.UID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.nodeUID
}

// ownLease completes each Lease the controller writes: held by the node, and owned by the Node
// when its UID is known (a Node registered again has a new one).
func (r *reporter) ownLease(l *coordinationv1.Lease) error {
	l.Spec.HolderIdentity = ptr.To(r.cfg.NodeName)
	if uid := r.getNodeUID(); uid != "" {
		l.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: corev1.SchemeGroupVersion.String(), Kind: "Node", Name: r.cfg.NodeName, UID: uid,
		}}
	}
	return nil
}

// retryBackoff doubles from a tenth of a second up to limit.
func retryBackoff(limit time.Duration) *wait.Backoff {
	return &wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 32, Cap: limit}
}
