// Package approval is the CertificateApproval admission plugin: approving or denying a
// CertificateSigningRequest needs verb "approve" on its signer.
package approval

import (
	"context"
	"fmt"
	"io"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"

	"github.com/idplane/idplane/internal/admission/certificates/signerauthz"
)

// PluginName names the plugin in --enable-admission-plugins.
const PluginName = "CertificateApproval"

// Register adds the plugin to plugins.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) { return New(), nil })
}

// Plugin checks writes to certificatesigningrequests/approval.
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

// Validate refuses an update of /approval by a user who may not approve for the CSR's signer.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != certificatesv1.Resource("certificatesigningrequests") || a.GetSubresource() != "approval" {
		return nil
	}
	csr, ok := a.GetObject().(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("expected a CertificateSigningRequest, got %T", a.GetObject()))
	}
	return signerauthz.Check(ctx, p.Authorizer, a, a.GetUserInfo(), "approve", csr.Spec.SignerName)
}
