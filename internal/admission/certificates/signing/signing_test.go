package signing

import (
	"context"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
)

func TestValidate(t *testing.T) {
	old := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "csr"}, Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: "example.com/s"}}
	withCert := old.DeepCopy()
	withCert.Status.Certificate = []byte("cert")
	withCondition := old.DeepCopy()
	withCondition.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue}}
	withLabel := old.DeepCopy()
	withLabel.Labels = map[string]string{"a": "b"}
	allow, deny := authorizerfactory.NewAlwaysAllowAuthorizer(), authorizerfactory.NewAlwaysDenyAuthorizer()
	cases := []struct {
		name        string
		subresource string
		obj         *certificatesv1.CertificateSigningRequest
		az          authorizer.Authorizer
		forbidden   bool
	}{
		{"certificate by a signer", "status", withCert, allow, false},
		{"certificate by someone else", "status", withCert, deny, true},
		{"condition by someone else", "status", withCondition, deny, true},
		{"metadata only", "status", withLabel, deny, false},
		{"approval is not this plugin's", "approval", withCondition, deny, false},
		{"the main resource is not this plugin's", "", withCert, deny, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := spec().New()
			p.SetAuthorizer(tc.az)
			if err := p.ValidateInitialization(); err != nil {
				t.Fatal(err)
			}
			a := admission.NewAttributesRecord(tc.obj, old, certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"), "", "csr",
				certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests"), tc.subresource, admission.Update, nil, false, &user.DefaultInfo{Name: "u"})
			err := p.Validate(context.Background(), a, nil)
			if tc.forbidden != apierrors.IsForbidden(err) || (!tc.forbidden && err != nil) {
				t.Errorf("Validate = %v, forbidden want %v", err, tc.forbidden)
			}
			if want := `certificatesigningrequests.certificates.k8s.io "csr" is forbidden: user "u" not permitted to sign requests with signerName "example.com/s"`; tc.forbidden && err.Error() != want {
				t.Errorf("message = %q, want %q", err.Error(), want)
			}
		})
	}
}
