package snapshot

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	snapshotsTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "idplane",
		Subsystem:      "snapshot",
		Name:           "scheduled_total",
		Help:           "Scheduled snapshots taken, by result (success or failure).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	snapshotDuration = metrics.NewHistogram(&metrics.HistogramOpts{
		Namespace:      "idplane",
		Subsystem:      "snapshot",
		Name:           "duration_seconds",
		Help:           "Time taken by a successful scheduled snapshot, from the etcd snapshot to the archive in place.",
		Buckets:        metrics.ExponentialBuckets(0.1, 2, 14),
		StabilityLevel: metrics.ALPHA,
	})
	lastSuccess = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace:      "idplane",
		Subsystem:      "snapshot",
		Name:           "last_success_timestamp_seconds",
		Help:           "Unix time of the last successful scheduled snapshot.",
		StabilityLevel: metrics.ALPHA,
	})
)

var registerMetrics sync.Once

// RegisterMetrics registers the snapshot metrics with the registry /metrics serves.
func RegisterMetrics() {
	registerMetrics.Do(func() {
		legacyregistry.MustRegister(snapshotsTotal, snapshotDuration, lastSuccess)
	})
}
