package objects

import (
	"bytes"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// SelectBundles returns the PEM certificates of the bundles source selects: the one it names, or
// every bundle of its signer whose labels match its selector (no selector matches none, an empty
// one all). Certificates appear once each, ordered by bundle name then position, so the file only
// changes when the set does. NotFound when nothing matches.
func SelectBundles(bundles []*certificatesv1.ClusterTrustBundle, source *corev1.ClusterTrustBundleProjection) ([]byte, error) {
	var chosen []*certificatesv1.ClusterTrustBundle
	switch {
	case source.Name != nil:
		for _, b := range bundles {
			if b.Name == *source.Name {
				chosen = append(chosen, b)
			}
		}
		if len(chosen) == 0 {
			return nil, apierrors.NewNotFound(certificatesv1.Resource("clustertrustbundles"), *source.Name)
		}
	case source.SignerName != nil:
		if source.LabelSelector != nil {
			selector, err := metav1.LabelSelectorAsSelector(source.LabelSelector)
			if err != nil {
				return nil, fmt.Errorf("cluster trust bundles of signer %q: bad label selector: %w", *source.SignerName, err)
			}
			for _, b := range bundles {
				if b.Spec.SignerName == *source.SignerName && selector.Matches(labels.Set(b.Labels)) {
					chosen = append(chosen, b)
				}
			}
		}
		if len(chosen) == 0 {
			return nil, apierrors.NewNotFound(certificatesv1.Resource("clustertrustbundles"), "signer "+*source.SignerName)
		}
	default:
		return nil, fmt.Errorf("cluster trust bundle projection names neither a bundle nor a signer")
	}
	slices.SortFunc(chosen, func(a, b *certificatesv1.ClusterTrustBundle) int { return strings.Compare(a.Name, b.Name) })
	var out bytes.Buffer
	seen := map[string]bool{}
	for _, b := range chosen {
		rest := []byte(b.Spec.TrustBundle)
		for {
			var block *pem.Block
			block, rest = pem.Decode(rest)
			if block == nil {
				break
			}
			if block.Type != "CERTIFICATE" || seen[string(block.Bytes)] {
				continue
			}
			seen[string(block.Bytes)] = true
			if err := pem.Encode(&out, &pem.Block{Type: block.Type, Bytes: block.Bytes}); err != nil {
				return nil, fmt.Errorf("encoding cluster trust bundle %q: %w", b.Name, err)
			}
		}
	}
	return out.Bytes(), nil
}
