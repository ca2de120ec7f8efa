// Package csrcleaner deletes CertificateSigningRequests nobody needs any more: answered ones an
// hour after the answer, pending ones after a day, and any whose certificate has expired.
package csrcleaner

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	certinformers "k8s.io/client-go/informers/certificates/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/idplane/idplane/internal/controller/sweeper"
)

// Ages after which a CSR goes, as upstream's cleaner.
const (
	answeredTTL = time.Hour      // approved (and issued), denied or failed
	pendingTTL  = 24 * time.Hour // never answered
	// sweepEvery spaces the sweeps; the ages above are coarse enough.
	sweepEvery = time.Minute
)

// New returns the cleaner over the CSR informer.
func New(client kubernetes.Interface, csrs certinformers.CertificateSigningRequestInformer, clk clock.PassiveClock) *sweeper.Sweeper[*certificatesv1.CertificateSigningRequest] {
	lister := csrs.Lister()
	return &sweeper.Sweeper[*certificatesv1.CertificateSigningRequest]{
		Kind:   "certificate signing request",
		Synced: csrs.Informer().HasSynced,
		Clock:  clk,
		Every:  sweepEvery,
		List:   func() ([]*certificatesv1.CertificateSigningRequest, error) { return lister.List(labels.Everything()) },
		Due:    due,
		// The resourceVersion precondition keeps a CSR changed since the cache saw it, and so
		// perhaps no longer due (answered since), from being deleted.
		MatchResourceVersion: true,
		Delete: func(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, pre *metav1.Preconditions) error {
			return client.CertificatesV1().CertificateSigningRequests().Delete(ctx, csr.Name, metav1.DeleteOptions{Preconditions: pre})
		},
	}
}

// due says why the CSR should go now, or "" when it stays.
func due(csr *certificatesv1.CertificateSigningRequest, now time.Time) string {
	if expired(csr.Status.Certificate, now) {
		return "its certificate has expired"
	}
	answered := false
	for _, cond := range csr.Status.Conditions {
		switch cond.Type {
		case certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			answered = true
			at := cond.LastUpdateTime.Time
			if at.IsZero() {
				at = csr.CreationTimestamp.Time
			}
			if now.Sub(at) > answeredTTL {
				return fmt.Sprintf("%s more than %v ago", cond.Type, answeredTTL)
			}
		}
	}
	if !answered && now.Sub(csr.CreationTimestamp.Time) > pendingTTL {
		return fmt.Sprintf("pending for more than %v", pendingTTL)
	}
	return ""
}

// expired reports whether the first certificate of an issued chain is past its end.
func expired(certPEM []byte, now time.Time) bool {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return false
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	return err == nil && now.After(cert.NotAfter)
}
