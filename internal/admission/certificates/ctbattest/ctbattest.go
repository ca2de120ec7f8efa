// Package ctbattest is the ClusterTrustBundleAttest admission plugin: publishing a bundle linked
// to a signer needs verb "attest" on that signer, since clients will trust it for the signer.
package ctbattest

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
const PluginName = "ClusterTrustBundleAttest"

// Register adds the plugin to plugins.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) { return New(), nil })
}

// Plugin checks creates and updates of clustertrustbundles.
type Plugin struct {
	signerauthz.Plugin
}

var (
	_ admission.ValidationInterface     = (*Plugin)(nil)
	_ admission.InitializationValidator = (*Plugin)(nil)
	_ initializer.WantsAuthorizer       = (*Plugin)(nil)
)

// New returns a plugin that still needs its authorizer.
func New() *Plugin {
	return &Plugin{signerauthz.NewPlugin(PluginName, admission.Create, admission.Update)}
}

// Validate refuses a signer-linked bundle from a user who may not attest for its signer. An update
// that changes neither the signer nor the bundle (labels, say) needs no attestation.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != certificatesv1.Resource("clustertrustbundles") || a.GetSubresource() != "" {
		return nil
	}
	b, ok := a.GetObject().(*certificatesv1.ClusterTrustBundle)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("expected a ClusterTrustBundle, got %T", a.GetObject()))
	}
	if b.Spec.SignerName == "" {
		return nil
	}
	if old, ok := a.GetOldObject().(*certificatesv1.ClusterTrustBundle); ok && a.GetOperation() == admission.Update &&
		old.Spec.SignerName == b.Spec.SignerName && old.Spec.TrustBundle == b.Spec.TrustBundle {
		return nil
	}
	return signerauthz.Check(ctx, p.Authorizer, a, a.GetUserInfo(), "attest", b.Spec.SignerName)
}
