package subjectrestriction

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
)

func request(t *testing.T, orgs ...string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "u", Organization: orgs}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name      string
		signer    string
		orgs      []string
		forbidden bool
	}{
		{"client certificate", certificatesv1.KubeAPIServerClientSignerName, []string{"devs"}, false},
		{"system:masters client certificate", certificatesv1.KubeAPIServerClientSignerName, []string{"devs", "system:masters"}, true},
		{"system:masters from another signer", "example.com/s", []string{"system:masters"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "csr"},
				Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: tc.signer, Request: request(t, tc.orgs...)}}
			a := admission.NewAttributesRecord(csr, nil, certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"), "", "csr",
				certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests"), "", admission.Create, nil, false, nil)
			err := New().Validate(context.Background(), a, nil)
			if tc.forbidden != apierrors.IsForbidden(err) || (!tc.forbidden && err != nil) {
				t.Errorf("Validate = %v, forbidden want %v", err, tc.forbidden)
			}
		})
	}
}
