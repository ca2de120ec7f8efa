package podcertificaterequest

import (
	"context"
	"slices"
	"sync"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/utils/clock"
)

const (
	metricsNamespace = "apiserver"
	metricsSubsystem = "pod_certificate_requests"
)

var (
	requested = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "requested_total",
		Help:           "PodCertificateRequests created, by signer (the built-in signers by name, others as \"other\").",
		StabilityLevel: metrics.ALPHA,
	}, []string{"signerName"})
	answered = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "answered_total",
		Help:           "PodCertificateRequests a signer answered through /status, by signer and condition (Issued, Denied or Failed).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"signerName", "condition"})
	issuance = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "issuance_duration_seconds",
		Help:           "Time from a PodCertificateRequest's creation to its issued certificate, by signer.",
		Buckets:        []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		StabilityLevel: metrics.ALPHA,
	}, []string{"signerName"})
	registerMetrics sync.Once
)

// RegisterMetrics registers the registry's metrics with the registry /metrics serves.
func RegisterMetrics() {
	registerMetrics.Do(func() { legacyregistry.MustRegister(requested, answered, issuance) })
}

// namedSigners are the signers whose names label the metrics: idplane's own. Anyone who may
// create a request may name any signer, so other names share one label value.
var namedSigners = []string{"idplane.io/spiffe", "kubernetes.io/kube-apiserver-client-pod"}

func signerLabel(name string) string {
	if slices.Contains(namedSigners, name) {
		return name
	}
	return "other"
}

func countRequested(obj runtime.Object, _ *metav1.CreateOptions) {
	if r, ok := obj.(*certificatesv1.PodCertificateRequest); ok {
		requested.WithLabelValues(signerLabel(r.Spec.SignerName)).Inc()
	}
}

// countAnswers returns the status store's BeginUpdate: once an update that moves a request to
// Issued, Denied or Failed succeeds, it is counted, and an issue's time since creation observed.
func countAnswers(clk clock.PassiveClock) registry.BeginUpdateFunc {
	return func(_ context.Context, obj, old runtime.Object, _ *metav1.UpdateOptions) (registry.FinishFunc, error) {
		r, ok := obj.(*certificatesv1.PodCertificateRequest)
		oldR, okOld := old.(*certificatesv1.PodCertificateRequest)
		noop := func(context.Context, bool) {}
		if !ok || !okOld || answer(oldR) != "" {
			return noop, nil
		}
		condition := answer(r)
		if condition == "" {
			return noop, nil
		}
		signer := signerLabel(oldR.Spec.SignerName)
		created := oldR.CreationTimestamp.Time
		return func(_ context.Context, success bool) {
			if !success {
				return
			}
			answered.WithLabelValues(signer, condition).Inc()
			if condition == certificatesv1.PodCertificateRequestConditionTypeIssued {
				issuance.WithLabelValues(signer).Observe(clk.Since(created).Seconds())
			}
		}, nil
	}
}

// answer is the request's terminal condition, or "" while it is pending.
func answer(r *certificatesv1.PodCertificateRequest) string {
	for _, c := range r.Status.Conditions {
		switch c.Type {
		case certificatesv1.PodCertificateRequestConditionTypeIssued, certificatesv1.PodCertificateRequestConditionTypeDenied, certificatesv1.PodCertificateRequestConditionTypeFailed:
			if c.Status == metav1.ConditionTrue {
				return c.Type
			}
		}
	}
	return ""
}
