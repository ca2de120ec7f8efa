package validation

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func caPEM(t *testing.T, isCA bool) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour),
		BasicConstraintsValid: true, IsCA: isCA, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func TestValidateClusterTrustBundle(t *testing.T) {
	ca, other, leaf := caPEM(t, true), caPEM(t, true), caPEM(t, false)
	bundle := func(name, signer, pemData string) *certificatesv1.ClusterTrustBundle {
		return &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: pemData}}
	}
	tests := []struct {
		name string
		b    *certificatesv1.ClusterTrustBundle
		want []want
	}{
		{"unlinked", bundle("roots", "", ca), nil},
		{"linked", bundle("example.com:s:v1", "example.com/s", ca), nil},
		{"two CAs with text between", bundle("roots", "", ca+"comment\n"+other), nil},
		{"colon without a signer", bundle("example.com:s:v1", "", ca), []want{invalid("metadata.name")}},
		{"linked without the prefix", bundle("v1", "example.com/s", ca), []want{invalid("metadata.name")}},
		{"linked with an empty suffix", bundle("example.com:s:", "example.com/s", ca), []want{invalid("metadata.name")}},
		{"bad signer", bundle("example:v1", "example", ca), []want{invalid("spec.signerName")}},
		{"empty bundle", bundle("roots", "", ""), []want{required("spec.trustBundle")}},
		{"not PEM", bundle("roots", "", "junk"), []want{invalid("spec.trustBundle")}},
		{"a leaf", bundle("roots", "", leaf), []want{invalid("spec.trustBundle")}},
		{"duplicate", bundle("roots", "", ca+ca), []want{invalid("spec.trustBundle")}},
		{"a key block", bundle("roots", "", ca+string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1}}))), []want{invalid("spec.trustBundle")}},
		{"too large", bundle("roots", "", strings.Repeat("x", maxTrustBundleBytes+1)), []want{tooLong("spec.trustBundle")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidateClusterTrustBundle(tc.b), tc.want...)
		})
	}
	old := bundle("example.com:s:v1", "example.com/s", ca)
	moved := old.DeepCopy()
	moved.ResourceVersion, old.ResourceVersion = "1", "1"
	moved.Spec.SignerName = "example.com/t"
	expectErrors(t, ValidateClusterTrustBundleUpdate(moved, old), invalid("spec.signerName"))
}
