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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	certinformers "k8s.io/client-go/informers/certificates/v1"
	"k8s.io/client-go/kubernetes"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Ages after which a CSR goes, as upstream's cleaner.
const (
	answeredTTL = time.Hour      // approved (and issued), denied or failed
	pendingTTL  = 24 * time.Hour // never answered
	// sweepEvery spaces the sweeps; the ages above are coarse enough.
	sweepEvery = time.Minute
)

// Cleaner sweeps the CSR cache and deletes what has outlived its use.
type Cleaner struct {
	client kubernetes.Interface
	lister certlisters.CertificateSigningRequestLister
	synced cache.InformerSynced
	clock  clock.PassiveClock
}

// New returns the cleaner over the CSR informer.
func New(client kubernetes.Interface, csrs certinformers.CertificateSigningRequestInformer, clk clock.PassiveClock) *Cleaner {
	return &Cleaner{client: client, lister: csrs.Lister(), synced: csrs.Informer().HasSynced, clock: clk}
}

// Run sweeps until ctx ends.
func (c *Cleaner) Run(ctx context.Context) {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		return
	}
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := c.Sweep(ctx); err != nil {
			klog.ErrorS(err, "Cleaning certificate signing requests")
		}
	}, sweepEvery)
}

// Sweep deletes every CSR that is due now.
func (c *Cleaner) Sweep(ctx context.Context) error {
	csrs, err := c.lister.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("listing certificate signing requests: %w", err)
	}
	now := c.clock.Now()
	for _, csr := range csrs {
		why := due(csr, now)
		if why == "" {
			continue
		}
		// The precondition keeps a CSR changed since the cache saw it, and so perhaps no
		// longer due, from being deleted.
		err := c.client.CertificatesV1().CertificateSigningRequests().Delete(ctx, csr.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &csr.UID, ResourceVersion: &csr.ResourceVersion},
		})
		switch {
		case err == nil:
			klog.V(2).InfoS("Deleted certificate signing request", "csr", csr.Name, "reason", why)
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		default:
			return fmt.Errorf("deleting CSR %q: %w", csr.Name, err)
		}
	}
	return nil
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
