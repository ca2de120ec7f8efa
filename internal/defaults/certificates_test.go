package defaults

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"

	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	corev1 "k8s.io/api/core/v1"
)

func requestPEM(t *testing.T, cn string, orgs []string, dns ...string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
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
