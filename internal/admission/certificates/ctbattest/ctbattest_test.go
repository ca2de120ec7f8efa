package ctbattest

import (
	"context"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
)

func TestValidate(t *testing.T) {
	bundle := func(signer, pem string, labels map[string]string) *certificatesv1.ClusterTrustBundle {
		return &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "b", Labels: labels}, Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: pem}}
	}
	allow, deny := authorizerfactory.NewAlwaysAllowAuthorizer(), authorizerfactory.NewAlwaysDenyAuthorizer()
	cases := []struct {
		name      string
		op        admission.Operation
		obj, old  *certificatesv1.ClusterTrustBundle
		az        authorizer.Authorizer
		forbidden bool
	}{
		{"linked bundle by an attester", admission.Create, bundle("example.com/s", "x", nil), nil, allow, false},
		{"linked bundle by someone else", admission.Create, bundle("example.com/s", "x", nil), nil, deny, true},
		{"unlinked bundle", admission.Create, bundle("", "x", nil), nil, deny, false},
		{"new certificates by someone else", admission.Update, bundle("example.com/s", "y", nil), bundle("example.com/s", "x", nil), deny, true},
		{"labels only", admission.Update, bundle("example.com/s", "x", map[string]string{"a": "b"}), bundle("example.com/s", "x", nil), deny, false},
		{"linked on update by someone else", admission.Update, bundle("example.com/s", "x", nil), bundle("", "x", nil), deny, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := spec().New()
			p.SetAuthorizer(tc.az)
			var old runtime.Object
			if tc.old != nil {
				old = tc.old
			}
			attrs := admission.NewAttributesRecord(tc.obj, old, certificatesv1.SchemeGroupVersion.WithKind("ClusterTrustBundle"), "", "b",
				certificatesv1.SchemeGroupVersion.WithResource("clustertrustbundles"), "", tc.op, nil, false, &user.DefaultInfo{Name: "u"})
			err := p.Validate(context.Background(), attrs, nil)
			if tc.forbidden != apierrors.IsForbidden(err) || (!tc.forbidden && err != nil) {
				t.Errorf("Validate = %v, forbidden want %v", err, tc.forbidden)
			}
			if want := `clustertrustbundles.certificates.k8s.io "b" is forbidden: user "u" not permitted to attest requests with signerName "example.com/s"`; tc.forbidden && err.Error() != want {
				t.Errorf("message = %q, want %q", err.Error(), want)
			}
		})
	}
}
