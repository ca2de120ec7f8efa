// Package approval is the CertificateApproval admission plugin: approving or denying a
// CertificateSigningRequest needs verb "approve" on its signer.
package approval

import (
	"context"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apiserver/pkg/admission"

	"github.com/idplane/idplane/internal/admission/certificates/certadmission"
	"github.com/idplane/idplane/internal/admission/certificates/signerauthz"
)

// PluginName names the plugin in --enable-admission-plugins.
const PluginName = "CertificateApproval"

func spec() certadmission.Spec[*certificatesv1.CertificateSigningRequest] {
	return certadmission.Spec[*certificatesv1.CertificateSigningRequest]{
		Name:           PluginName,
		Resource:       "certificatesigningrequests",
		Subresource:    "approval",
		Operations:     []admission.Operation{admission.Update},
		UsesAuthorizer: true,
		Rule:           approverOfSigner,
	}
}

// Register adds the plugin to plugins.
func Register(plugins *admission.Plugins) { spec().Register(plugins) }

// approverOfSigner refuses an update of /approval by a user who may not approve for the CSR's
// signer.
func approverOfSigner(ctx context.Context, r certadmission.Request[*certificatesv1.CertificateSigningRequest]) error {
	return signerauthz.Check(ctx, r.Authorizer, r, "approve", r.Object.Spec.SignerName)
}
