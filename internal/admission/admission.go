// Package admission lists idplane's admission plugins in the order they run and builds the
// library's admission options (--enable-admission-plugins, --disable-admission-plugins) over them.
package admission

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	genericoptions "k8s.io/apiserver/pkg/server/options"

	"github.com/idplane/idplane/internal/admission/certificates/approval"
	"github.com/idplane/idplane/internal/admission/certificates/ctbattest"
	"github.com/idplane/idplane/internal/admission/certificates/signing"
	"github.com/idplane/idplane/internal/admission/certificates/subjectrestriction"
	"github.com/idplane/idplane/internal/admission/gmsa"
	"github.com/idplane/idplane/internal/admission/noderestriction"
	"github.com/idplane/idplane/internal/admission/serviceaccount"
)

// plugins are every built plugin, in the fixed order of the design: NamespaceLifecycle,
// ServiceAccount, NodeRestriction, CertificateApproval, CertificateSigning,
// CertificateSubjectRestriction, GMSA. The library runs all mutating plugins before all
// validating ones, each group in this order.
var plugins = []struct {
	name     string
	register func(*admission.Plugins)
}{
	{lifecycle.PluginName, lifecycle.Register},
	{serviceaccount.PluginName, serviceaccount.Register},
	{noderestriction.PluginName, noderestriction.Register},
	{approval.PluginName, approval.Register},
	{signing.PluginName, signing.Register},
	{subjectrestriction.PluginName, subjectrestriction.Register},
	{ctbattest.PluginName, ctbattest.Register},
	{gmsa.PluginName, gmsa.Register},
}

// NewOptions returns admission options whose default is every plugin on, in order.
func NewOptions() *genericoptions.AdmissionOptions {
	o := genericoptions.NewAdmissionOptions()
	o.Plugins = admission.NewPlugins()
	o.RecommendedPluginOrder = nil
	o.DefaultOffPlugins = sets.Set[string]{}
	for _, p := range plugins {
		p.register(o.Plugins)
		o.RecommendedPluginOrder = append(o.RecommendedPluginOrder, p.name)
	}
	return o
}

// Enabled reports whether the options run the named plugin, by the library's rule: a plugin
// of the order runs unless it is off by default or disabled, and not enabled explicitly.
func Enabled(o *genericoptions.AdmissionOptions, name string) bool {
	if !slices.Contains(o.RecommendedPluginOrder, name) {
		return false
	}
	if slices.Contains(o.EnablePlugins, name) {
		return true
	}
	return !o.DefaultOffPlugins.Has(name) && !slices.Contains(o.DisablePlugins, name)
}

// WantsAPIAudiences is a plugin that needs the audiences the server identifies as.
type WantsAPIAudiences interface {
	SetAPIAudiences(authenticator.Audiences)
}

// WantsGMSAConfig is a plugin that needs where GMSACredentialSpecs come from.
type WantsGMSAConfig interface {
	SetGMSAConfig(gmsa.Config)
}

var (
	_ WantsAPIAudiences = (*noderestriction.Plugin)(nil)
	_ WantsGMSAConfig   = (*gmsa.Plugin)(nil)
)

// Initializer gives idplane's plugins what the library's initializers do not.
type Initializer struct {
	APIAudiences authenticator.Audiences
	GMSA         gmsa.Config
}

// Initialize implements the library's plugin initializer.
func (i Initializer) Initialize(p admission.Interface) {
	if w, ok := p.(WantsAPIAudiences); ok {
		w.SetAPIAudiences(i.APIAudiences)
	}
	if w, ok := p.(WantsGMSAConfig); ok {
		w.SetGMSAConfig(i.GMSA)
	}
}
