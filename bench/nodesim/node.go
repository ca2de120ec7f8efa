package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/connrotation"

	"github.com/idplane/idplane/internal/agent"
	"github.com/idplane/idplane/internal/agent/pods"
)

// simNode is one simulated node: idplane's own agent (agent.RunNode: node status and Lease,
// pods, objects, tokens, volumes, runtime specs) with a client that authenticates as the node,
// writing its pods' files under a scratch root of its own instead of the agent's data directory.
type simNode struct {
	name string
	node agent.Node
	// conns dials the node's connections; closeConnections drops them.
	conns *connrotation.Dialer
}

func newSimNode(i int, name string, base *rest.Config, certPEM, keyPEM []byte, scratch string, cfg config, rec *recorder) (*simNode, error) {
	restConfig, conns, err := nodeRESTConfig(base, certPEM, keyPEM, rec)
	if err != nil {
		return nil, err
	}
	return &simNode{name: name, conns: conns, node: agent.Node{
		RESTConfig: restConfig,
		NodeName:   name,
		RootDir:    filepath.Join(scratch, name),
		Hostname:   name,
		// Distinct addresses, as distinct machines would have; nothing connects to them.
		Addresses:             []net.IP{net.IPv4(10, byte(i>>16), byte(i>>8), byte(i))},
		LeaseDuration:         cfg.leaseDuration,
		StatusUpdateFrequency: cfg.statusReport,
		PerObjectWatches:      cfg.perObjectWatches,
	}}, nil
}

// closeConnections closes the node's connections to the server, idle or not: after its agent
// stopped, so that nothing is left on the server but what the node stored.
func (n *simNode) closeConnections() { n.conns.CloseAll() }

// run runs the agent until ctx ends; an agent that stops before is an error of the level.
func (n *simNode) run(ctx context.Context, rec *recorder) {
	err := agent.RunNode(ctx, n.node)
	if ctx.Err() != nil {
		return
	}
	if err == nil {
		err = fmt.Errorf("stopped")
	}
	rec.noteError(fmt.Errorf("agent of node %s: %w", n.name, err))
}

// readiness follows, as the admin, the pods of a level: a node is ready once the agent wrote
// every one of its pods' volumes, which it says with the pod's CredentialsReady condition.
type readiness struct {
	p plan

	mu sync.Mutex
	// started is when each node's agent started; podsDone when the admin first saw each of a
	// node's pods CredentialsReady.
	started  map[string]time.Time
	podsDone map[string]map[types.UID]time.Time
	ready    int
	allReady chan struct{}
}

func watchReadiness(ctx context.Context, admin kubernetes.Interface, p plan) (*readiness, error) {
	r := &readiness{p: p, started: map[string]time.Time{}, podsDone: map[string]map[types.UID]time.Time{}, allReady: make(chan struct{})}
	factory := informers.NewSharedInformerFactoryWithOptions(admin, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = podLabel + "=" + podLabelValue }))
	informer := factory.Core().V1().Pods().Informer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    r.update,
		UpdateFunc: func(_, obj any) { r.update(obj) },
	}); err != nil {
		return nil, fmt.Errorf("following the pods' readiness: %w", err)
	}
	factory.Start(ctx.Done())
	return r, nil
}

func (r *readiness) update(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || !r.p.ownsNode(pod.Spec.NodeName) || !credentialsReady(pod) {
		return
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	done := r.podsDone[pod.Spec.NodeName]
	if done == nil {
		done = map[types.UID]time.Time{}
		r.podsDone[pod.Spec.NodeName] = done
	}
	if _, seen := done[pod.UID]; seen {
		return
	}
	done[pod.UID] = now
	if len(done) == r.p.podsPerNode {
		r.ready++
		if r.ready == r.p.nodes {
			close(r.allReady)
		}
	}
}

// nodeStarting notes that a node's agent starts now: its pods are bound to it already, so this is
// when they become the agent's to serve.
func (r *readiness) nodeStarting(node string) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started[node] = now
}

// startToReady is, for every pod seen CredentialsReady, the time from its node's start to then.
func (r *readiness) startToReady() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Duration
	for node, done := range r.podsDone {
		start, ok := r.started[node]
		if !ok {
			continue
		}
		for _, at := range done {
			out = append(out, max(at.Sub(start), 0))
		}
	}
	return out
}

func (r *readiness) readyNodes() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ready
}

func credentialsReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == pods.ConditionCredentialsReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
