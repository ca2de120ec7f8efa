// Package podcertsigning answers the PodCertificateRequests of idplane's built-in pod
// certificate signers: each request gets one terminal condition, Issued with a certificate,
// Denied with the rule it breaks, or Failed when the signer's CA expires too soon. While the CA
// cannot sign at all (its files halfway through a rotation) a request is left pending and asked
// again. Requests of other signers are left to their signers.
package podcertsigning

import (
	"context"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certinformers "k8s.io/client-go/informers/certificates/v1"
	"k8s.io/client-go/kubernetes"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/idplane/idplane/internal/certificates/podcert"
	"github.com/idplane/idplane/internal/controller/keyworker"
)

// Signer is one signer the controller answers for: its rules and its CA.
type Signer struct {
	Policy podcert.Policy
	CA     podcert.Signer
}

// Config is what the controller signs with.
type Config struct {
	// Signers are the signers to answer for, by signer name.
	Signers map[string]Signer
	Params  podcert.Params
	Clock   clock.PassiveClock
}

// Controller answers pending requests of its signers as their events arrive.
type Controller struct {
	client kubernetes.Interface
	lister certlisters.PodCertificateRequestLister
	synced cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
	cfg    Config
}

// New returns the controller over the PodCertificateRequest informer.
func New(client kubernetes.Interface, pcrs certinformers.PodCertificateRequestInformer, cfg Config) (*Controller, error) {
	c := &Controller{
		client: client,
		lister: pcrs.Lister(),
		synced: pcrs.Informer().HasSynced,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 30*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "podcertsigning"}),
		cfg: cfg,
	}
	enqueue := func(obj any) {
		pcr, ok := obj.(*certificatesv1.PodCertificateRequest)
		if !ok || !c.wants(pcr) {
			return
		}
		if key, err := cache.MetaNamespaceKeyFunc(pcr); err == nil {
			c.queue.Add(key)
		}
	}
	_, err := pcrs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("watching podcertificaterequests: %w", err)
	}
	return c, nil
}

// wants reports whether the request waits for one of the controller's signers: no terminal
// condition and no certificate yet.
func (c *Controller) wants(pcr *certificatesv1.PodCertificateRequest) bool {
	if _, ours := c.cfg.Signers[pcr.Spec.SignerName]; !ours || pcr.Status.CertificateChain != "" {
		return false
	}
	for _, cond := range pcr.Status.Conditions {
		switch cond.Type {
		case certificatesv1.PodCertificateRequestConditionTypeIssued,
			certificatesv1.PodCertificateRequestConditionTypeDenied,
			certificatesv1.PodCertificateRequestConditionTypeFailed:
			return false
		}
	}
	return true
}

// Run answers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	keyworker.Run(ctx, c.queue, c.synced, workers, "Signing pod certificate request", c.sync)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pcr, err := c.lister.PodCertificateRequests(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !c.wants(pcr) {
		return nil
	}
	signer := c.cfg.Signers[pcr.Spec.SignerName]
	denial, err := liveIdentity(ctx, c.client, pcr)
	if err != nil {
		return fmt.Errorf("signing pod certificate request %s: %w", key, err)
	}
	now := c.cfg.Clock.Now()
	var out podcert.Outcome
	if denial != "" {
		out = podcert.Outcome{Condition: certificatesv1.PodCertificateRequestConditionTypeDenied, Reason: ReasonIdentityNotLive, Message: denial}
	} else {
		out = signer.Policy.Decide(c.cfg.Params, signer.CA, pcr, now)
	}
	if out.Retry {
		// Nothing is signed meanwhile; the queue's backoff asks again.
		return fmt.Errorf("signing pod certificate request %s: %s", key, out.Message)
	}
	pcr = pcr.DeepCopy()
	t := metav1.NewTime(now)
	pcr.Status.Conditions = append(pcr.Status.Conditions, metav1.Condition{
		Type: out.Condition, Status: metav1.ConditionTrue, Reason: out.Reason, Message: out.Message,
		LastTransitionTime: t, ObservedGeneration: pcr.Generation,
	})
	if out.Condition == certificatesv1.PodCertificateRequestConditionTypeIssued {
		pcr.Status.CertificateChain = out.CertificateChain
		pcr.Status.NotBefore = &metav1.Time{Time: out.NotBefore}
		pcr.Status.NotAfter = &metav1.Time{Time: out.NotAfter}
		pcr.Status.BeginRefreshAt = &metav1.Time{Time: out.BeginRefreshAt}
	}
	_, err = c.client.CertificatesV1().PodCertificateRequests(namespace).UpdateStatus(ctx, pcr, metav1.UpdateOptions{})
	switch {
	case apierrors.IsNotFound(err):
		// Deleted meanwhile (the cleaner, or its pod's node): nothing to answer.
		return nil
	case apierrors.IsConflict(err):
		// Another writer (a previous leader) got there first; the update event brings it back
		// if it still waits.
		return keyworker.Wait(fmt.Errorf("recording %s of pod certificate request %s: %w", out.Condition, key, err))
	case err != nil:
		return fmt.Errorf("recording %s of pod certificate request %s: %w", out.Condition, key, err)
	}
	return nil
}
