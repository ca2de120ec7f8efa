// Package pcrcleaner deletes PodCertificateRequests 15 minutes after their creation, as upstream:
// a request is a one-time exchange between a node and a signer, and the node keeps the
// certificate; left alone, requests would pile up with every refresh of every pod.
package pcrcleaner

import (
	"context"
	"fmt"
	"time"

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

const (
	// maxAge is how long a request lives, answered or not.
	maxAge = 15 * time.Minute
	// sweepEvery spaces the sweeps: a request goes at most this long after it is due.
	sweepEvery = 30 * time.Second
)

// Cleaner sweeps the request cache and deletes requests older than maxAge.
type Cleaner struct {
	client kubernetes.Interface
	lister certlisters.PodCertificateRequestLister
	synced cache.InformerSynced
	clock  clock.PassiveClock
}

// New returns the cleaner over the request informer.
func New(client kubernetes.Interface, pcrs certinformers.PodCertificateRequestInformer, clk clock.PassiveClock) *Cleaner {
	return &Cleaner{client: client, lister: pcrs.Lister(), synced: pcrs.Informer().HasSynced, clock: clk}
}

// Run sweeps until ctx ends.
func (c *Cleaner) Run(ctx context.Context) {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		return
	}
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := c.Sweep(ctx); err != nil {
			klog.ErrorS(err, "Cleaning pod certificate requests")
		}
	}, sweepEvery)
}

// Sweep deletes every request that is due now, and goes on past a failed delete.
func (c *Cleaner) Sweep(ctx context.Context) error {
	pcrs, err := c.lister.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("listing pod certificate requests: %w", err)
	}
	now := c.clock.Now()
	var failed []error
	for _, r := range pcrs {
		if now.Sub(r.CreationTimestamp.Time) <= maxAge {
			continue
		}
		// The UID precondition keeps a request recreated under the same name since the cache
		// saw it from being deleted early.
		err := c.client.CertificatesV1().PodCertificateRequests(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &r.UID},
		})
		switch {
		case err == nil:
			klog.V(2).InfoS("Deleted pod certificate request", "podCertificateRequest", klog.KObj(r), "age", now.Sub(r.CreationTimestamp.Time))
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		default:
			failed = append(failed, fmt.Errorf("deleting pod certificate request %s/%s: %w", r.Namespace, r.Name, err))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d deletes failed, the first: %w", len(failed), failed[0])
	}
	return nil
}
