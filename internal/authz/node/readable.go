package node

import "context"

// ReadableChange says that a node gained (Readable) or lost its last path to a Secret or a
// ConfigMap: the moment a GET of that object by the node becomes allowed or refused.
type ReadableChange struct {
	Node, Namespace, Name string
	// ConfigMap is set for a ConfigMap, clear for a Secret.
	ConfigMap bool
	Readable  bool
}

// SubscribeReadable has fn hear, in order, every (node, secret or configmap) pair the graph
// holds now, as Readable changes, and then every later change, each as the graph applies it.
// fn runs under the graph's write lock: it must be quick and must not call back into the graph.
// It replaces any earlier subscriber; nil ends the subscription.
func (g *Graph) SubscribeReadable(fn func(ReadableChange)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.readable = fn
	if fn == nil {
		return
	}
	for _, k := range []kind{kindSecret, kindConfigMap} {
		g.reach.eachLocked(k, func(node, namespace, name string) {
			fn(ReadableChange{Node: node, Namespace: namespace, Name: name, ConfigMap: k == kindConfigMap, Readable: true})
		})
	}
}

func (g *Graph) tellReadableLocked(node string, k objKey, readable bool) {
	if k.kind != kindSecret && k.kind != kindConfigMap {
		return
	}
	g.readable(ReadableChange{Node: node, Namespace: k.namespace, Name: k.name, ConfigMap: k.kind == kindConfigMap, Readable: readable})
}

// SubscribeReadable has fn hear the graph's secret and configmap paths; see
// Graph.SubscribeReadable.
func (a *Authorizer) SubscribeReadable(fn func(ReadableChange)) { a.graph.SubscribeReadable(fn) }

// WaitFresh waits, as a refusal does, until the graph has applied what storage held when it was
// called, so that what a node may read is not judged from a lagging graph. It reports whether
// the graph caught up; without a freshness source it returns false at once.
func (a *Authorizer) WaitFresh(ctx context.Context) bool {
	if a.fresh == nil {
		return false
	}
	return a.fresh.WaitFresh(ctx)
}
