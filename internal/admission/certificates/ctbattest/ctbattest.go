// Package ctbattest is the ClusterTrustBundleAttest admission plugin: publishing a bundle linked
// to a signer needs verb "attest" on that signer, since clients will trust it for the signer.
package ctbattest

import (
	"context"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apiserver/pkg/admission"

	"github.com/idplane/idplane/internal/admission/certificates/certadmission"
	"github.com/idplane/idplane/internal/admission/certificates/signerauthz"
)

// PluginName names the plugin in --enable-admission-plugins.
const PluginName = "ClusterTrustBundleAttest"

func spec() certadmission.Spec[*certificatesv1.ClusterTrustBundle] {
	return certadmission.Spec[*certificatesv1.ClusterTrustBundle]{
		Name:           PluginName,
		Resource:       "clustertrustbundles",
		Operations:     []admission.Operation{admission.Create, admission.Update},
		UsesAuthorizer: true,
		Rule:           attesterOfSigner,
	}
}

// Register adds the plugin to plugins.
func Register(plugins *admission.Plugins) { spec().Register(plugins) }

// attesterOfSigner refuses a signer-linked bundle from a user who may not attest for its signer.
// An update that changes neither the signer nor the bundle (labels, say) needs no attestation.
func attesterOfSigner(ctx context.Context, r certadmission.Request[*certificatesv1.ClusterTrustBundle]) error {
	b := r.Object
	if b.Spec.SignerName == "" {
		return nil
	}
	if r.GetOperation() == admission.Update && r.Old != nil &&
		r.Old.Spec.SignerName == b.Spec.SignerName && r.Old.Spec.TrustBundle == b.Spec.TrustBundle {
		return nil
	}
	return signerauthz.Check(ctx, r.Authorizer, r, "attest", b.Spec.SignerName)
}
