package serviceaccount

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	legacyTokens = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem:      "serviceaccount",
		Name:           "legacy_tokens_total",
		Help:           "Cumulative legacy service-account tokens (from secrets) used.",
		StabilityLevel: metrics.ALPHA,
	})
	staleTokens = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem:      "serviceaccount",
		Name:           "stale_tokens_total",
		Help:           "Cumulative bound service-account tokens used past their warnafter time.",
		StabilityLevel: metrics.ALPHA,
	})
	validTokens = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem:      "serviceaccount",
		Name:           "valid_tokens_total",
		Help:           "Cumulative bound service-account tokens used within their requested lifetime.",
		StabilityLevel: metrics.ALPHA,
	})
	tokenRequests = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      "serviceaccount",
		Name:           "token_requests_total",
		Help:           "TokenRequests answered, by HTTP status code.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"code"})
	signingDuration = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem:      "serviceaccount",
		Name:           "token_signing_duration_seconds",
		Help:           "Time taken to sign one bound service-account token.",
		Buckets:        metrics.ExponentialBuckets(0.00001, 4, 10),
		StabilityLevel: metrics.ALPHA,
	})
)

var registerMetrics sync.Once

// RegisterMetrics registers the token metrics with the registry /metrics serves.
func RegisterMetrics() {
	registerMetrics.Do(func() {
		legacyregistry.MustRegister(legacyTokens, staleTokens, validTokens, tokenRequests, signingDuration)
	})
}

// CountTokenRequest records one answered TokenRequest by its HTTP status code.
func CountTokenRequest(code string) { tokenRequests.WithLabelValues(code).Inc() }
