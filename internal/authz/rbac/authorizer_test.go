package rbac

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

func rule(verbs, group string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: strings.Split(verbs, ","), APIGroups: []string{group}, Resources: resources}
}

func urlRule(verbs string, urls ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: strings.Split(verbs, ","), NonResourceURLs: urls}
}

func clusterRole(name string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
}

func role(namespace, name string, rules ...rbacv1.PolicyRule) *rbacv1.Role {
	return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Rules: rules}
}

func toClusterRole(name string) rbacv1.RoleRef {
	return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
}

func toRole(name string) rbacv1.RoleRef {
	return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}
}

func clusterRoleBinding(name string, ref rbacv1.RoleRef, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: ref, Subjects: subjects}
}

func roleBinding(namespace, name string, ref rbacv1.RoleRef, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, RoleRef: ref, Subjects: subjects}
}

func userSubj(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

func groupSubj(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
}

func saSubj(namespace, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}
}

func person(name string, groups ...string) user.Info {
	return &user.DefaultInfo{Name: name, Groups: groups}
}

func resourceRequest(u user.Info, verb, namespace, group, resource, subresource, name string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{
		User: u, Verb: verb, Namespace: namespace, APIGroup: group, APIVersion: "v1",
		Resource: resource, Subresource: subresource, Name: name, ResourceRequest: true,
	}
}

func urlRequest(u user.Info, verb, path string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: u, Verb: verb, Path: path}
}

// startAuthorizer runs the authorizer on informers over a fake clientset holding objs,
// and returns once its index holds them.
func startAuthorizer(t testing.TB, objs ...runtime.Object) (*Authorizer, *fake.Clientset) {
	t.Helper()
	client := fake.NewSimpleClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	a, err := New(factory.Rbac().V1())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		factory.Shutdown()
	})
	synced := func(context.Context) (bool, error) { return a.HasSynced(), nil }
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, synced); err != nil {
		t.Fatalf("RBAC authorizer did not sync: %v", err)
	}
	return a, client
}

type check struct {
	name   string
	attrs  authorizer.AttributesRecord
	want   authorizer.Decision
	reason string
}

func (c check) run(a *Authorizer) (authorizer.Decision, string, error) {
	return a.Authorize(context.Background(), c.attrs)
}

func (c check) holds(a *Authorizer) bool {
	d, reason, err := c.run(a)
	return err == nil && d == c.want && reason == c.reason
}

func (c check) assert(t *testing.T, a *Authorizer) {
	t.Helper()
	d, reason, err := c.run(a)
	if err != nil || d != c.want || reason != c.reason {
		t.Errorf("%s: Authorize = (%v, %q, %v), want (%v, %q, nil)", c.name, d, reason, err, c.want, c.reason)
	}
}

var world = []runtime.Object{
	clusterRole("pod-reader", rule("get,list", "", "pods")),
	clusterRole("node-viewer", rule("get", "", "nodes"), urlRule("get", "/healthz")),
	role("ns1", "secret-reader", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"s1"}}),
	role("ns1", "configmap-reader", rule("get", "", "configmaps")),
	role("ns2", "configmap-reader", rule("get", "", "configmaps")),
	clusterRoleBinding("alice-nodes", toClusterRole("node-viewer"), userSubj("alice")),
	clusterRoleBinding("devs-pods", toClusterRole("pod-reader"), userSubj("nobody"), groupSubj("devs")),
	clusterRoleBinding("sa-nodes", toClusterRole("node-viewer"), saSubj("ns3", "ctrl")),
	clusterRoleBinding("sa-without-namespace", toClusterRole("pod-reader"), saSubj("", "loose")),
	clusterRoleBinding("to-a-role", toRole("secret-reader"), userSubj("erin")),
	clusterRoleBinding("ghost", toClusterRole("ghost"), userSubj("dave")),
	roleBinding("ns1", "bob-secrets", toRole("secret-reader"), userSubj("bob")),
	roleBinding("ns1", "carol-pods", toClusterRole("pod-reader"), userSubj("carol")),
	roleBinding("ns1", "local-sa", toRole("configmap-reader"), saSubj("", "builder")),
	roleBinding("ns1", "foreign-sa", toRole("configmap-reader"), saSubj("ns2", "deployer")),
	roleBinding("ns1", "missing", toRole("nope"), userSubj("dave")),
	roleBinding("ns2", "qa-pods", toClusterRole("pod-reader"), groupSubj("qa")),
	roleBinding("ns2", "unknown-kind", toClusterRole("pod-reader"), rbacv1.Subject{Kind: "Robot", Name: "carol"}),
}

func TestAuthorize(t *testing.T) {
	a, _ := startAuthorizer(t, world...)
	alice, bob, carol, dave, erin := person("alice"), person("bob"), person("carol"), person("dave"), person("erin")
	dev, tester := person("dan", "system:authenticated", "devs"), person("quinn", "qa")
	sa := func(ns, name string) user.Info {
		return person("system:serviceaccount:"+ns+":"+name, "system:serviceaccounts", "system:serviceaccounts:"+ns)
	}
	allow, none := authorizer.DecisionAllow, authorizer.DecisionNoOpinion
	checks := []check{
		{"user subject of a ClusterRoleBinding", resourceRequest(alice, "get", "", "", "nodes", "", "n1"), allow,
			`RBAC: allowed by ClusterRoleBinding "alice-nodes" of ClusterRole "node-viewer" to User "alice"`},
		{"ClusterRoleBinding applies in every namespace", resourceRequest(dev, "list", "ns9", "", "pods", "", ""), allow,
			`RBAC: allowed by ClusterRoleBinding "devs-pods" of ClusterRole "pod-reader" to Group "devs"`},
		{"group subject cluster-wide", resourceRequest(dev, "list", "", "", "pods", "", ""), allow,
			`RBAC: allowed by ClusterRoleBinding "devs-pods" of ClusterRole "pod-reader" to Group "devs"`},
		{"verb not granted", resourceRequest(alice, "delete", "", "", "nodes", "", "n1"), none, ""},
		{"subresource not granted by its resource", resourceRequest(dev, "get", "ns1", "", "pods", "log", "p"), none, ""},
		{"non-resource URL", urlRequest(alice, "get", "/healthz"), allow,
			`RBAC: allowed by ClusterRoleBinding "alice-nodes" of ClusterRole "node-viewer" to User "alice"`},
		{"non-resource URL is exact", urlRequest(alice, "get", "/healthz/ready"), none, ""},
		{"user named like a group is not in it", resourceRequest(person("devs"), "list", "", "", "pods", "", ""), none, ""},
		{"RoleBinding in its namespace, listed name", resourceRequest(bob, "get", "ns1", "", "secrets", "", "s1"), allow,
			`RBAC: allowed by RoleBinding "bob-secrets/ns1" of Role "secret-reader" to User "bob"`},
		{"RoleBinding, unlisted name", resourceRequest(bob, "get", "ns1", "", "secrets", "", "s2"), none, ""},
		{"RoleBinding, list is not a named get", resourceRequest(bob, "list", "ns1", "", "secrets", "", ""), none, ""},
		{"RoleBinding does not reach another namespace", resourceRequest(bob, "get", "ns2", "", "secrets", "", "s1"), none, ""},
		{"RoleBinding does not reach cluster scope", resourceRequest(bob, "get", "", "", "secrets", "", "s1"), none, ""},
		{"RoleBinding to a ClusterRole", resourceRequest(carol, "get", "ns1", "", "pods", "", "p"), allow,
			`RBAC: allowed by RoleBinding "carol-pods/ns1" of ClusterRole "pod-reader" to User "carol"`},
		{"RoleBinding to a ClusterRole stays in its namespace", resourceRequest(carol, "get", "ns2", "", "pods", "", "p"), none, ""},
		{"RoleBinding to a ClusterRole grants nothing cluster-wide", resourceRequest(carol, "list", "", "", "pods", "", ""), none, ""},
		{"subject of unknown kind", resourceRequest(carol, "get", "ns2", "", "pods", "", "p"), none, ""},
		{"group subject of a RoleBinding", resourceRequest(tester, "get", "ns2", "", "pods", "", "p"), allow,
			`RBAC: allowed by RoleBinding "qa-pods/ns2" of ClusterRole "pod-reader" to Group "qa"`},
		{"group RoleBinding in another namespace", resourceRequest(tester, "get", "ns1", "", "pods", "", "p"), none, ""},
		{"service account defaults to the binding's namespace", resourceRequest(sa("ns1", "builder"), "get", "ns1", "", "configmaps", "", "c"), allow,
			`RBAC: allowed by RoleBinding "local-sa/ns1" of Role "configmap-reader" to ServiceAccount "builder/ns1"`},
		{"same name in another namespace is another account", resourceRequest(sa("ns2", "builder"), "get", "ns1", "", "configmaps", "", "c"), none, ""},
		{"service account of another namespace", resourceRequest(sa("ns2", "deployer"), "get", "ns1", "", "configmaps", "", "c"), allow,
			`RBAC: allowed by RoleBinding "foreign-sa/ns1" of Role "configmap-reader" to ServiceAccount "deployer/ns2"`},
		{"service account bound cluster-wide", resourceRequest(sa("ns3", "ctrl"), "get", "", "", "nodes", "", "n"), allow,
			`RBAC: allowed by ClusterRoleBinding "sa-nodes" of ClusterRole "node-viewer" to ServiceAccount "ctrl/ns3"`},
		{"service account without namespace in a ClusterRoleBinding", resourceRequest(sa("ns1", "loose"), "list", "ns1", "", "pods", "", ""), none, ""},
		{"missing roles are named", resourceRequest(dave, "get", "ns1", "", "pods", "", "p"), none,
			`RBAC: [clusterrole.rbac.authorization.k8s.io "ghost" not found, role.rbac.authorization.k8s.io "nope" not found]`},
		{"missing ClusterRole cluster-wide", resourceRequest(dave, "get", "", "", "nodes", "", "n"), none,
			`RBAC: clusterrole.rbac.authorization.k8s.io "ghost" not found`},
		{"ClusterRoleBinding to a Role never resolves", resourceRequest(erin, "get", "ns1", "", "secrets", "", "s1"), none,
			`RBAC: role.rbac.authorization.k8s.io "secret-reader" not found`},
		{"no bindings", resourceRequest(person("mallory", "system:authenticated"), "get", "ns1", "", "pods", "", "p"), none, ""},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) { c.assert(t, a) })
	}
}

func TestAuthorizeWithoutUser(t *testing.T) {
	a, _ := startAuthorizer(t)
	d, _, err := a.Authorize(context.Background(), authorizer.AttributesRecord{Verb: "get", Path: "/healthz"})
	if d != authorizer.DecisionNoOpinion || err == nil {
		t.Errorf("Authorize without user = (%v, %v), want NoOpinion and an error", d, err)
	}
}

// TestAuthorizeFollowsChanges applies changes through the API in order; after each, the
// index must reach the expected decisions within a bounded wait.
func TestAuthorizeFollowsChanges(t *testing.T) {
	a, client := startAuthorizer(t, clusterRole("pod-reader", rule("get", "", "pods")))
	rbac := client.RbacV1()
	frank, grace := person("frank"), person("grace", "team")
	frankGets := resourceRequest(frank, "get", "ns1", "", "pods", "", "p")
	frankLists := resourceRequest(frank, "list", "ns1", "", "pods", "", "")
	graceGets := resourceRequest(grace, "get", "ns1", "", "pods", "", "p")
	allow, none := authorizer.DecisionAllow, authorizer.DecisionNoOpinion
	byRole := `RBAC: allowed by RoleBinding "frank/ns1" of Role "late" to User "frank"`

	steps := []struct {
		name   string
		change func(ctx context.Context) error
		checks []check
	}{
		{
			name: "binding arrives before its role",
			change: func(ctx context.Context) error {
				_, err := rbac.RoleBindings("ns1").Create(ctx, roleBinding("ns1", "frank", toRole("late"), userSubj("frank")), metav1.CreateOptions{})
				return err
			},
			checks: []check{{"role missing", frankGets, none, `RBAC: role.rbac.authorization.k8s.io "late" not found`}},
		},
		{
			name: "role arrives",
			change: func(ctx context.Context) error {
				_, err := rbac.Roles("ns1").Create(ctx, role("ns1", "late", rule("get", "", "pods")), metav1.CreateOptions{})
				return err
			},
			checks: []check{
				{"get granted", frankGets, allow, byRole},
				{"list not granted", frankLists, none, ""},
			},
		},
		{
			name: "role rules change",
			change: func(ctx context.Context) error {
				_, err := rbac.Roles("ns1").Update(ctx, role("ns1", "late", rule("list", "", "pods")), metav1.UpdateOptions{})
				return err
			},
			checks: []check{
				{"get revoked", frankGets, none, ""},
				{"list granted", frankLists, allow, byRole},
			},
		},
		{
			name: "binding subjects change",
			change: func(ctx context.Context) error {
				_, err := rbac.RoleBindings("ns1").Update(ctx, roleBinding("ns1", "frank", toClusterRole("pod-reader"), groupSubj("team")), metav1.UpdateOptions{})
				return err
			},
			checks: []check{
				{"old subject revoked", frankLists, none, ""},
				{"new subject granted", graceGets, allow, `RBAC: allowed by RoleBinding "frank/ns1" of ClusterRole "pod-reader" to Group "team"`},
			},
		},
		{
			name: "ClusterRole rules change, as aggregation does",
			change: func(ctx context.Context) error {
				_, err := rbac.ClusterRoles().Update(ctx, clusterRole("pod-reader", rule("watch", "", "pods")), metav1.UpdateOptions{})
				return err
			},
			checks: []check{
				{"get revoked", graceGets, none, ""},
				{"watch granted", resourceRequest(grace, "watch", "ns1", "", "pods", "", ""), allow, `RBAC: allowed by RoleBinding "frank/ns1" of ClusterRole "pod-reader" to Group "team"`},
			},
		},
		{
			name: "ClusterRoleBinding created",
			change: func(ctx context.Context) error {
				_, err := rbac.ClusterRoleBindings().Create(ctx, clusterRoleBinding("grace", toClusterRole("pod-reader"), userSubj("grace")), metav1.CreateOptions{})
				return err
			},
			checks: []check{
				{"granted cluster-wide", resourceRequest(grace, "watch", "", "", "pods", "", ""), allow, `RBAC: allowed by ClusterRoleBinding "grace" of ClusterRole "pod-reader" to User "grace"`},
			},
		},
		{
			name: "role deleted",
			change: func(ctx context.Context) error {
				return rbac.ClusterRoles().Delete(ctx, "pod-reader", metav1.DeleteOptions{})
			},
			checks: []check{
				{"revoked and named", resourceRequest(grace, "watch", "", "", "pods", "", ""), none, `RBAC: clusterrole.rbac.authorization.k8s.io "pod-reader" not found`},
			},
		},
		{
			name: "bindings deleted",
			change: func(ctx context.Context) error {
				if err := rbac.ClusterRoleBindings().Delete(ctx, "grace", metav1.DeleteOptions{}); err != nil {
					return err
				}
				return rbac.RoleBindings("ns1").Delete(ctx, "frank", metav1.DeleteOptions{})
			},
			checks: []check{
				{"nothing left to name", resourceRequest(grace, "watch", "ns1", "", "pods", "", ""), none, ""},
			},
		},
	}
	for _, step := range steps {
		ctx := context.Background()
		if err := step.change(ctx); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			for _, c := range step.checks {
				if !c.holds(a) {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			for _, c := range step.checks {
				c.assert(t, a)
			}
			t.Fatalf("%s: index did not converge", step.name)
		}
	}
	a.idx.mu.RLock()
	defer a.idx.mu.RUnlock()
	if len(a.idx.bindings) != 0 || len(a.idx.users) != 0 || len(a.idx.groups) != 0 {
		t.Errorf("after deleting every binding the index still holds %d bindings, %d users, %d groups", len(a.idx.bindings), len(a.idx.users), len(a.idx.groups))
	}
}

func TestNotSyncedFailsClosed(t *testing.T) {
	client := fake.NewSimpleClientset(clusterRoleBinding("all", toClusterRole("all"), groupSubj("system:authenticated")))
	a, err := New(informers.NewSharedInformerFactory(client, 0).Rbac().V1())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	u := person("alice", "system:authenticated")
	if a.HasSynced() {
		t.Fatal("HasSynced before the informers started")
	}
	d, reason, err := a.Authorize(context.Background(), urlRequest(u, "get", "/healthz"))
	if d != authorizer.DecisionNoOpinion || reason == "" || err != nil {
		t.Errorf("Authorize = (%v, %q, %v), want NoOpinion with a reason", d, reason, err)
	}
	if _, _, incomplete, err := a.RulesFor(context.Background(), u, ""); !incomplete || err == nil {
		t.Errorf("RulesFor: incomplete %v, err %v; want incomplete with an error", incomplete, err)
	}
	if _, err := a.GrantedRules(u, ""); err == nil {
		t.Error("GrantedRules: want an error before sync")
	}
	if _, err := a.RoleRefRules("", toClusterRole("all")); err == nil {
		t.Error("RoleRefRules: want an error before sync")
	}
}

func TestRulesFor(t *testing.T) {
	a, _ := startAuthorizer(t,
		clusterRole("viewer", rule("get,list", "", "pods"), urlRule("get", "/healthz", "/version")),
		clusterRole("mixed", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/log"}, NonResourceURLs: []string{"/logs"}}),
		role("ns1", "secrets", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"s1"}}),
		clusterRoleBinding("viewers", toClusterRole("viewer"), groupSubj("viewers")),
		roleBinding("ns1", "secrets", toRole("secrets"), userSubj("alice")),
		roleBinding("ns1", "mixed", toClusterRole("mixed"), userSubj("alice")),
		roleBinding("ns2", "secrets", toRole("secrets"), userSubj("alice")),
	)
	alice := person("alice", "viewers")
	clusterResources := []authorizer.DefaultResourceRuleInfo{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}}
	clusterURLs := []authorizer.DefaultNonResourceRuleInfo{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/version"}}}
	tests := []struct {
		name          string
		namespace     string
		wantResources []authorizer.DefaultResourceRuleInfo
		wantURLs      []authorizer.DefaultNonResourceRuleInfo
		wantErr       string
	}{
		{name: "cluster-wide", wantResources: clusterResources, wantURLs: clusterURLs},
		{
			// The user's own bindings come before its groups'.
			name:      "namespace adds its RoleBindings",
			namespace: "ns1",
			wantResources: append([]authorizer.DefaultResourceRuleInfo{
				{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/log"}},
				{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"s1"}},
			}, clusterResources...),
			wantURLs: append([]authorizer.DefaultNonResourceRuleInfo{{Verbs: []string{"get"}, NonResourceURLs: []string{"/logs"}}}, clusterURLs...),
		},
		{
			name:          "missing role is reported with the rules found",
			namespace:     "ns2",
			wantResources: clusterResources,
			wantURLs:      clusterURLs,
			wantErr:       `role.rbac.authorization.k8s.io "secrets" not found`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resources, urls, incomplete, err := a.RulesFor(context.Background(), alice, tt.namespace)
			if incomplete {
				t.Error("incomplete = true")
			}
			if gotErr := errString(err); gotErr != tt.wantErr {
				t.Errorf("err = %q, want %q", gotErr, tt.wantErr)
			}
			var gotResources []authorizer.DefaultResourceRuleInfo
			for _, r := range resources {
				gotResources = append(gotResources, *r.(*authorizer.DefaultResourceRuleInfo))
			}
			var gotURLs []authorizer.DefaultNonResourceRuleInfo
			for _, r := range urls {
				gotURLs = append(gotURLs, *r.(*authorizer.DefaultNonResourceRuleInfo))
			}
			if !slices.EqualFunc(gotResources, tt.wantResources, equalResourceRule) {
				t.Errorf("resource rules = %+v, want %+v", gotResources, tt.wantResources)
			}
			if !slices.EqualFunc(gotURLs, tt.wantURLs, equalURLRule) {
				t.Errorf("non-resource rules = %+v, want %+v", gotURLs, tt.wantURLs)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func equalResourceRule(a, b authorizer.DefaultResourceRuleInfo) bool {
	return slices.Equal(a.Verbs, b.Verbs) && slices.Equal(a.APIGroups, b.APIGroups) &&
		slices.Equal(a.Resources, b.Resources) && slices.Equal(a.ResourceNames, b.ResourceNames)
}

func equalURLRule(a, b authorizer.DefaultNonResourceRuleInfo) bool {
	return slices.Equal(a.Verbs, b.Verbs) && slices.Equal(a.NonResourceURLs, b.NonResourceURLs)
}

func TestGrantedRules(t *testing.T) {
	a, _ := startAuthorizer(t,
		clusterRole("reader", rule("get", "", "pods")),
		role("ns1", "writer", rule("create", "", "pods")),
		// Naming the user twice over must not double its rules.
		clusterRoleBinding("readers", toClusterRole("reader"), userSubj("alice"), groupSubj("team"), userSubj("alice")),
		roleBinding("ns1", "writers", toRole("writer"), groupSubj("team")),
	)
	alice := person("alice", "team")
	tests := []struct {
		name      string
		namespace string
		want      []rbacv1.PolicyRule
	}{
		{"cluster-wide only", "", []rbacv1.PolicyRule{rule("get", "", "pods")}},
		{"with the namespace's RoleBindings", "ns1", []rbacv1.PolicyRule{rule("get", "", "pods"), rule("create", "", "pods")}},
		{"namespace without bindings", "ns2", []rbacv1.PolicyRule{rule("get", "", "pods")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := a.GrantedRules(alice, tt.namespace)
			if err != nil {
				t.Fatalf("GrantedRules: %v", err)
			}
			if !slices.EqualFunc(got, tt.want, equalPolicyRule) {
				t.Errorf("GrantedRules = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func equalPolicyRule(a, b rbacv1.PolicyRule) bool {
	return slices.Equal(a.Verbs, b.Verbs) && slices.Equal(a.APIGroups, b.APIGroups) &&
		slices.Equal(a.Resources, b.Resources) && slices.Equal(a.ResourceNames, b.ResourceNames) &&
		slices.Equal(a.NonResourceURLs, b.NonResourceURLs)
}

func TestRoleRefRules(t *testing.T) {
	a, _ := startAuthorizer(t,
		clusterRole("reader", rule("get", "", "pods")),
		clusterRole("empty"),
		role("ns1", "writer", rule("create", "", "pods")),
	)
	tests := []struct {
		name         string
		namespace    string
		ref          rbacv1.RoleRef
		want         []rbacv1.PolicyRule
		wantNotFound bool
		wantErr      bool
	}{
		{name: "ClusterRole", namespace: "ns1", ref: toClusterRole("reader"), want: []rbacv1.PolicyRule{rule("get", "", "pods")}},
		{name: "ClusterRole from a ClusterRoleBinding", ref: toClusterRole("reader"), want: []rbacv1.PolicyRule{rule("get", "", "pods")}},
		{name: "ClusterRole without rules", ref: toClusterRole("empty"), want: []rbacv1.PolicyRule{}},
		{name: "Role in the binding's namespace", namespace: "ns1", ref: toRole("writer"), want: []rbacv1.PolicyRule{rule("create", "", "pods")}},
		{name: "Role of another namespace", namespace: "ns2", ref: toRole("writer"), wantNotFound: true, wantErr: true},
		{name: "Role from a ClusterRoleBinding", ref: toRole("writer"), wantNotFound: true, wantErr: true},
		{name: "missing ClusterRole", ref: toClusterRole("ghost"), wantNotFound: true, wantErr: true},
		{name: "unknown kind", ref: rbacv1.RoleRef{Kind: "Policy", Name: "reader"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := a.RoleRefRules(tt.namespace, tt.ref)
			if (err != nil) != tt.wantErr || apierrors.IsNotFound(err) != tt.wantNotFound {
				t.Fatalf("err = %v, want error %v, NotFound %v", err, tt.wantErr, tt.wantNotFound)
			}
			if !tt.wantErr && !slices.EqualFunc(got, tt.want, equalPolicyRule) {
				t.Errorf("rules = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestEventHandling drives the handlers with what informers can deliver besides plain
// objects: tombstones for deletes missed by a watch, duplicate subjects, other types.
func TestEventHandling(t *testing.T) {
	idx := newIndex()
	var deleted []string
	h := handler(
		func(b *rbacv1.RoleBinding) {
			idx.setBinding(newBinding(bindingKey{namespace: b.Namespace, name: b.Name}, b.RoleRef, b.Subjects))
		},
		func(b *rbacv1.RoleBinding) {
			deleted = append(deleted, b.Name)
			idx.deleteBinding(bindingKey{namespace: b.Namespace, name: b.Name})
		},
	)
	twice := roleBinding("ns1", "twice", toRole("r"), userSubj("alice"), userSubj("alice"), groupSubj("g"))
	h.OnAdd(twice, true)
	if got := len(idx.users["alice"].namespaced["ns1"]); got != 1 {
		t.Errorf("a subject listed twice indexes the binding %d times, want 1", got)
	}
	h.OnUpdate(twice, roleBinding("ns1", "twice", toRole("r"), userSubj("bob")))
	if _, ok := idx.groups["g"]; ok {
		t.Error("update left the removed group subject indexed")
	}
	h.OnAdd(&rbacv1.Role{}, false)
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns1/twice", Obj: twice})
	if !slices.Equal(deleted, []string{"twice"}) {
		t.Errorf("deleted = %v, want the tombstone's binding", deleted)
	}
	if len(idx.bindings) != 0 || len(idx.users) != 0 || len(idx.groups) != 0 {
		t.Errorf("index holds %d bindings, %d users, %d groups after delete; want none", len(idx.bindings), len(idx.users), len(idx.groups))
	}
}

func TestNewOnStoppedInformers(t *testing.T) {
	factory := informers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0)
	inf := factory.Rbac().V1()
	// Asking for the informers registers them, so Start runs and Shutdown stops them.
	inf.Roles().Informer()
	inf.RoleBindings().Informer()
	inf.ClusterRoles().Informer()
	inf.ClusterRoleBindings().Informer()
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	cancel()
	factory.Shutdown()
	if _, err := New(inf); err == nil {
		t.Error("New on stopped informers succeeded, want an error")
	}
}
