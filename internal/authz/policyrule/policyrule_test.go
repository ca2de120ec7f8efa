package policyrule

import (
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

func resourceAttrs(verb, group, resource, subresource, name string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{
		Verb: verb, APIGroup: group, Resource: resource, Subresource: subresource, Name: name,
		Namespace: "ns", ResourceRequest: true,
	}
}

func pathAttrs(verb, path string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{Verb: verb, Path: path}
}

func TestRuleMatching(t *testing.T) {
	podsGet := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	tests := []struct {
		name  string
		rule  rbacv1.PolicyRule
		attrs authorizer.AttributesRecord
		want  bool
	}{
		{"exact verb, group and resource", podsGet, resourceAttrs("get", "", "pods", "", ""), true},
		{"other verb", podsGet, resourceAttrs("list", "", "pods", "", ""), false},
		{"verbs are case sensitive", podsGet, resourceAttrs("GET", "", "pods", "", ""), false},
		{"any verb", rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{""}, Resources: []string{"pods"}}, resourceAttrs("deletecollection", "", "pods", "", ""), true},
		{"second verb in list", rbacv1.PolicyRule{Verbs: []string{"list", "watch"}, APIGroups: []string{""}, Resources: []string{"pods"}}, resourceAttrs("watch", "", "pods", "", ""), true},
		{"no verbs", rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}}, resourceAttrs("get", "", "pods", "", ""), false},
		{"other group", podsGet, resourceAttrs("get", "apps", "pods", "", ""), false},
		{"core group is not any group", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"deployments"}}, resourceAttrs("get", "apps", "deployments", "", ""), false},
		{"any group", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"*"}, Resources: []string{"deployments"}}, resourceAttrs("get", "apps", "deployments", "", ""), true},
		{"no groups", rbacv1.PolicyRule{Verbs: []string{"get"}, Resources: []string{"pods"}}, resourceAttrs("get", "", "pods", "", ""), false},
		{"other resource", podsGet, resourceAttrs("get", "", "services", "", ""), false},
		{"any resource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"*"}}, resourceAttrs("get", "", "secrets", "", ""), true},
		{"any resource covers subresources", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"*"}}, resourceAttrs("get", "", "pods", "log", ""), true},
		{"resource does not cover its subresource", podsGet, resourceAttrs("get", "", "pods", "status", ""), false},
		{"exact subresource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/status"}}, resourceAttrs("get", "", "pods", "status", ""), true},
		{"subresource does not cover its resource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/status"}}, resourceAttrs("get", "", "pods", "", ""), false},
		{"other subresource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/status"}}, resourceAttrs("get", "", "pods", "log", ""), false},
		{"subresource of another resource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/status"}}, resourceAttrs("get", "", "nodes", "status", ""), false},
		{"any resource's subresource", rbacv1.PolicyRule{Verbs: []string{"update"}, APIGroups: []string{"*"}, Resources: []string{"*/status"}}, resourceAttrs("update", "apps", "deployments", "status", ""), true},
		{"any resource's subresource needs a subresource", rbacv1.PolicyRule{Verbs: []string{"update"}, APIGroups: []string{"*"}, Resources: []string{"*/status"}}, resourceAttrs("update", "apps", "deployments", "", ""), false},
		{"any resource's subresource, other subresource", rbacv1.PolicyRule{Verbs: []string{"update"}, APIGroups: []string{"*"}, Resources: []string{"*/status"}}, resourceAttrs("update", "apps", "deployments", "scale", ""), false},
		{"subresource suffix is not enough", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"*/xstatus"}}, resourceAttrs("get", "", "pods", "status", ""), false},
		{"resourceNames empty means any name", podsGet, resourceAttrs("get", "", "pods", "", "web-1"), true},
		{"listed name", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{"a", "web-1"}}, resourceAttrs("get", "", "pods", "", "web-1"), true},
		{"unlisted name", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{"a"}}, resourceAttrs("get", "", "pods", "", "web-1"), false},
		{"resourceNames need a name", rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{"a"}}, resourceAttrs("list", "", "pods", "", ""), false},
		{"resourceNames with subresource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/log"}, ResourceNames: []string{"a"}}, resourceAttrs("get", "", "pods", "log", "a"), true},
		{"resource rule does not match a URL", rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}, pathAttrs("get", "/healthz"), false},
		{"exact URL", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}, pathAttrs("get", "/healthz"), true},
		{"URL is not a prefix without star", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}, pathAttrs("get", "/healthz/ready"), false},
		{"URL prefix with star", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz/*"}}, pathAttrs("get", "/healthz/ready"), true},
		{"URL prefix with star is a plain prefix", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/api*"}}, pathAttrs("get", "/apis/apps"), true},
		{"URL prefix with star, other path", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz/*"}}, pathAttrs("get", "/livez"), false},
		{"all URLs", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"*"}}, pathAttrs("get", "/metrics"), true},
		{"URL with other verb", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"*"}}, pathAttrs("post", "/metrics"), false},
		{"URL rule does not match a resource", rbacv1.PolicyRule{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}, resourceAttrs("get", "", "pods", "", ""), false},
		{"mixed rule matches a resource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}, NonResourceURLs: []string{"/version"}}, resourceAttrs("get", "", "pods", "", ""), true},
		{"mixed rule matches a URL", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}, NonResourceURLs: []string{"/version"}}, pathAttrs("get", "/version"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := RequestFrom(tt.attrs)
			if got := req.AllowedBy(&tt.rule); got != tt.want {
				t.Errorf("AllowedBy(%+v) for %+v = %v, want %v", tt.rule, tt.attrs, got, tt.want)
			}
		})
	}
}

func TestRuleInfos(t *testing.T) {
	get := []string{"get"}
	tests := []struct {
		name          string
		rules         []rbacv1.PolicyRule
		wantResources []authorizer.ResourceRuleInfo
		wantURLs      []authorizer.NonResourceRuleInfo
	}{
		{name: "none"},
		{
			name:  "resource rule",
			rules: []rbacv1.PolicyRule{{Verbs: get, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{"p"}}},
			wantResources: []authorizer.ResourceRuleInfo{&authorizer.DefaultResourceRuleInfo{
				Verbs: get, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{"p"},
			}},
		},
		{
			name:     "non-resource rule",
			rules:    []rbacv1.PolicyRule{{Verbs: get, NonResourceURLs: []string{"/healthz"}}},
			wantURLs: []authorizer.NonResourceRuleInfo{&authorizer.DefaultNonResourceRuleInfo{Verbs: get, NonResourceURLs: []string{"/healthz"}}},
		},
		{
			name:          "both in one rule",
			rules:         []rbacv1.PolicyRule{{Verbs: get, Resources: []string{"pods"}, NonResourceURLs: []string{"/healthz"}}},
			wantResources: []authorizer.ResourceRuleInfo{&authorizer.DefaultResourceRuleInfo{Verbs: get, Resources: []string{"pods"}}},
			wantURLs:      []authorizer.NonResourceRuleInfo{&authorizer.DefaultNonResourceRuleInfo{Verbs: get, NonResourceURLs: []string{"/healthz"}}},
		},
		{name: "neither", rules: []rbacv1.PolicyRule{{Verbs: get}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resources, urls := RuleInfos(tt.rules)
			if !reflect.DeepEqual(resources, tt.wantResources) || !reflect.DeepEqual(urls, tt.wantURLs) {
				t.Errorf("RuleInfos = %v, %v; want %v, %v", resources, urls, tt.wantResources, tt.wantURLs)
			}
		})
	}
}
