package csrsigning

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	issued = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "idplane", Subsystem: "certificates_signer", Name: "issued_total",
		Help: "Certificates the built-in signers issued, by signer.", StabilityLevel: metrics.ALPHA,
	}, []string{"signer"})
	failed = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "idplane", Subsystem: "certificates_signer", Name: "failed_total",
		Help: "Approved CSRs the built-in signers refused (Failed condition), by signer.", StabilityLevel: metrics.ALPHA,
	}, []string{"signer"})
	signingDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: "idplane", Subsystem: "certificates_signer", Name: "signing_duration_seconds",
		Help:    "Time from reading an approved CSR to storing its certificate, by signer.",
		Buckets: metrics.ExponentialBuckets(0.0005, 2, 14), StabilityLevel: metrics.ALPHA,
	}, []string{"signer"})
	registerMetrics sync.Once
)

// RegisterMetrics registers the signers' metrics with the registry /metrics serves.
func RegisterMetrics() {
	registerMetrics.Do(func() { legacyregistry.MustRegister(issued, failed, signingDuration) })
}
