package approval

import (
	"context"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
)

func TestValidate(t *testing.T) {
	csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "csr"}, Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: "example.com/s"}}
	allow, deny := authorizerfactory.NewAlwaysAllowAuthorizer(), authorizerfactory.NewAlwaysDenyAuthorizer()
	cases := []struct {
		name        string
		subresource string
		az          authorizer.Authorizer
		forbidden   bool
	}{
		{"approver", "approval", allow, false},
		{"not an approver", "approval", deny, true},
		{"status is not this plugin's", "status", deny, false},
		{"the main resource is not this plugin's", "", deny, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := spec().New()
			if err := p.ValidateInitialization(); err == nil {
				t.Fatal("initialized without an authorizer")
			}
			p.SetAuthorizer(tc.az)
			a := admission.NewAttributesRecord(csr, csr, certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"), "", "csr",
				certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests"), tc.subresource, admission.Update, nil, false, &user.DefaultInfo{Name: "bob"})
			err := p.Validate(context.Background(), a, nil)
			if tc.forbidden {
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `user "bob" not permitted to approve requests with signerName "example.com/s"`) {
					t.Errorf("Validate = %v, want 403 naming user, verb and signer", err)
				}
			} else if err != nil {
				t.Errorf("Validate = %v, want allowed", err)
			}
		})
	}
}
