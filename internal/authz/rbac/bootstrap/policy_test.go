package bootstrap

import (
	"reflect"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/component-helpers/auth/rbac/validation"
)

func rolesByName(t *testing.T) map[string]rbacv1.ClusterRole {
	t.Helper()
	m := map[string]rbacv1.ClusterRole{}
	for _, r := range ClusterRoles() {
		if _, dup := m[r.Name]; dup {
			t.Fatalf("clusterrole %q defined twice", r.Name)
		}
		m[r.Name] = r
	}
	return m
}

func bindingsByName(t *testing.T) map[string]rbacv1.ClusterRoleBinding {
	t.Helper()
	m := map[string]rbacv1.ClusterRoleBinding{}
	for _, b := range ClusterRoleBindings() {
		if _, dup := m[b.Name]; dup {
			t.Fatalf("clusterrolebinding %q defined twice", b.Name)
		}
		m[b.Name] = b
	}
	return m
}

func TestEveryObjectIsMarked(t *testing.T) {
	check := func(t *testing.T, kind, name string, labels, annotations map[string]string) {
		t.Helper()
		if labels[bootstrappingLabel] != "rbac-defaults" {
			t.Errorf("%s %q lacks label %s=rbac-defaults: %v", kind, name, bootstrappingLabel, labels)
		}
		if annotations[rbacv1.AutoUpdateAnnotationKey] != "true" {
			t.Errorf("%s %q lacks annotation %s=true: %v", kind, name, rbacv1.AutoUpdateAnnotationKey, annotations)
		}
	}
	for _, r := range ClusterRoles() {
		check(t, "clusterrole", r.Name, r.Labels, r.Annotations)
	}
	for _, b := range ClusterRoleBindings() {
		check(t, "clusterrolebinding", b.Name, b.Labels, b.Annotations)
	}
}

func TestClusterRolesListTheIssueRoles(t *testing.T) {
	roles := rolesByName(t)
	for _, name := range []string{
		"cluster-admin", "admin", "edit", "view",
		"system:aggregate-to-admin", "system:aggregate-to-edit", "system:aggregate-to-view",
		"system:discovery", "system:basic-user", "system:public-info-viewer",
		"system:node", "system:node-bootstrapper", "system:auth-delegator",
		"system:service-account-issuer-discovery",
		"idplane:spiffe-bundle-discovery",
		"system:certificates.k8s.io:kube-apiserver-client-approver",
		"system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
		"system:certificates.k8s.io:kubelet-serving-approver",
		"system:certificates.k8s.io:legacy-unknown-approver",
		"system:certificates.k8s.io:certificatesigningrequests:nodeclient",
		"system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
	} {
		if _, ok := roles[name]; !ok {
			t.Errorf("clusterrole %q missing", name)
		}
	}
}

func TestRulesAreWellFormed(t *testing.T) {
	for _, r := range ClusterRoles() {
		for i, rule := range r.Rules {
			resource := len(rule.APIGroups) > 0 && len(rule.Resources) > 0
			url := len(rule.NonResourceURLs) > 0
			if len(rule.Verbs) == 0 || resource == url {
				t.Errorf("clusterrole %q rule %d is malformed: %+v", r.Name, i, rule)
			}
			if url && len(rule.ResourceNames) > 0 {
				t.Errorf("clusterrole %q rule %d has resourceNames on non-resource URLs", r.Name, i)
			}
		}
	}
}

func TestClusterAdminIsEverything(t *testing.T) {
	admin := rolesByName(t)["cluster-admin"]
	want := []rbacv1.PolicyRule{
		{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
		{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
	}
	if !slices.EqualFunc(admin.Rules, want, ruleEqual) {
		t.Fatalf("cluster-admin rules %+v, want %+v", admin.Rules, want)
	}
	for _, r := range ClusterRoles() {
		if covers, missing := validation.Covers(admin.Rules, r.Rules); !covers {
			t.Errorf("cluster-admin does not cover %q: %+v", r.Name, missing)
		}
	}
}

func TestBindings(t *testing.T) {
	group := func(name string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
	}
	cases := []struct {
		name     string
		role     string // "" means the binding's own name
		subjects []rbacv1.Subject
	}{
		{"cluster-admin", "", []rbacv1.Subject{group("system:masters")}},
		{"system:discovery", "", []rbacv1.Subject{group("system:authenticated")}},
		{"system:basic-user", "", []rbacv1.Subject{group("system:authenticated")}},
		{"system:public-info-viewer", "", []rbacv1.Subject{group("system:authenticated"), group("system:unauthenticated")}},
		{"system:node", "", nil},
		{"system:service-account-issuer-discovery", "", []rbacv1.Subject{group("system:serviceaccounts")}},
		{"idplane:spiffe-bundle-discovery", "", []rbacv1.Subject{group("system:serviceaccounts")}},
		{"idplane:node-bootstrapper", "system:node-bootstrapper", []rbacv1.Subject{group("system:bootstrappers")}},
		{"idplane:node-bootstrapper-nodeclient", "system:certificates.k8s.io:certificatesigningrequests:nodeclient", []rbacv1.Subject{group("system:bootstrappers")}},
		{"idplane:nodes-selfnodeclient", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", []rbacv1.Subject{group("system:nodes")}},
	}
	bindings := bindingsByName(t)
	if len(bindings) != len(cases) {
		t.Errorf("%d bindings, want %d", len(bindings), len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, ok := bindings[tc.name]
			if !ok {
				t.Fatal("binding missing")
			}
			role := tc.role
			if role == "" {
				role = tc.name
			}
			wantRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}
			if b.RoleRef != wantRef {
				t.Errorf("roleRef %+v, want %+v", b.RoleRef, wantRef)
			}
			if !slices.Equal(b.Subjects, tc.subjects) {
				t.Errorf("subjects %+v, want %+v", b.Subjects, tc.subjects)
			}
		})
	}
}

func TestEveryBindingNamesADefaultRole(t *testing.T) {
	roles := rolesByName(t)
	for _, b := range ClusterRoleBindings() {
		if _, ok := roles[b.RoleRef.Name]; !ok {
			t.Errorf("clusterrolebinding %q refers to unknown clusterrole %q", b.Name, b.RoleRef.Name)
		}
	}
}

// The Node authorizer is what gives nodes their rights; a binding of system:nodes to
// system:node would let every node read every secret. The one role group system:nodes holds
// grants nothing but the right the kubelet-client approver checks for self-renewal.
func TestNodesAreNeverBoundToSystemNode(t *testing.T) {
	const selfRenewal = "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient"
	wantRules := []rbacv1.PolicyRule{{Verbs: []string{"create"}, APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests/selfnodeclient"}}}
	if got := rolesByName(t)[selfRenewal].Rules; !reflect.DeepEqual(got, wantRules) {
		t.Errorf("%s rules %+v, want only %+v", selfRenewal, got, wantRules)
	}
	b, ok := bindingsByName(t)["system:node"]
	if !ok {
		t.Fatal("clusterrolebinding system:node missing")
	}
	if len(b.Subjects) != 0 {
		t.Errorf("clusterrolebinding system:node has subjects %+v", b.Subjects)
	}
	for _, b := range ClusterRoleBindings() {
		if b.RoleRef.Name == "system:node" && len(b.Subjects) > 0 {
			t.Errorf("clusterrolebinding %q grants system:node to %+v", b.Name, b.Subjects)
		}
		for _, s := range b.Subjects {
			if s.Kind == rbacv1.GroupKind && s.Name == "system:nodes" && b.RoleRef.Name != selfRenewal {
				t.Errorf("clusterrolebinding %q grants %q to group system:nodes", b.Name, b.RoleRef.Name)
			}
		}
	}
}

func TestAggregation(t *testing.T) {
	roles := rolesByName(t)
	cases := []struct {
		role, selects string
		labels        map[string]string
	}{
		{"admin", aggregateToAdmin, nil},
		{"edit", aggregateToEdit, map[string]string{aggregateToAdmin: "true"}},
		{"view", aggregateToView, map[string]string{aggregateToEdit: "true"}},
		{"system:aggregate-to-admin", "", map[string]string{aggregateToAdmin: "true"}},
		{"system:aggregate-to-edit", "", map[string]string{aggregateToEdit: "true"}},
		{"system:aggregate-to-view", "", map[string]string{aggregateToView: "true"}},
	}
	for _, tc := range cases {
		t.Run(tc.role, func(t *testing.T) {
			r := roles[tc.role]
			switch {
			case tc.selects == "" && r.AggregationRule != nil:
				t.Errorf("unexpected aggregationRule %+v", r.AggregationRule)
			case tc.selects != "":
				if r.AggregationRule == nil || len(r.AggregationRule.ClusterRoleSelectors) != 1 ||
					r.AggregationRule.ClusterRoleSelectors[0].MatchLabels[tc.selects] != "true" {
					t.Errorf("aggregationRule %+v does not select %s=true", r.AggregationRule, tc.selects)
				}
				if len(r.Rules) != 0 {
					t.Errorf("aggregated role carries its own rules %+v", r.Rules)
				}
			}
			for k, v := range tc.labels {
				if r.Labels[k] != v {
					t.Errorf("label %s=%q, want %q", k, r.Labels[k], v)
				}
			}
		})
	}
}

func TestGrants(t *testing.T) {
	roles := rolesByName(t)
	resource := func(verb, group, res string, names ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{group}, Resources: []string{res}, ResourceNames: names}
	}
	url := func(verb, path string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{Verbs: []string{verb}, NonResourceURLs: []string{path}}
	}
	cases := []struct {
		name  string
		role  string
		rule  rbacv1.PolicyRule
		grant bool
	}{
		{"view reads pods", "system:aggregate-to-view", resource("list", "", "pods"), true},
		{"view reads configmaps", "system:aggregate-to-view", resource("get", "", "configmaps"), true},
		{"view does not read secrets", "system:aggregate-to-view", resource("get", "", "secrets"), false},
		{"view does not list secrets", "system:aggregate-to-view", resource("list", "", "secrets"), false},
		{"view does not write pods", "system:aggregate-to-view", resource("create", "", "pods"), false},
		{"view reads services", "system:aggregate-to-view", resource("get", "", "services"), true},
		{"view reads endpoints", "system:aggregate-to-view", resource("list", "", "endpoints"), true},
		{"view reads endpoint slices", "system:aggregate-to-view", resource("watch", "discovery.k8s.io", "endpointslices"), true},
		{"edit writes services", "system:aggregate-to-edit", resource("update", "", "services"), true},
		{"edit does not write endpoints", "system:aggregate-to-edit", resource("update", "", "endpoints"), false},
		{"edit does not write endpoint slices", "system:aggregate-to-edit", resource("create", "discovery.k8s.io", "endpointslices"), false},
		{"node reads services", "system:node", resource("watch", "", "services"), true},
		{"node gets endpoints", "system:node", resource("get", "", "endpoints"), true},
		{"node does not write services", "system:node", resource("update", "", "services"), false},
		{"edit reads secrets", "system:aggregate-to-edit", resource("get", "", "secrets"), true},
		{"edit evicts pods", "system:aggregate-to-edit", resource("create", "", "pods/eviction"), true},
		{"edit requests tokens", "system:aggregate-to-edit", resource("create", "", "serviceaccounts/token"), true},
		{"edit impersonates service accounts", "system:aggregate-to-edit", resource("impersonate", "", "serviceaccounts"), true},
		{"edit writes leases", "system:aggregate-to-edit", resource("update", "coordination.k8s.io", "leases"), true},
		{"edit does not write roles", "system:aggregate-to-edit", resource("create", "rbac.authorization.k8s.io", "roles"), false},
		{"admin writes rolebindings", "system:aggregate-to-admin", resource("create", "rbac.authorization.k8s.io", "rolebindings"), true},
		{"admin asks local access reviews", "system:aggregate-to-admin", resource("create", "authorization.k8s.io", "localsubjectaccessreviews"), true},
		{"basic-user asks self access reviews", "system:basic-user", resource("create", "authorization.k8s.io", "selfsubjectaccessreviews"), true},
		{"basic-user asks self rules reviews", "system:basic-user", resource("create", "authorization.k8s.io", "selfsubjectrulesreviews"), true},
		{"basic-user asks who it is", "system:basic-user", resource("create", "authentication.k8s.io", "selfsubjectreviews"), true},
		{"basic-user cannot ask for others", "system:basic-user", resource("create", "authorization.k8s.io", "subjectaccessreviews"), false},
		{"public info has version", "system:public-info-viewer", url("get", "/version/"), true},
		{"public info has readyz", "system:public-info-viewer", url("get", "/readyz"), true},
		{"public info lacks api discovery", "system:public-info-viewer", url("get", "/apis"), false},
		{"discovery has api groups", "system:discovery", url("get", "/apis/*"), true},
		{"issuer discovery has jwks", "system:service-account-issuer-discovery", url("get", "/openid/v1/jwks"), true},
		{"spiffe bundle discovery has the bundle", "idplane:spiffe-bundle-discovery", url("get", "/spiffe/v1/bundle"), true},
		{"spiffe bundle discovery has nothing else", "idplane:spiffe-bundle-discovery", url("get", "/openid/v1/jwks"), false},
		{"node reads secrets", "system:node", resource("get", "", "secrets"), true},
		{"node updates pod status", "system:node", resource("patch", "", "pods/status"), true},
		{"node requests tokens", "system:node", resource("create", "", "serviceaccounts/token"), true},
		{"node cannot delete nodes", "system:node", resource("delete", "", "nodes"), false},
		{"node-bootstrapper creates CSRs", "system:node-bootstrapper", resource("create", "certificates.k8s.io", "certificatesigningrequests"), true},
		{"auth-delegator reviews tokens", "system:auth-delegator", resource("create", "authentication.k8s.io", "tokenreviews"), true},
		{"nodeclient", "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
			resource("create", "certificates.k8s.io", "certificatesigningrequests/nodeclient"), true},
		{"selfnodeclient", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
			resource("create", "certificates.k8s.io", "certificatesigningrequests/selfnodeclient"), true},
		{"client approver", "system:certificates.k8s.io:kube-apiserver-client-approver",
			resource("approve", "certificates.k8s.io", "signers", "kubernetes.io/kube-apiserver-client"), true},
		{"client approver is limited to its signer", "system:certificates.k8s.io:kube-apiserver-client-approver",
			resource("approve", "certificates.k8s.io", "signers", "kubernetes.io/kubelet-serving"), false},
		{"kubelet client approver", "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
			resource("approve", "certificates.k8s.io", "signers", "kubernetes.io/kube-apiserver-client-kubelet"), true},
		{"kubelet serving approver", "system:certificates.k8s.io:kubelet-serving-approver",
			resource("approve", "certificates.k8s.io", "signers", "kubernetes.io/kubelet-serving"), true},
		{"legacy unknown approver", "system:certificates.k8s.io:legacy-unknown-approver",
			resource("approve", "certificates.k8s.io", "signers", "kubernetes.io/legacy-unknown"), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := roles[tc.role]
			if !ok {
				t.Fatalf("clusterrole %q missing", tc.role)
			}
			if got, _ := validation.Covers(r.Rules, []rbacv1.PolicyRule{tc.rule}); got != tc.grant {
				t.Errorf("%q grants %+v: %v, want %v", tc.role, tc.rule, got, tc.grant)
			}
		})
	}
}

// TestGroupGrants checks what the default bindings give the groups of node bootstrap: a bootstrap
// token's group may create and follow CSRs and have node client ones approved (as upstream's
// system:node-bootstrapper plus kubeadm's bindings), nodes may have their own renewed; neither
// gets anything more.
func TestGroupGrants(t *testing.T) {
	roles := rolesByName(t)
	rulesOf := func(group string) []rbacv1.PolicyRule {
		var rules []rbacv1.PolicyRule
		for _, b := range ClusterRoleBindings() {
			for _, s := range b.Subjects {
				if s.Kind == rbacv1.GroupKind && s.Name == group {
					rules = append(rules, roles[b.RoleRef.Name].Rules...)
				}
			}
		}
		return rules
	}
	csrs := func(verb, subresource string) rbacv1.PolicyRule {
		resource := "certificatesigningrequests"
		if subresource != "" {
			resource += "/" + subresource
		}
		return rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{"certificates.k8s.io"}, Resources: []string{resource}}
	}
	core := func(verb, resource string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{""}, Resources: []string{resource}}
	}
	cases := []struct {
		group string
		rule  rbacv1.PolicyRule
		grant bool
	}{
		{"system:bootstrappers", csrs("create", ""), true},
		{"system:bootstrappers", csrs("get", ""), true},
		{"system:bootstrappers", csrs("list", ""), true},
		{"system:bootstrappers", csrs("watch", ""), true},
		{"system:bootstrappers", csrs("create", "nodeclient"), true},
		{"system:bootstrappers", csrs("create", "selfnodeclient"), false},
		{"system:bootstrappers", csrs("delete", ""), false},
		{"system:bootstrappers", csrs("update", "approval"), false},
		{"system:bootstrappers", core("get", "secrets"), false},
		{"system:bootstrappers", core("list", "secrets"), false},
		{"system:bootstrappers", core("create", "nodes"), false},
		{"system:nodes", csrs("create", "selfnodeclient"), true},
		{"system:nodes", csrs("create", "nodeclient"), false},
		{"system:nodes", core("get", "secrets"), false},
	}
	for _, tc := range cases {
		t.Run(tc.group+" "+tc.rule.Verbs[0]+" "+tc.rule.Resources[0], func(t *testing.T) {
			if got, _ := validation.Covers(rulesOf(tc.group), []rbacv1.PolicyRule{tc.rule}); got != tc.grant {
				t.Errorf("group %s granted %+v: %v, want %v", tc.group, tc.rule, got, tc.grant)
			}
		})
	}
}

// Callers such as Reconcile hand the objects to clients; one caller's change must not leak
// into the next call.
func TestCallsReturnFreshObjects(t *testing.T) {
	first := ClusterRoles()
	first[0].Rules[0].Verbs[0] = "mutated"
	first[0].Labels["mutated"] = "true"
	second := ClusterRoles()
	if second[0].Rules[0].Verbs[0] == "mutated" || second[0].Labels["mutated"] != "" {
		t.Error("ClusterRoles shares state between calls")
	}
	for _, r := range second {
		for _, rule := range r.Rules {
			if slices.Contains(rule.Verbs, "mutated") {
				t.Errorf("clusterrole %q shares its verbs with an earlier call", r.Name)
			}
		}
	}
}

func ruleEqual(a, b rbacv1.PolicyRule) bool {
	return slices.Equal(a.Verbs, b.Verbs) && slices.Equal(a.APIGroups, b.APIGroups) &&
		slices.Equal(a.Resources, b.Resources) && slices.Equal(a.ResourceNames, b.ResourceNames) &&
		slices.Equal(a.NonResourceURLs, b.NonResourceURLs)
}
