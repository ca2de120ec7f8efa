package node

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

func TestFixedRules(t *testing.T) {
	rules := compileRules([]rbacv1.PolicyRule{
		{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"services", "endpoints/status"}},
		{Verbs: []string{"*"}, APIGroups: []string{"apps"}, Resources: []string{"deployments/scale", "replicasets/*"}},
		{Verbs: []string{"get"}, APIGroups: []string{"*"}, Resources: []string{"*/scale"}},
		{Verbs: []string{"update"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"mine"}},
		{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/api/*"}},
	})
	cases := []struct {
		name string
		req  request
		want bool
	}{
		{"plain rule", request{resourceRequest: true, verb: "list", resource: "services"}, true},
		{"plain rule, other verb", request{resourceRequest: true, verb: "delete", resource: "services"}, false},
		{"plain rule, other group", request{resourceRequest: true, verb: "get", group: "apps", resource: "services"}, false},
		{"resource does not grant its subresource", request{resourceRequest: true, verb: "get", resource: "services", sub: "status"}, false},
		{"subresource rule", request{resourceRequest: true, verb: "get", resource: "endpoints", sub: "status"}, true},
		{"subresource rule does not grant the resource", request{resourceRequest: true, verb: "get", resource: "endpoints"}, false},
		{"any verb", request{resourceRequest: true, verb: "patch", group: "apps", resource: "deployments", sub: "scale"}, true},
		{"resource/* is no wildcard", request{resourceRequest: true, verb: "patch", group: "apps", resource: "replicasets", sub: "status"}, false},
		{"subresource of any resource", request{resourceRequest: true, verb: "get", group: "batch", resource: "jobs", sub: "scale"}, true},
		{"named object", request{resourceRequest: true, verb: "update", resource: "configmaps", name: "mine"}, true},
		{"other object", request{resourceRequest: true, verb: "update", resource: "configmaps", name: "theirs"}, false},
		{"URL", request{verb: "get", path: "/healthz"}, true},
		{"URL prefix", request{verb: "get", path: "/api/v1"}, true},
		{"other URL", request{verb: "get", path: "/metrics"}, false},
		{"URL, other verb", request{verb: "post", path: "/healthz"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := rules.allow(&tc.req); got != tc.want {
				t.Errorf("allow = %v, want %v", got, tc.want)
			}
		})
	}
}
