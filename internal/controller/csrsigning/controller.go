// Package csrsigning signs approved CertificateSigningRequests for the built-in kubernetes.io
// signers: a request its signer's policy allows gets a certificate, one it does not gets a Failed
// condition naming the rule. Other signer names are left to external signers.
package csrsigning

import (
	"context"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certinformers "k8s.io/client-go/informers/certificates/v1"
	"k8s.io/client-go/kubernetes"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/idplane/idplane/internal/certificates"
	"github.com/idplane/idplane/internal/controller/keyworker"
)

// Signer is one signer the controller answers for: its rules and its CA.
type Signer struct {
	Policy certificates.Policy
	CA     *certificates.CA
}

// Config is what the controller signs with.
type Config struct {
	// Signers are the signers to answer for, by signer name.
	Signers map[string]Signer
	// MaxDuration caps every certificate's lifetime (--cluster-signing-duration).
	MaxDuration time.Duration
	Clock       clock.PassiveClock
}

// Controller signs approved CSRs of its signers as their events arrive.
type Controller struct {
	client kubernetes.Interface
	lister certlisters.CertificateSigningRequestLister
	synced cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
	cfg    Config
}

// New returns the controller over the CSR informer.
func New(client kubernetes.Interface, csrs certinformers.CertificateSigningRequestInformer, cfg Config) (*Controller, error) {
	RegisterMetrics()
	c := &Controller{
		client: client,
		lister: csrs.Lister(),
		synced: csrs.Informer().HasSynced,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 30*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "csrsigning"}),
		cfg: cfg,
	}
	enqueue := func(obj any) {
		if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok && c.wants(csr) {
			c.queue.Add(csr.Name)
		}
	}
	_, err := csrs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("watching certificatesigningrequests: %w", err)
	}
	return c, nil
}

// wants reports whether the CSR waits for one of the controller's signers: approved, not denied
// or failed, no certificate yet.
func (c *Controller) wants(csr *certificatesv1.CertificateSigningRequest) bool {
	if _, ours := c.cfg.Signers[csr.Spec.SignerName]; !ours || len(csr.Status.Certificate) > 0 {
		return false
	}
	approved := false
	for _, cond := range csr.Status.Conditions {
		switch cond.Type {
		case certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			return false
		case certificatesv1.CertificateApproved:
			approved = true
		}
	}
	return approved
}

// Run signs until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	keyworker.Run(ctx, c.queue, c.synced, workers, "Signing certificate signing request", c.sync)
}

func (c *Controller) sync(ctx context.Context, name string) error {
	csr, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !c.wants(csr) {
		return nil
	}
	signer := c.cfg.Signers[csr.Spec.SignerName]
	csr = csr.DeepCopy()
	now := c.cfg.Clock.Now()
	start := time.Now()
	parsed, err := certificates.ParseRequest(csr.Spec.Request)
	req := &certificates.Request{CSR: parsed, Usages: csr.Spec.Usages}
	if err == nil {
		err = signer.Policy.Check(req)
	}
	if err != nil {
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue, Reason: "SignerValidationFailure",
			Message: err.Error(), LastUpdateTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now),
		})
		_, err = c.client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("recording that CSR %q breaks its signer's rules: %w", name, err)
		}
		failed.WithLabelValues(csr.Spec.SignerName).Inc()
		return nil
	}
	cert, err := signer.CA.Sign(certificates.SignParams{Request: req, ExpirationSeconds: csr.Spec.ExpirationSeconds, MaxDuration: c.cfg.MaxDuration, Now: now})
	if err != nil {
		return fmt.Errorf("signing CSR %q: %w", name, err)
	}
	csr.Status.Certificate = cert
	if _, err := c.client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("storing the certificate of CSR %q: %w", name, err)
	}
	issued.WithLabelValues(csr.Spec.SignerName).Inc()
	signingDuration.WithLabelValues(csr.Spec.SignerName).Observe(time.Since(start).Seconds())
	return nil
}
