// Package nodelifecycle notices nodes whose agent went silent, as upstream's node lifecycle
// controller does: a Node whose Lease (kube-node-lease/<node>) and Ready heartbeat have not
// moved for the grace period gets its conditions Unknown, the node.kubernetes.io/unreachable
// taints and its pods' Ready condition False. The taints follow the Ready condition, so they go
// once the agent reports Ready again.
package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coordinationinformers "k8s.io/client-go/informers/coordination/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Defaults, upstream's kube-controller-manager's.
const (
	DefaultGracePeriod = 50 * time.Second
	// DefaultStartupGracePeriod is the grace of a node that has never reported Ready.
	DefaultStartupGracePeriod = time.Minute
	DefaultMonitorPeriod      = 5 * time.Second
)

const podsByNode = "spec.nodeName"

// Config shapes the controller; zero values take the defaults.
type Config struct {
	GracePeriod        time.Duration
	StartupGracePeriod time.Duration
	MonitorPeriod      time.Duration
	// Clock times the grace periods and stamps what the controller writes; nil is the real clock.
	Clock clock.Clock
	// Recorder gets NodeNotReady events on nodes and pods; nil records none.
	Recorder record.EventRecorder
}

// Controller watches Nodes, node Leases and Pods; one monitor pass goroutine owns probes.
type Controller struct {
	client kubernetes.Interface
	nodes  corelisters.NodeLister
	leases coordinationlisters.LeaseLister
	pods   cache.Indexer
	synced []cache.InformerSynced
	cfg    Config

	// probes are when the controller last saw each node's agent alive, on its own clock: a
	// node's clock, or a renew time it writes into the future, buys it nothing.
	probes map[string]probe
}

// probe is what a node last showed of its agent, and when the controller saw it change.
type probe struct {
	heartbeat metav1.Time
	renew     metav1.MicroTime
	seen      time.Time
}

// New returns the controller over the shared informers; it adds a by-node index to the pods'.
func New(client kubernetes.Interface, nodes coreinformers.NodeInformer, leases coordinationinformers.LeaseInformer, pods coreinformers.PodInformer, cfg Config) (*Controller, error) {
	if cfg.GracePeriod == 0 {
		cfg.GracePeriod = DefaultGracePeriod
	}
	if cfg.StartupGracePeriod == 0 {
		cfg.StartupGracePeriod = DefaultStartupGracePeriod
	}
	if cfg.MonitorPeriod == 0 {
		cfg.MonitorPeriod = DefaultMonitorPeriod
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.GracePeriod < 0 || cfg.StartupGracePeriod < 0 || cfg.MonitorPeriod < 0 {
		return nil, errors.New("node lifecycle periods must not be negative")
	}
	err := pods.Informer().AddIndexers(cache.Indexers{podsByNode: func(obj any) ([]string, error) {
		if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName != "" {
			return []string{pod.Spec.NodeName}, nil
		}
		return nil, nil
	}})
	if err != nil {
		return nil, fmt.Errorf("indexing pods by node: %w", err)
	}
	return &Controller{
		client: client, nodes: nodes.Lister(), leases: leases.Lister(), pods: pods.Informer().GetIndexer(),
		synced: []cache.InformerSynced{nodes.Informer().HasSynced, leases.Informer().HasSynced, pods.Informer().HasSynced},
		cfg:    cfg, probes: map[string]probe{},
	}, nil
}

// Run monitors the nodes every monitor period until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	for {
		if err := c.Monitor(ctx); err != nil {
			klog.ErrorS(err, "Monitoring node health")
		}
		timer := c.cfg.Clock.NewTimer(c.cfg.MonitorPeriod)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C():
		}
	}
}

// Monitor makes one pass over the nodes. A failed write is retried by the next pass; Monitor
// goes on with the other nodes and returns the failures.
func (c *Controller) Monitor(ctx context.Context) error {
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	now := c.cfg.Clock.Now()
	present := map[string]bool{}
	var errs []error
	for _, node := range nodes {
		present[node.Name] = true
		if err := c.monitorNode(ctx, node, now); err != nil {
			errs = append(errs, err)
		}
	}
	for name := range c.probes {
		if !present[name] {
			delete(c.probes, name)
		}
	}
	return errors.Join(errs...)
}

func (c *Controller) monitorNode(ctx context.Context, node *corev1.Node, now time.Time) error {
	grace := c.cfg.GracePeriod
	if condition(node, corev1.NodeReady) == nil {
		grace = c.cfg.StartupGracePeriod
	}
	if now.Sub(c.observe(node, now)) > grace {
		conditions, changed := silentConditions(node, now)
		if changed {
			updated, err := c.writeConditions(ctx, node, conditions)
			if err != nil {
				return err
			}
			klog.InfoS("Node stopped posting status", "node", klog.KObj(node), "gracePeriod", grace)
			c.nodeEvent(node, corev1.EventTypeNormal, "NodeNotReady", "Node %s status is now: NodeNotReady", node.Name)
			node = updated
		}
	}
	if err := c.syncTaints(ctx, node, now); err != nil {
		return err
	}
	if ready := condition(node, corev1.NodeReady); ready != nil && ready.Status != corev1.ConditionTrue {
		return c.markPodsNotReady(ctx, node.Name, now)
	}
	return nil
}

// observe records what the node shows of its agent and returns when the controller last saw it
// move: a new Ready heartbeat or a renewed Lease. A node seen for the first time counts as
// alive now, so a new leader gives every node a full grace period.
func (c *Controller) observe(node *corev1.Node, now time.Time) time.Time {
	p, known := c.probes[node.Name]
	next := p
	if ready := condition(node, corev1.NodeReady); ready != nil {
		next.heartbeat = ready.LastHeartbeatTime
	}
	if lease, err := c.leases.Leases(corev1.NamespaceNodeLease).Get(node.Name); err == nil {
		next.renew = renewTime(lease)
	}
	if !known || !next.heartbeat.Equal(&p.heartbeat) || !next.renew.Equal(&p.renew) {
		next.seen = now
	}
	c.probes[node.Name] = next
	return next.seen
}

func renewTime(l *coordinationv1.Lease) metav1.MicroTime {
	if l.Spec.RenewTime == nil {
		return metav1.MicroTime{}
	}
	return *l.Spec.RenewTime
}

func (c *Controller) writeConditions(ctx context.Context, node *corev1.Node, conditions []corev1.NodeCondition) (*corev1.Node, error) {
	n := node.DeepCopy()
	n.Status.Conditions = conditions
	updated, err := c.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("marking the conditions of silent node %q Unknown: %w", node.Name, err)
	}
	return updated, nil
}

// syncTaints brings the node's lifecycle taints in line with its Ready condition. The write is
// conditional on the resource version, so a Node changed since (by its agent's status, or an
// administrator's taint) is looked at again by the next pass rather than overwritten.
func (c *Controller) syncTaints(ctx context.Context, node *corev1.Node, now time.Time) error {
	taints, changed := wantTaints(node, now)
	if !changed {
		return nil
	}
	n := node.DeepCopy()
	n.Spec.Taints = taints
	if _, err := c.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating the taints of node %q: %w", node.Name, err)
	}
	klog.V(2).InfoS("Updated node lifecycle taints", "node", klog.KObj(node), "taints", taints)
	return nil
}

func (c *Controller) markPodsNotReady(ctx context.Context, nodeName string, now time.Time) error {
	objs, err := c.pods.ByIndex(podsByNode, nodeName)
	if err != nil {
		return fmt.Errorf("listing the pods of node %q: %w", nodeName, err)
	}
	var errs []error
	for _, obj := range objs {
		pod := obj.(*corev1.Pod)
		if _, changed := podNotReady(pod, now); !changed {
			continue
		}
		wrote, err := c.writeNotReady(ctx, pod, now)
		switch {
		case err == nil && !wrote:
		case err == nil:
			klog.V(2).InfoS("Marked pod not ready", "pod", klog.KObj(pod), "node", nodeName)
			c.podEvent(pod, corev1.EventTypeWarning, "NodeNotReady", "Node is not ready")
		case apierrors.IsNotFound(err):
		default:
			errs = append(errs, fmt.Errorf("marking pod %s/%s not ready: %w", pod.Namespace, pod.Name, err))
		}
	}
	return errors.Join(errs...)
}

// writeNotReady marks the stored pod not ready. It starts from the stored pod, not the
// informer's copy: a server's shared informer may keep only part of a pod (idplane's keeps no
// labels, for one), and the status subresource keeps the request's labels and annotations. A
// pod replaced under the same name since the informer saw it is left to the next pass. It says
// whether it wrote.
func (c *Controller) writeNotReady(ctx context.Context, cached *corev1.Pod, now time.Time) (bool, error) {
	pod, err := c.client.CoreV1().Pods(cached.Namespace).Get(ctx, cached.Name, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	if pod.UID != cached.UID {
		return false, nil
	}
	status, changed := podNotReady(pod, now)
	if !changed {
		return false, nil
	}
	pod.Status = status
	if _, err := c.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		return false, err
	}
	return true, nil
}

func (c *Controller) nodeEvent(node *corev1.Node, kind, reason, format string, args ...any) {
	if c.cfg.Recorder == nil {
		return
	}
	// Node events name the node as upstream's do, so that kubectl describe node finds them.
	ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}
	c.cfg.Recorder.Eventf(ref, kind, reason, format, args...)
}

func (c *Controller) podEvent(pod *corev1.Pod, kind, reason, format string, args ...any) {
	if c.cfg.Recorder != nil {
		c.cfg.Recorder.Eventf(pod, kind, reason, format, args...)
	}
}
