// Package certadmission is the shape the certificates.k8s.io admission plugins share. A plugin
// is a Spec: its name, the resource, subresource and operations it guards, whether it asks the
// server's authorizer, and one rule. The package does the rest the same way for every plugin:
// registration, Handles, the authorizer the library's initializer hands over, the refusal to
// start without it, and the typed object the rule decides on.
package certadmission

import (
	"context"
	"fmt"
	"io"
	"reflect"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Request is one admission request as a rule sees it.
type Request[T runtime.Object] struct {
	admission.Attributes
	// Object is the object being written.
	Object T
	// Old is the stored object on update, nil when there is none.
	Old T
	// Authorizer is the server's, for a Spec that uses it; nil otherwise.
	Authorizer authorizer.Authorizer
}

// Spec describes a plugin guarding writes of T to a certificates.k8s.io resource.
type Spec[T runtime.Object] struct {
	Name string
	// Resource and Subresource are what the plugin guards; any other request passes untouched.
	Resource, Subresource string
	Operations            []admission.Operation
	// UsesAuthorizer makes the server refuse to start when no authorizer was handed over.
	UsesAuthorizer bool
	// Rule admits a request (nil) or refuses it.
	Rule func(context.Context, Request[T]) error
}

// Register adds the plugin to plugins under its name.
func (s Spec[T]) Register(plugins *admission.Plugins) {
	plugins.Register(s.Name, func(io.Reader) (admission.Interface, error) { return s.New(), nil })
}

// New returns the plugin, still without its authorizer.
func (s Spec[T]) New() *Plugin[T] {
	return &Plugin[T]{Handler: admission.NewHandler(s.Operations...), spec: s}
}

// Plugin is a Spec made into an admission plugin.
type Plugin[T runtime.Object] struct {
	*admission.Handler
	spec       Spec[T]
	authorizer authorizer.Authorizer
}

var (
	_ admission.ValidationInterface     = (*Plugin[*certificatesv1.CertificateSigningRequest])(nil)
	_ admission.InitializationValidator = (*Plugin[*certificatesv1.CertificateSigningRequest])(nil)
	_ initializer.WantsAuthorizer       = (*Plugin[*certificatesv1.CertificateSigningRequest])(nil)
)

// SetAuthorizer takes the server's authorizer.
func (p *Plugin[T]) SetAuthorizer(a authorizer.Authorizer) { p.authorizer = a }

// ValidateInitialization fails when the plugin uses the authorizer and was never given one.
func (p *Plugin[T]) ValidateInitialization() error {
	if p.spec.UsesAuthorizer && p.authorizer == nil {
		return fmt.Errorf("%s requires an authorizer", p.spec.Name)
	}
	return nil
}

// Validate hands a request for the guarded resource and subresource to the rule.
func (p *Plugin[T]) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != certificatesv1.Resource(p.spec.Resource) || a.GetSubresource() != p.spec.Subresource {
		return nil
	}
	obj, ok := a.GetObject().(T)
	if !ok {
		kind := reflect.TypeFor[T]()
		if kind.Kind() == reflect.Pointer {
			kind = kind.Elem()
		}
		return admission.NewForbidden(a, fmt.Errorf("expected a %s, got %T", kind.Name(), a.GetObject()))
	}
	old, _ := a.GetOldObject().(T)
	return p.spec.Rule(ctx, Request[T]{Attributes: a, Object: obj, Old: old, Authorizer: p.authorizer})
}
