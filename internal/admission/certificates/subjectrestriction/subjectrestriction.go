// Package subjectrestriction is the CertificateSubjectRestriction admission plugin: nobody may ask
// the kube-apiserver-client signer for a certificate in group system:masters, which no
// authorizer can limit.
package subjectrestriction

import (
	"context"
	"fmt"
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/idplane/idplane/internal/admission/certificates/certadmission"
	"github.com/idplane/idplane/internal/certificates"
)

// PluginName names the plugin in --enable-admission-plugins.
const PluginName = "CertificateSubjectRestriction"

func spec() certadmission.Spec[*certificatesv1.CertificateSigningRequest] {
	return certadmission.Spec[*certificatesv1.CertificateSigningRequest]{
		Name:       PluginName,
		Resource:   "certificatesigningrequests",
		Operations: []admission.Operation{admission.Create},
		Rule:       noUnlimitedGroup,
	}
}

// Register adds the plugin to plugins.
func Register(plugins *admission.Plugins) { spec().Register(plugins) }

// restricted maps a signer to the group its certificates may not carry: membership no authorizer
// can limit, which a client certificate of that signer would prove.
var restricted = map[string]string{
	certificatesv1.KubeAPIServerClientSignerName: user.SystemPrivilegedGroup,
}

// noUnlimitedGroup refuses a request to a restricted signer whose subject names the signer's
// restricted group as an organization. A request that does not parse is validation's to refuse,
// with the reason and a field path.
func noUnlimitedGroup(_ context.Context, r certadmission.Request[*certificatesv1.CertificateSigningRequest]) error {
	signer := r.Object.Spec.SignerName
	group, ok := restricted[signer]
	if !ok {
		return nil
	}
	req, err := certificates.ParseRequest(r.Object.Spec.Request)
	if err != nil || !slices.Contains(req.Subject.Organization, group) {
		return nil
	}
	return admission.NewForbidden(r, fmt.Errorf("use of %s signer with %s group is not allowed", signer, group))
}
