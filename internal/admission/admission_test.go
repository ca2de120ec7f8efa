package admission

import (
	"slices"
	"testing"

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
