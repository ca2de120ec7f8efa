// Package pcrtest makes the parts of PodCertificateRequests tests need: keys of every type the
// API accepts (made once per test binary), stub PKCS#10 requests over them, and certificates
// issued to a request's key by a throwaway CA.
package pcrtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StubRequest is an empty PKCS#10 request (DER) signed with key, as a kubelet makes one.
func StubRequest(t testing.TB, key crypto.Signer) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		t.Fatalf("making a stub request: %v", err)
	}
	return der
}

// Request is a valid request (after defaulting) for pod p-1 in ns-1 on node n-1, over key.
func Request(t testing.TB, key crypto.Signer) *certificatesv1.PodCertificateRequest {
	t.Helper()
	maxExpiration := int32(86400)
	return &certificatesv1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "pcr-1", Namespace: "ns-1"},
		Spec: certificatesv1.PodCertificateRequestSpec{
			SignerName: "example.com/signer",
			PodName:    "p-1", PodUID: "pod-uid-1",
			ServiceAccountName: "sa-1", ServiceAccountUID: "sa-uid-1",
			NodeName: "n-1", NodeUID: "node-uid-1",
			MaxExpirationSeconds: &maxExpiration,
			StubPKCS10Request:    StubRequest(t, key),
		},
	}
}

var ca = struct {
	sync.Once
	key  crypto.Signer
	cert *x509.Certificate
}{}

// Certificate is a PEM certificate for pub valid from notBefore for lifetime, signed by the
// package's CA, with dnsNames.
func Certificate(t testing.TB, pub crypto.PublicKey, notBefore time.Time, lifetime time.Duration, dnsNames ...string) string {
	t.Helper()
	ca.Do(func() {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pcrtest CA"}, IsCA: true, BasicConstraintsValid: true,
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(100 * 24 * time.Hour), KeyUsage: x509.KeyUsageCertSign}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
		if err != nil {
			panic(err)
		}
		ca.key = key
		ca.cert, _ = x509.ParseCertificate(der)
	})
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), NotBefore: notBefore, NotAfter: notBefore.Add(lifetime), DNSNames: dnsNames,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, pub, ca.key)
	if err != nil {
		t.Fatalf("issuing a certificate: %v", err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// Issue sets req's status to Issued with a certificate for key from notBefore for lifetime,
// refreshing at half-life; times are truncated to seconds as the API stores them.
func Issue(t testing.TB, req *certificatesv1.PodCertificateRequest, key crypto.Signer, notBefore time.Time, lifetime time.Duration) {
	t.Helper()
	notBefore = notBefore.Truncate(time.Second)
	req.Status = certificatesv1.PodCertificateRequestStatus{
		Conditions: []metav1.Condition{{
			Type: certificatesv1.PodCertificateRequestConditionTypeIssued, Status: metav1.ConditionTrue,
			Reason: "Issued", Message: "issued", LastTransitionTime: metav1.NewTime(notBefore),
		}},
		CertificateChain: Certificate(t, key.Public(), notBefore, lifetime),
		NotBefore:        &metav1.Time{Time: notBefore},
		NotAfter:         &metav1.Time{Time: notBefore.Add(lifetime)},
		BeginRefreshAt:   &metav1.Time{Time: notBefore.Add(lifetime / 2)},
	}
}
