package certificatesigningrequest

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	requestedDuration = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "apiserver", Subsystem: "certificates_registry", Name: "csr_requested_duration_total",
		Help:           "CertificateSigningRequests created with spec.expirationSeconds, by signer (kubernetes.io signers by name, others as \"other\").",
		StabilityLevel: metrics.ALPHA,
	}, []string{"signerName"})
	honoredDuration = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "apiserver", Subsystem: "certificates_registry", Name: "csr_honored_duration_total",
		Help:           "Certificates issued for CertificateSigningRequests with spec.expirationSeconds whose lifetime honors it, by signer.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"signerName"})
	registerMetrics sync.Once
)

// honorTolerance is how far a certificate's lifetime may exceed the duration asked for and still
// honor it: signers backdate certificates a few minutes against clock skew.
const honorTolerance = 5*time.Minute + time.Minute

// RegisterMetrics registers the CSR registry's metrics with the registry /metrics serves.
func RegisterMetrics() {
	registerMetrics.Do(func() { legacyregistry.MustRegister(requestedDuration, honoredDuration) })
}

// signerLabel keeps the label's values bounded: anyone may name any signer.
func signerLabel(name string) string {
	if strings.HasPrefix(name, "kubernetes.io/") {
		return name
	}
	return "other"
}

func countRequestedDuration(obj runtime.Object, _ *metav1.CreateOptions) {
	if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok && csr.Spec.ExpirationSeconds != nil {
		requestedDuration.WithLabelValues(signerLabel(csr.Spec.SignerName)).Inc()
	}
}

// countHonoredDuration counts, once a status update that issues the certificate succeeds, whether
// the certificate's lifetime honors the duration asked for.
func countHonoredDuration(_ context.Context, obj, old runtime.Object, _ *metav1.UpdateOptions) (registry.FinishFunc, error) {
	csr, ok := obj.(*certificatesv1.CertificateSigningRequest)
	oldCSR, okOld := old.(*certificatesv1.CertificateSigningRequest)
	if !ok || !okOld || len(oldCSR.Status.Certificate) > 0 || len(csr.Status.Certificate) == 0 || csr.Spec.ExpirationSeconds == nil {
		return func(context.Context, bool) {}, nil
	}
	honored := honors(csr.Status.Certificate, time.Duration(*csr.Spec.ExpirationSeconds)*time.Second)
	signer := signerLabel(csr.Spec.SignerName)
	return func(_ context.Context, success bool) {
		if success && honored {
			honoredDuration.WithLabelValues(signer).Inc()
		}
	}, nil
}

func honors(certPEM []byte, asked time.Duration) bool {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return false
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	return err == nil && cert.NotAfter.Sub(cert.NotBefore) <= asked+honorTolerance
}
