// Package signing is the CertificateSigning admission plugin: writing a CertificateSigningRequest's
// certificate, or changing its conditions through /status, needs verb "sign" on its signer.
package signing

import (
	"context"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apiserver/pkg/admission"

	"github.com/idplane/idplane/internal/admission/certificates/certadmission"
	"github.com/idplane/idplane/internal/admission/certificates/signerauthz"
)

// PluginName names the plugin in --enable-admission-plugins.
const PluginName = "CertificateSigning"

func spec() certadmission.Spec[*certificatesv1.CertificateSigningRequest] {
	return certadmission.Spec[*certificatesv1.CertificateSigningRequest]{
		Name:           PluginName,
		Resource:       "certificatesigningrequests",
		Subresource:    "status",
		Operations:     []admission.Operation{admission.Update},
		UsesAuthorizer: true,
		Rule:           signerOfIssuance,
	}
}

// Register adds the plugin to plugins.
func Register(plugins *admission.Plugins) { spec().Register(plugins) }

// signerOfIssuance refuses a /status update that changes the certificate or the conditions by a
// user who may not sign for the CSR's signer, as stored: the update cannot move the request to a
// signer of the user's choosing. An update that changes neither (metadata only) passes.
func signerOfIssuance(ctx context.Context, r certadmission.Request[*certificatesv1.CertificateSigningRequest]) error {
	if r.Old == nil {
		return admission.NewForbidden(r, fmt.Errorf("expected CertificateSigningRequests, got %T and %T", r.GetObject(), r.GetOldObject()))
	}
	if apiequality.Semantic.DeepEqual(r.Object.Status.Certificate, r.Old.Status.Certificate) &&
		apiequality.Semantic.DeepEqual(r.Object.Status.Conditions, r.Old.Status.Conditions) {
		return nil
	}
	return signerauthz.Check(ctx, r.Authorizer, r, "sign", r.Old.Spec.SignerName)
}
