package defaults

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	corev1 "k8s.io/api/core/v1"

	"github.com/idplane/idplane/internal/testing/testkeys"
)

func requestPEM(t *testing.T, cn string, orgs []string, dns ...string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return requestPEMWithKey(t, key, cn, orgs, dns...)
}

func requestPEMWithKey(t *testing.T, key crypto.Signer, cn string, orgs []string, dns ...string) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: orgs}, DNSNames: dns}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func TestCertificateSigningRequestV1beta1(t *testing.T) {
	nodes := []string{"system:nodes"}
	explicit := "example.com/s"
	cases := []struct {
		name    string
		request []byte
		signer  *string
		usages  []certificatesv1beta1.KeyUsage
		want    string
	}{
		{"kubelet client", requestPEM(t, "system:node:n1", nodes), nil,
			[]certificatesv1beta1.KeyUsage{certificatesv1beta1.UsageDigitalSignature, certificatesv1beta1.UsageClientAuth}, certificatesv1beta1.KubeAPIServerClientKubeletSignerName},
		{"kubelet serving", requestPEM(t, "system:node:n1", nodes, "n1.example.com"), nil,
			[]certificatesv1beta1.KeyUsage{certificatesv1beta1.UsageDigitalSignature, certificatesv1beta1.UsageServerAuth}, certificatesv1beta1.KubeletServingSignerName},
		{"a node name outside system:nodes", requestPEM(t, "system:node:n1", nil), nil,
			[]certificatesv1beta1.KeyUsage{certificatesv1beta1.UsageClientAuth}, certificatesv1beta1.LegacyUnknownSignerName},
		{"anything else", requestPEM(t, "alice", nil), nil,
			[]certificatesv1beta1.KeyUsage{certificatesv1beta1.UsageClientAuth}, certificatesv1beta1.LegacyUnknownSignerName},
		{"unparseable request", []byte("junk"), nil, nil, certificatesv1beta1.LegacyUnknownSignerName},
		{"signer given", requestPEM(t, "system:node:n1", nodes), &explicit,
			[]certificatesv1beta1.KeyUsage{certificatesv1beta1.UsageClientAuth}, explicit},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			csr := &certificatesv1beta1.CertificateSigningRequest{
				Spec:   certificatesv1beta1.CertificateSigningRequestSpec{Request: tc.request, SignerName: tc.signer, Usages: tc.usages},
				Status: certificatesv1beta1.CertificateSigningRequestStatus{Conditions: []certificatesv1beta1.CertificateSigningRequestCondition{{Type: certificatesv1beta1.CertificateApproved}}},
			}
			CertificateSigningRequestV1beta1(csr)
			if *csr.Spec.SignerName != tc.want {
				t.Errorf("signer %q, want %q", *csr.Spec.SignerName, tc.want)
			}
			if csr.Status.Conditions[0].Status != corev1.ConditionTrue {
				t.Errorf("condition status %q, want True", csr.Status.Conditions[0].Status)
			}
		})
	}
}

// TestV1beta1SignerFromUsagesPerKeyType: a v1beta1 kubelet request gets its kubelet signer for
// the design's usage set and for the set without key encipherment, whatever its key type; a set
// the kubelet signers do not issue gets kubernetes.io/legacy-unknown.
func TestV1beta1SignerFromUsagesPerKeyType(t *testing.T) {
	const (
		ke     = certificatesv1beta1.UsageKeyEncipherment
		ds     = certificatesv1beta1.UsageDigitalSignature
		client = certificatesv1beta1.UsageClientAuth
		server = certificatesv1beta1.UsageServerAuth
	)
	cases := []struct {
		name    string
		serving bool // the request has a DNS name, as a serving request does
		usages  []certificatesv1beta1.KeyUsage
		want    string
	}{
		{"client, design set", false, []certificatesv1beta1.KeyUsage{ke, ds, client}, certificatesv1beta1.KubeAPIServerClientKubeletSignerName},
		{"client, without key encipherment", false, []certificatesv1beta1.KeyUsage{ds, client}, certificatesv1beta1.KubeAPIServerClientKubeletSignerName},
		{"client, client auth alone", false, []certificatesv1beta1.KeyUsage{client}, certificatesv1beta1.LegacyUnknownSignerName},
		{"serving, design set", true, []certificatesv1beta1.KeyUsage{ke, ds, server}, certificatesv1beta1.KubeletServingSignerName},
		{"serving, without key encipherment", true, []certificatesv1beta1.KeyUsage{ds, server}, certificatesv1beta1.KubeletServingSignerName},
		{"serving, server auth alone", true, []certificatesv1beta1.KeyUsage{server}, certificatesv1beta1.LegacyUnknownSignerName},
	}
	for _, keyType := range testkeys.Types() {
		key := testkeys.Key(t, keyType)
		for _, tc := range cases {
			t.Run(keyType+"/"+tc.name, func(t *testing.T) {
				var dns []string
				if tc.serving {
					dns = []string{"n1.example.com"}
				}
				csr := &certificatesv1beta1.CertificateSigningRequest{Spec: certificatesv1beta1.CertificateSigningRequestSpec{
					Request: requestPEMWithKey(t, key, "system:node:n1", []string{"system:nodes"}, dns...), Usages: tc.usages,
				}}
				CertificateSigningRequestV1beta1(csr)
				if *csr.Spec.SignerName != tc.want {
					t.Errorf("signer %q, want %q", *csr.Spec.SignerName, tc.want)
				}
			})
		}
	}
}

func TestPodCertificateRequestMaxExpiration(t *testing.T) {
	set := int32(3600)
	cases := []struct {
		name string
		in   *int32
		want int32
	}{
		{"unset", nil, 86400},
		{"set", &set, 3600},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v1 := &certificatesv1.PodCertificateRequest{Spec: certificatesv1.PodCertificateRequestSpec{MaxExpirationSeconds: tc.in}}
			PodCertificateRequest(v1)
			beta := &certificatesv1beta1.PodCertificateRequest{Spec: certificatesv1beta1.PodCertificateRequestSpec{MaxExpirationSeconds: tc.in}}
			PodCertificateRequestV1beta1(beta)
			if *v1.Spec.MaxExpirationSeconds != tc.want || *beta.Spec.MaxExpirationSeconds != tc.want {
				t.Errorf("v1 %d, v1beta1 %d, want %d", *v1.Spec.MaxExpirationSeconds, *beta.Spec.MaxExpirationSeconds, tc.want)
			}
		})
	}
}
