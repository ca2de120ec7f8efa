// Package signing is the CertificateSigning admission plugin: writing a CertificateSigningRequest's
// certificate, or changing its conditions through /status, needs verb "sign" on its signer.
package signing

import (
	"context"
	"fmt"
	"io"

	certificatesv1 "k8s.io/api/certificates/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"

	"github.com/idplane/idplane/internal/admission/certificates/signerauthz"
)

// PluginName names the plugin in --enable-admission-plugins.
const PluginName = "CertificateSigning"

// Register adds the plugin to plugins.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) { return New(), nil })
}

// Plugin checks writes to certificatesigningrequests/status.
type Plugin struct {
	signerauthz.Plugin
}

var (
	_ admission.ValidationInterface     = (*Plugin)(nil)
	_ admission.InitializationValidator = (*Plugin)(nil)
	_ initializer.WantsAuthorizer       = (*Plugin)(nil)
)

// New returns a plugin that still needs its authorizer.
func New() *Plugin { return &Plugin{signerauthz.NewPlugin(PluginName, admission.Update)} }

// Validate refuses a /status update that changes the certificate or the conditions by a user who
// may not sign for the CSR's signer. An update that changes neither (metadata only) passes.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != certificatesv1.Resource("certificatesigningrequests") || a.GetSubresource() != "status" {
		return nil
	}
	csr, ok := a.GetObject().(*certificatesv1.CertificateSigningRequest)
	old, okOld := a.GetOldObject().(*certificatesv1.CertificateSigningRequest)
	if !ok || !okOld {
		return admission.NewForbidden(a, fmt.Errorf("expected CertificateSigningRequests, got %T and %T", a.GetObject(), a.GetOldObject()))
	}
	if apiequality.Semantic.DeepEqual(csr.Status.Certificate, old.Status.Certificate) &&
		apiequality.Semantic.DeepEqual(csr.Status.Conditions, old.Status.Conditions) {
		return nil
	}
	return signerauthz.Check(ctx, p.Authorizer, a, a.GetUserInfo(), "sign", old.Spec.SignerName)
}
