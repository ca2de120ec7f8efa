// Package subjectrestriction is the CertificateSubjectRestriction admission plugin: nobody may ask
// the kube-apiserver-client signer for a certificate in group system:masters, which no
// authorizer can limit.
package subjectrestriction

import (
	"context"
	"fmt"
	"io"
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/idplane/idplane/internal/certificates"
)

// PluginName names the plugin in --enable-admission-plugins.
const PluginName = "CertificateSubjectRestriction"

// Register adds the plugin to plugins.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) { return New(), nil })
}

// Plugin checks CertificateSigningRequests being created.
type Plugin struct{ *admission.Handler }

var _ admission.ValidationInterface = (*Plugin)(nil)

// New returns the plugin.
func New() *Plugin { return &Plugin{Handler: admission.NewHandler(admission.Create)} }

// Validate refuses a kube-apiserver-client CSR whose subject names organization system:masters.
// A request that does not parse is left to validation, which refuses it with a field path.
func (p *Plugin) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != certificatesv1.Resource("certificatesigningrequests") || a.GetSubresource() != "" {
		return nil
	}
	csr, ok := a.GetObject().(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("expected a CertificateSigningRequest, got %T", a.GetObject()))
	}
	if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientSignerName {
		return nil
	}
	// A request that cannot be read is validation's to refuse, with the reason.
	req, err := certificates.ParseRequest(csr.Spec.Request)
	if err != nil {
		return nil
	}
	if slices.Contains(req.Subject.Organization, user.SystemPrivilegedGroup) {
		return admission.NewForbidden(a, fmt.Errorf("use of %s signer with %s group is not allowed", csr.Spec.SignerName, user.SystemPrivilegedGroup))
	}
	return nil
}
