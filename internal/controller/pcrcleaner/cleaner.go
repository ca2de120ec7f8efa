// Package pcrcleaner deletes PodCertificateRequests 15 minutes after their creation, as upstream:
// a request is a one-time exchange between a node and a signer, and the node keeps the
// certificate; left alone, requests would pile up with every refresh of every pod.
package pcrcleaner

import (
	"context"
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

const (
	// maxAge is how long a request lives, answered or not.
	maxAge = 15 * time.Minute
	// sweepEvery spaces the sweeps: a request goes at most this long after it is due.
	sweepEvery = 30 * time.Second
)

// New returns the cleaner over the request informer.
func New(client kubernetes.Interface, pcrs certinformers.PodCertificateRequestInformer, clk clock.PassiveClock) *sweeper.Sweeper[*certificatesv1.PodCertificateRequest] {
	lister := pcrs.Lister()
	return &sweeper.Sweeper[*certificatesv1.PodCertificateRequest]{
		Kind:   "pod certificate request",
		Synced: pcrs.Informer().HasSynced,
		Clock:  clk,
		Every:  sweepEvery,
		List:   func() ([]*certificatesv1.PodCertificateRequest, error) { return lister.List(labels.Everything()) },
		Due:    due,
		// The UID precondition keeps a request recreated under the same name since the cache
		// saw it from being deleted early.
		Delete: func(ctx context.Context, r *certificatesv1.PodCertificateRequest, pre *metav1.Preconditions) error {
			return client.CertificatesV1().PodCertificateRequests(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{Preconditions: pre})
		},
	}
}

// due: every request goes maxAge after its creation, answered or not.
func due(r *certificatesv1.PodCertificateRequest, now time.Time) string {
	if age := now.Sub(r.CreationTimestamp.Time); age > maxAge {
		return fmt.Sprintf("created %v ago", age.Round(time.Second))
	}
	return ""
}
