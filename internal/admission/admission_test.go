package admission

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"

	"github.com/idplane/idplane/internal/admission/noderestriction"
	"github.com/idplane/idplane/internal/admission/serviceaccount"
)

func TestEnabled(t *testing.T) {
	cases := []struct {
		name            string
		enable, disable []string
		defaultOff      []string
		plugin          string
		want            bool
	}{
		{name: "on by default", plugin: noderestriction.PluginName, want: true},
		{name: "ServiceAccount on by default", plugin: serviceaccount.PluginName, want: true},
		{name: "disabled", disable: []string{noderestriction.PluginName}, plugin: noderestriction.PluginName},
		{name: "another plugin disabled", disable: []string{"NamespaceLifecycle"}, plugin: noderestriction.PluginName, want: true},
		{name: "off by default", defaultOff: []string{noderestriction.PluginName}, plugin: noderestriction.PluginName},
		{name: "off by default, enabled", defaultOff: []string{noderestriction.PluginName}, enable: []string{noderestriction.PluginName}, plugin: noderestriction.PluginName, want: true},
		{name: "not a plugin of the order", enable: []string{"AlwaysPullImages"}, plugin: "AlwaysPullImages"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			o.EnablePlugins, o.DisablePlugins = tc.enable, tc.disable
			o.DefaultOffPlugins.Insert(tc.defaultOff...)
			if got := Enabled(o, tc.plugin); got != tc.want {
				t.Errorf("Enabled(%s) = %v, want %v", tc.plugin, got, tc.want)
			}
		})
	}
}

// TestOrder checks that ServiceAccount comes right after NamespaceLifecycle, as upstream orders
// them: a pod in a terminating namespace is refused before its account is looked up.
func TestOrder(t *testing.T) {
	order := NewOptions().RecommendedPluginOrder
	if len(order) < 3 || order[0] != "NamespaceLifecycle" || order[1] != serviceaccount.PluginName || order[2] != noderestriction.PluginName {
		t.Errorf("plugin order %v, want NamespaceLifecycle, ServiceAccount, NodeRestriction first", order)
	}
}

// TestPlugins pins the whole order of the design and that every plugin of it is registered.
func TestPlugins(t *testing.T) {
	want := []string{
		"NamespaceLifecycle", "ServiceAccount", "NodeRestriction", "CertificateApproval", "CertificateSigning",
		"CertificateSubjectRestriction", "ClusterTrustBundleAttest", "GMSA",
	}
	o := NewOptions()
	if !slices.Equal(o.RecommendedPluginOrder, want) {
		t.Errorf("plugin order %v, want %v", o.RecommendedPluginOrder, want)
	}
	if got := o.Plugins.Registered(); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("registered %v, want %v", got, want)
	}
}

// TestCertificatePlugins pins, per certificate plugin, the operations it handles and whether it
// refuses to start without the server's authorizer.
func TestCertificatePlugins(t *testing.T) {
	tests := []struct {
		name           string
		handles        []admission.Operation
		needAuthorizer bool
	}{
		{"CertificateApproval", []admission.Operation{admission.Update}, true},
		{"CertificateSigning", []admission.Operation{admission.Update}, true},
		{"CertificateSubjectRestriction", []admission.Operation{admission.Create}, false},
		{"ClusterTrustBundleAttest", []admission.Operation{admission.Create, admission.Update}, true},
	}
	o := NewOptions()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := o.Plugins.InitPlugin(tc.name, nil, admission.PluginInitializers{})
			if want := tc.name + " requires an authorizer"; tc.needAuthorizer != (err != nil) || (err != nil && !strings.HasSuffix(err.Error(), want)) {
				t.Errorf("initialized without an authorizer: %v, want error %v (%q)", err, tc.needAuthorizer, want)
			}
			p, err := o.Plugins.InitPlugin(tc.name, nil, withAuthorizer{})
			if err != nil {
				t.Fatal(err)
			}
			for _, op := range []admission.Operation{admission.Create, admission.Update, admission.Delete, admission.Connect} {
				if got, want := p.Handles(op), slices.Contains(tc.handles, op); got != want {
					t.Errorf("Handles(%s) = %v, want %v", op, got, want)
				}
			}
		})
	}
}

// withAuthorizer hands plugins an authorizer, as the library's initializer does in the server.
type withAuthorizer struct{}

func (withAuthorizer) Initialize(p admission.Interface) {
	if w, ok := p.(initializer.WantsAuthorizer); ok {
		w.SetAuthorizer(authorizerfactory.NewAlwaysAllowAuthorizer())
	}
}
