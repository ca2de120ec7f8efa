// Package trustbundlepublisher publishes each built-in signer's CA as a signer-linked
// ClusterTrustBundle, so that clients discover trust anchors through the API, and keeps it
// current when the CA files change.
package trustbundlepublisher

import (
	"context"
	"fmt"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// checkEvery spaces the checks of the CA files and of the published bundles.
const checkEvery = 10 * time.Second

// CA is what the publisher reads of a signer's CA.
type CA interface {
	CertPEM() []byte
}

// Publisher keeps one bundle per signer.
type Publisher struct {
	client  kubernetes.Interface
	signers map[string]CA
}

// New returns the publisher of the given signers' CAs.
func New(client kubernetes.Interface, signers map[string]CA) *Publisher {
	return &Publisher{client: client, signers: signers}
}

// BundleName is the bundle a signer's CA is published as: the signer's name with ':' for '/', then
// ":idplane".
func BundleName(signer string) string {
	return strings.ReplaceAll(signer, "/", ":") + ":idplane"
}

// Run publishes until ctx ends.
func (p *Publisher) Run(ctx context.Context) {
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := p.Publish(ctx); err != nil {
			klog.ErrorS(err, "Publishing signer trust bundles")
		}
	}, checkEvery)
}

// Publish creates or updates every signer's bundle to hold its current CA.
func (p *Publisher) Publish(ctx context.Context) error {
	bundles := p.client.CertificatesV1().ClusterTrustBundles()
	for signer, ca := range p.signers {
		certPEM := ca.CertPEM()
		name := BundleName(signer)
		existing, err := bundles.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = bundles.Create(ctx, &certificatesv1.ClusterTrustBundle{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec:       certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: string(certPEM)},
			}, metav1.CreateOptions{})
		case err == nil && existing.Spec.TrustBundle != string(certPEM):
			existing.Spec.TrustBundle = string(certPEM)
			_, err = bundles.Update(ctx, existing, metav1.UpdateOptions{})
		}
		if err != nil {
			return fmt.Errorf("publishing the trust bundle of %s: %w", signer, err)
		}
	}
	return nil
}
