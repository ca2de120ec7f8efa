package node

import (
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// graphOp is a graph operation, as the action metric labels it.
type graphOp uint8

const (
	opAddPod graphOp = iota
	opDeletePod
	opAddPV
	opDeletePV
	opAddVolumeAttachment
	opDeleteVolumeAttachment
	opAddPodCertificateRequest
	opDeletePodCertificateRequest
	numGraphOps
)

var graphOpNames = [numGraphOps]string{
	opAddPod:                      "AddPod",
	opDeletePod:                   "DeletePod",
	opAddPV:                       "AddPV",
	opDeletePV:                    "DeletePV",
	opAddVolumeAttachment:         "AddVolumeAttachment",
	opDeleteVolumeAttachment:      "DeleteVolumeAttachment",
	opAddPodCertificateRequest:    "AddPodCertificateRequest",
	opDeletePodCertificateRequest: "DeletePodCertificateRequest",
}

var (
	graphActionsDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace:      "apiserver",
		Subsystem:      "node_authorizer",
		Name:           "graph_actions_duration_seconds",
		Help:           "Time the Node authorizer's graph took to apply one change, by operation.",
		Buckets:        metrics.ExponentialBuckets(0.000001, 4, 10),
		StabilityLevel: metrics.ALPHA,
	}, []string{"operation"})
	graphObjects = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      "apiserver",
		Subsystem:      "node_authorizer",
		Name:           "graph_objects",
		Help:           "Objects the Node authorizer's graph holds, by kind: bound pods, bound persistent volumes, attached volume attachments, pod certificate requests.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"kind"})
	freshnessWaits = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "apiserver",
		Subsystem:      "node_authorizer",
		Name:           "graph_freshness_waits_total",
		Help:           "Node requests about to be refused that first waited for the graph to catch up with the store, by result: caught_up, timeout, cancelled, or unavailable (the store's progress could not be read, so the request was decided at once).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	freshnessWaitDuration = metrics.NewHistogram(&metrics.HistogramOpts{
		Namespace:      "apiserver",
		Subsystem:      "node_authorizer",
		Name:           "graph_freshness_wait_duration_seconds",
		Help:           "How long node requests about to be refused waited for the graph to catch up with the store.",
		Buckets:        metrics.ExponentialBuckets(0.0001, 2, 13),
		StabilityLevel: metrics.ALPHA,
	})
	graphPairs = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace:      "apiserver",
		Subsystem:      "node_authorizer",
		Name:           "graph_reachable_pairs",
		Help:           "Node and object pairs the Node authorizer's graph holds a path between: what decisions look up.",
		StabilityLevel: metrics.ALPHA,
	})
)

// graphMetrics are the series a graph change updates, looked up once at registration so that a
// change costs no label lookup. Nil until RegisterMetrics: a graph used as a library without
// the registry records nothing.
type graphMetrics struct {
	actions                                 [numGraphOps]metrics.ObserverMetric
	pods, pvs, attachments, pcrs, reachable metrics.GaugeMetric
	waits                                   [numWaitResults]metrics.CounterMetric
	waitDuration                            metrics.ObserverMetric
}

// waitResult is how a freshness wait ended.
type waitResult uint8

const (
	waitCaughtUp waitResult = iota
	waitTimeout
	waitCancelled
	waitUnavailable
	numWaitResults
)

var waitResultNames = [numWaitResults]string{
	waitCaughtUp:    "caught_up",
	waitTimeout:     "timeout",
	waitCancelled:   "cancelled",
	waitUnavailable: "unavailable",
}

var (
	registerMetrics sync.Once
	liveMetrics     atomic.Pointer[graphMetrics]
)

// RegisterMetrics registers the graph's and the freshness wait's metrics with the registry
// /metrics serves.
func RegisterMetrics() {
	registerMetrics.Do(func() {
		legacyregistry.MustRegister(graphActionsDuration, graphObjects, graphPairs, freshnessWaits, freshnessWaitDuration)
		m := &graphMetrics{
			pods:         graphObjects.WithLabelValues("pods"),
			pvs:          graphObjects.WithLabelValues("persistentvolumes"),
			attachments:  graphObjects.WithLabelValues("volumeattachments"),
			pcrs:         graphObjects.WithLabelValues("podcertificaterequests"),
			reachable:    graphPairs,
			waitDuration: freshnessWaitDuration,
		}
		for op, name := range graphOpNames {
			m.actions[op] = graphActionsDuration.WithLabelValues(name)
		}
		for r, name := range waitResultNames {
			m.waits[r] = freshnessWaits.WithLabelValues(name)
		}
		liveMetrics.Store(m)
	})
}

// observeAction records how long one graph operation took since start.
func observeAction(op graphOp, start time.Time) {
	if m := liveMetrics.Load(); m != nil {
		m.actions[op].Observe(time.Since(start).Seconds())
	}
}

// recordSizesLocked publishes the graph's sizes; the caller holds the write lock. Several graphs
// in one process (tests) share the metrics: the last one changed is reported.
func (g *Graph) recordSizesLocked() {
	m := liveMetrics.Load()
	if m == nil {
		return
	}
	m.pods.Set(float64(len(g.pods)))
	m.pvs.Set(float64(len(g.pvs)))
	m.attachments.Set(float64(len(g.attachments)))
	m.pcrs.Set(float64(len(g.pcrs)))
	m.reachable.Set(float64(g.reach.live))
}

// observeWait records a freshness wait that began at start.
func observeWait(r waitResult, start time.Time) {
	if m := liveMetrics.Load(); m != nil {
		m.waits[r].Inc()
		m.waitDuration.Observe(time.Since(start).Seconds())
	}
}
