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
	masters := request(t, "devs", "system:masters")
	cases := []struct {
		name        string
		signer      string
		request     []byte
		subresource string
		wantMsg     string // empty: admitted
	}{
		{name: "client certificate", signer: certificatesv1.KubeAPIServerClientSignerName, request: request(t, "devs")},
		{
			name: "system:masters client certificate", signer: certificatesv1.KubeAPIServerClientSignerName, request: masters,
			wantMsg: `certificatesigningrequests.certificates.k8s.io "csr" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed`,
		},
		{name: "system:masters from another signer", signer: "example.com/s", request: masters},
		{name: "unreadable request is validation's", signer: certificatesv1.KubeAPIServerClientSignerName, request: []byte("not PEM")},
		{name: "status is not this plugin's", signer: certificatesv1.KubeAPIServerClientSignerName, request: masters, subresource: "status"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "csr"},
				Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: tc.signer, Request: tc.request}}
			a := admission.NewAttributesRecord(csr, nil, certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"), "", "csr",
				certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests"), tc.subresource, admission.Create, nil, false, nil)
			err := spec().New().Validate(context.Background(), a, nil)
			if tc.wantMsg == "" {
				if err != nil {
					t.Errorf("Validate = %v, want admitted", err)
				}
				return
			}
			if !apierrors.IsForbidden(err) || err.Error() != tc.wantMsg {
				t.Errorf("Validate = %v, want 403 %q", err, tc.wantMsg)
			}
		})
	}
}
