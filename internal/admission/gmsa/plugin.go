// Package gmsa is the GMSA admission plugin: the expander fills the contents of the Windows
// credential specs a pod names (mutating), and the authorizer checks that the pod's service account
// may use them and that the contents are theirs (validating). The logic is internal/gmsa's,
// shared with the standalone gmsa-webhook; this package only feeds it from the server: credential
// specs from an informer, authorization from the server's own authorizer.
package gmsa

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/idplane/idplane/internal/gmsa"
)

// PluginName names the plugin in --enable-admission-plugins.
const PluginName = "GMSA"

// Register adds the plugin to plugins.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) {
		return New(), nil
	})
}

// Config is what the server gives the plugin beyond the library's initializers.
type Config struct {
	Specs   gmsa.CredSpecs
	Options gmsa.Options
}

// Plugin runs the GMSA expander and authorizer on pods.
type Plugin struct {
	*admission.Handler
	expander   *gmsa.Expander
	authorizer *gmsa.Authorizer
	config     *Config
	authz      authorizer.Authorizer
}

var (
	_ admission.MutationInterface       = (*Plugin)(nil)
	_ admission.ValidationInterface     = (*Plugin)(nil)
	_ admission.InitializationValidator = (*Plugin)(nil)
	_ initializer.WantsAuthorizer       = (*Plugin)(nil)
)

// New returns a plugin that still needs its Config and the server's authorizer.
func New() *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update)}
}

// SetGMSAConfig takes where credential specs come from and the admin's options.
func (p *Plugin) SetGMSAConfig(c Config) {
	p.config = &c
	p.build()
}

// SetAuthorizer takes the server's authorizer, which answers the "use" checks.
func (p *Plugin) SetAuthorizer(a authorizer.Authorizer) {
	p.authz = a
	p.build()
}

// build makes the expander and authorizer once both setters have run, in whichever order the
// library's and idplane's initializers call them.
func (p *Plugin) build() {
	if p.config == nil || p.authz == nil {
		return
	}
	p.expander = gmsa.NewExpander(p.config.Specs, p.config.Options)
	p.authorizer = gmsa.NewAuthorizer(p.config.Specs, useChecker{p.authz}, p.config.Options)
}

// ValidateInitialization fails when the plugin was not given its Config or the authorizer.
func (p *Plugin) ValidateInitialization() error {
	if p.expander == nil || p.authorizer == nil {
		return fmt.Errorf("%s requires the credential spec source and the server's authorizer", PluginName)
	}
	return nil
}

// Admit expands the credential specs of a pod being created or given debug containers.
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	req, ok := request(a)
	if !ok {
		return nil
	}
	return p.expander.Expand(ctx, req)
}

// Validate authorizes and checks the credential specs, after every mutating plugin; and refuses a
// binding that would set them on the pod it binds.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if b, ok := a.GetObject().(*corev1.Binding); ok && a.GetResource().GroupResource() == corev1.Resource("pods") && a.GetSubresource() == "binding" {
		return p.authorizer.AuthorizeBinding(b)
	}
	req, ok := request(a)
	if !ok {
		return nil
	}
	return p.authorizer.Authorize(ctx, req)
}

// request is the GMSA logic's view of a write to a pod, its status or its debug containers (the
// pod subresources that write a pod's metadata); other resources and subresources are not its
// business.
func request(a admission.Attributes) (gmsa.Request, bool) {
	if a.GetResource().GroupResource() != corev1.Resource("pods") {
		return gmsa.Request{}, false
	}
	if s := a.GetSubresource(); s != "" && s != "ephemeralcontainers" && s != "status" {
		return gmsa.Request{}, false
	}
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok {
		return gmsa.Request{}, false
	}
	old, _ := a.GetOldObject().(*corev1.Pod)
	return gmsa.Request{
		Pod: pod, OldPod: old, Namespace: a.GetNamespace(), Requester: a.GetUserInfo(),
		Operation: a.GetOperation(), Subresource: a.GetSubresource(),
	}, true
}

// useChecker asks the server's own authorizer, as a LocalSubjectAccessReview would.
type useChecker struct{ authz authorizer.Authorizer }

func (c useChecker) MayUse(ctx context.Context, namespace string, u user.Info, name string) (bool, string, error) {
	decision, reason, err := c.authz.Authorize(ctx, authorizer.AttributesRecord{
		User: u, Verb: gmsa.Verb, Namespace: namespace, APIGroup: gmsa.Group, Resource: gmsa.Resource, Name: name,
		ResourceRequest: true,
	})
	// As a SubjectAccessReview answers: an allow stands whatever an earlier authorizer failed
	// with; without one, a failure is no denial but no permission either.
	if decision == authorizer.DecisionAllow {
		return true, reason, nil
	}
	if err != nil {
		return false, reason, fmt.Errorf("authorizing use of GMSACredentialSpec %q by %s: %w", name, u.GetName(), err)
	}
	return false, reason, nil
}
