package certadmission

import (
	"context"
	"errors"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
)

type csr = *certificatesv1.CertificateSigningRequest

var errRefused = errors.New("refused")

func TestValidate(t *testing.T) {
	obj := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "csr"}}
	cases := []struct {
		name        string
		group       string // certificates.k8s.io when empty
		subresource string
		obj, old    runtime.Object
		wantRule    bool
		wantMsg     string
	}{
		{name: "guarded subresource", subresource: "approval", obj: obj, old: obj, wantRule: true},
		{name: "no stored object", subresource: "approval", obj: obj, wantRule: true},
		{name: "another subresource", subresource: "status", obj: obj},
		{name: "the main resource", obj: obj},
		{name: "another group", group: "example.com", subresource: "approval", obj: obj},
		{
			name: "another type", subresource: "approval", obj: &corev1.Pod{},
			wantMsg: `certificatesigningrequests.certificates.k8s.io "csr" is forbidden: expected a CertificateSigningRequest, got *v1.Pod`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got *Request[csr]
			p := Spec[csr]{
				Name: "Test", Resource: "certificatesigningrequests", Subresource: "approval", Operations: []admission.Operation{admission.Update},
				Rule: func(_ context.Context, r Request[csr]) error { got = &r; return errRefused },
			}.New()
			az := authorizerfactory.NewAlwaysAllowAuthorizer()
			p.SetAuthorizer(az)
			resource := certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests")
			if tc.group != "" {
				resource.Group = tc.group
			}
			a := admission.NewAttributesRecord(tc.obj, tc.old, certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"), "", "csr",
				resource, tc.subresource, admission.Update, nil, false, nil)
			err := p.Validate(context.Background(), a, nil)
			switch {
			case tc.wantRule:
				if !errors.Is(err, errRefused) || got == nil || got.Object != obj || got.Authorizer != az || (tc.old == nil) != (got.Old == nil) {
					t.Errorf("Validate = %v, rule saw %+v; want the rule's answer on the typed objects", err, got)
				}
			case tc.wantMsg != "":
				if !apierrors.IsForbidden(err) || err.Error() != tc.wantMsg || got != nil {
					t.Errorf("Validate = %v, want 403 %q without the rule", err, tc.wantMsg)
				}
			default:
				if err != nil || got != nil {
					t.Errorf("Validate = %v, rule called %v; want passed untouched", err, got != nil)
				}
			}
		})
	}
}

func TestValidateInitialization(t *testing.T) {
	cases := []struct {
		name           string
		usesAuthorizer bool
		given          bool
		wantErr        string
	}{
		{name: "uses it, given", usesAuthorizer: true, given: true},
		{name: "uses it, never given", usesAuthorizer: true, wantErr: "Test requires an authorizer"},
		{name: "does not use it", usesAuthorizer: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := Spec[csr]{Name: "Test", UsesAuthorizer: tc.usesAuthorizer}.New()
			if tc.given {
				p.SetAuthorizer(authorizerfactory.NewAlwaysAllowAuthorizer())
			}
			err := p.ValidateInitialization()
			if (err == nil) != (tc.wantErr == "") || (err != nil && err.Error() != tc.wantErr) {
				t.Errorf("ValidateInitialization = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestRegister(t *testing.T) {
	plugins := admission.NewPlugins()
	Spec[csr]{Name: "Test", Operations: []admission.Operation{admission.Create}}.Register(plugins)
	p, err := plugins.InitPlugin("Test", nil, admission.PluginInitializers{})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Handles(admission.Create) || p.Handles(admission.Update) {
		t.Errorf("registered plugin handles create %v, update %v; want create only", p.Handles(admission.Create), p.Handles(admission.Update))
	}
}
