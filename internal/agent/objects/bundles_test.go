package objects

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	pemMu    sync.Mutex
	pemCache = map[string]string{}
)

// pemOf is a self-signed certificate named cn, the same for the same name within a test run.
func pemOf(t *testing.T, cn string) string {
	t.Helper()
	pemMu.Lock()
	defer pemMu.Unlock()
	if p, ok := pemCache[cn]; ok {
		return p
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1<<32, 0), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	pemCache[cn] = p
	return p
}

func TestSelectBundles(t *testing.T) {
	bundle := func(name, signer string, labels map[string]string, certs ...string) *certificatesv1.ClusterTrustBundle {
		return &certificatesv1.ClusterTrustBundle{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec:       certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: strings.Join(certs, "")},
		}
	}
	one, two, three := pemOf(t, "one"), pemOf(t, "two"), pemOf(t, "three")
	all := []*certificatesv1.ClusterTrustBundle{
		bundle("z-ex:a:1", "ex.com/a", map[string]string{"tier": "x"}, two, one),
		bundle("a-ex:a:2", "ex.com/a", map[string]string{"tier": "y"}, one, three),
		bundle("plain", "", nil, three),
	}
	name := func(s string) *string { return &s }
	tests := []struct {
		name     string
		source   corev1.ClusterTrustBundleProjection
		want     string
		notFound bool
	}{
		{name: "by name", source: corev1.ClusterTrustBundleProjection{Name: name("plain")}, want: three},
		{name: "by name, missing", source: corev1.ClusterTrustBundleProjection{Name: name("nope")}, notFound: true},
		{name: "by signer, no selector matches nothing", source: corev1.ClusterTrustBundleProjection{SignerName: name("ex.com/a")}, notFound: true},
		{name: "by signer, empty selector: all, by bundle name, each certificate once",
			source: corev1.ClusterTrustBundleProjection{SignerName: name("ex.com/a"), LabelSelector: &metav1.LabelSelector{}}, want: one + three + two},
		{name: "by signer and label",
			source: corev1.ClusterTrustBundleProjection{SignerName: name("ex.com/a"), LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "x"}}}, want: two + one},
		{name: "by signer, no bundle of that signer",
			source: corev1.ClusterTrustBundleProjection{SignerName: name("ex.com/b"), LabelSelector: &metav1.LabelSelector{}}, notFound: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SelectBundles(all, &tc.source)
			if tc.notFound {
				if !apierrors.IsNotFound(err) {
					t.Fatalf("err = %v, want NotFound", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
