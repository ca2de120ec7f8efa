package escalation

import (
	"context"
	"errors"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// fakeRules serves rules held per user and namespace, and role contents per namespace/name.
type fakeRules struct {
	held       map[string][]rbacv1.PolicyRule // "user/namespace"
	resolveErr error
	roles      map[string][]rbacv1.PolicyRule // "namespace/Kind/name"
}

func (f *fakeRules) GrantedRules(u user.Info, namespace string) ([]rbacv1.PolicyRule, error) {
	return f.held[u.GetName()+"/"+namespace], f.resolveErr
}

func (f *fakeRules) RoleRefRules(namespace string, ref rbacv1.RoleRef) ([]rbacv1.PolicyRule, error) {
	if ref.Kind == "ClusterRole" {
		namespace = ""
	}
	rules, ok := f.roles[namespace+"/"+ref.Kind+"/"+ref.Name]
	if !ok {
		return nil, apierrors.NewNotFound(rbacv1.Resource(ref.Kind), ref.Name)
	}
	return rules, nil
}

// grant is one permission the fake authorizer allows: a user's verb on a resource in a
// namespace, for one object name or (empty name) any.
type grant struct{ user, verb, resource, namespace, name string }

func fakeAuthorizer(grants ...grant) authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		for _, g := range grants {
			if g.user == a.GetUser().GetName() && g.verb == a.GetVerb() && a.GetAPIGroup() == rbacv1.GroupName &&
				g.resource == a.GetResource() && g.namespace == a.GetNamespace() && (g.name == "" || g.name == a.GetName()) {
				return authorizer.DecisionAllow, "", nil
			}
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
}

func rule(group, resource string, verbs ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, Verbs: verbs}
}

var (
	bob   = &user.DefaultInfo{Name: "bob", Groups: []string{"devs", user.AllAuthenticated}}
	admin = &user.DefaultInfo{Name: "idplane-admin", Groups: []string{user.SystemPrivilegedGroup}}

	podReader = []rbacv1.PolicyRule{rule("", "pods", "get", "list", "watch")}
	podWriter = []rbacv1.PolicyRule{rule("", "pods", "create", "delete"), rule("apps", "deployments", "get")}
)

func newGuard(grants ...grant) *Guard {
	return &Guard{
		Authorizer: fakeAuthorizer(grants...),
		Rules: &fakeRules{
			held: map[string][]rbacv1.PolicyRule{
				"bob/team-a": podReader,
				"bob/":       {rule("", "namespaces", "get")},
			},
			roles: map[string][]rbacv1.PolicyRule{
				"team-a/Role/reader":   podReader,
				"team-a/Role/writer":   podWriter,
				"/ClusterRole/view":    podReader,
				"/ClusterRole/admin":   fullAuthority,
				"/ClusterRole/ns-read": {rule("", "namespaces", "get")},
			},
		},
	}
}

func userCtx(u user.Info) context.Context {
	return request.WithUser(context.Background(), u)
}

// updateCtx is the context of a request naming the object, as updates do.
func updateCtx(u user.Info, namespace, resource, name string) context.Context {
	return request.WithRequestInfo(userCtx(u), &request.RequestInfo{
		IsResourceRequest: true, Verb: "update", APIGroup: rbacv1.GroupName, Resource: resource, Namespace: namespace, Name: name,
	})
}

const missingPodWrites = `user "bob" (groups=["devs" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["pods"], Verbs:["create" "delete"]}
{APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}`

func TestConfirmRole(t *testing.T) {
	tests := []struct {
		name      string
		guard     *Guard
		ctx       context.Context
		namespace string
		rules     []rbacv1.PolicyRule
		wantErr   string
	}{
		{name: "held rules", guard: newGuard(), ctx: userCtx(bob), namespace: "team-a", rules: podReader},
		{name: "subset of held rules", guard: newGuard(), ctx: userCtx(bob), namespace: "team-a", rules: []rbacv1.PolicyRule{rule("", "pods", "get")}},
		{name: "no rules", guard: newGuard(), ctx: userCtx(bob), namespace: "team-a"},
		{name: "rules not held", guard: newGuard(), ctx: userCtx(bob), namespace: "team-a", rules: podWriter, wantErr: missingPodWrites},
		{
			name: "rules held in another namespace", guard: newGuard(), ctx: userCtx(bob), namespace: "team-b", rules: podReader,
			wantErr: `user "bob" (groups=["devs" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["pods"], Verbs:["get" "list" "watch"]}`,
		},
		{name: "system:masters", guard: &Guard{}, ctx: userCtx(admin), namespace: "team-a", rules: fullAuthority},
		{name: "escalate on roles", guard: newGuard(grant{"bob", "escalate", "roles", "team-a", ""}), ctx: userCtx(bob), namespace: "team-a", rules: podWriter},
		{name: "escalate in another namespace", guard: newGuard(grant{"bob", "escalate", "roles", "team-b", ""}), ctx: userCtx(bob), namespace: "team-a", rules: podWriter, wantErr: missingPodWrites},
		{
			name:  "escalate on the named role covers its update",
			guard: newGuard(grant{"bob", "escalate", "roles", "team-a", "deployer"}),
			ctx:   updateCtx(bob, "team-a", "roles", "deployer"), namespace: "team-a", rules: podWriter,
		},
		{
			name:  "escalate on the named role does not cover creating it",
			guard: newGuard(grant{"bob", "escalate", "roles", "team-a", "deployer"}),
			ctx:   userCtx(bob), namespace: "team-a", rules: podWriter, wantErr: missingPodWrites,
		},
		{
			name:  "escalate on roles does not cover cluster roles",
			guard: newGuard(grant{"bob", "escalate", "roles", "", ""}),
			ctx:   userCtx(bob), rules: []rbacv1.PolicyRule{rule("", "pods", "get")},
			wantErr: `user "bob" (groups=["devs" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`,
		},
		{name: "escalate on cluster roles", guard: newGuard(grant{"bob", "escalate", "clusterroles", "", ""}), ctx: userCtx(bob), rules: fullAuthority},
		{name: "cluster role with cluster-wide rules held", guard: newGuard(), ctx: userCtx(bob), rules: []rbacv1.PolicyRule{rule("", "namespaces", "get")}},
		{
			name: "non-resource URL", guard: newGuard(), ctx: userCtx(bob),
			rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
			wantErr: `user "bob" (groups=["devs" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{NonResourceURLs:["/metrics"], Verbs:["get"]}`,
		},
		{name: "no user", guard: newGuard(), ctx: context.Background(), namespace: "team-a", wantErr: "no user on context"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectErr(t, tc.guard.ConfirmRole(tc.ctx, tc.namespace, tc.rules), tc.wantErr)
		})
	}
}

func TestConfirmRoleReportsResolutionErrors(t *testing.T) {
	g := newGuard()
	g.Rules.(*fakeRules).resolveErr = errors.New(`clusterrole.rbac.authorization.k8s.io "gone" not found`)

	// What did resolve is enough.
	expectErr(t, g.ConfirmRole(userCtx(bob), "team-a", podReader), "")
	// Otherwise the refusal says why the user may hold less than expected.
	expectErr(t, g.ConfirmRole(userCtx(bob), "team-a", []rbacv1.PolicyRule{rule("", "pods", "delete")}),
		`user "bob" (groups=["devs" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}; resolution errors: clusterrole.rbac.authorization.k8s.io "gone" not found`)
}

func TestConfirmAggregationRule(t *testing.T) {
	const refused = "must have cluster-admin privileges to use the aggregationRule"
	holdsAll := newGuard()
	holdsAll.Rules.(*fakeRules).held["bob/"] = fullAuthority

	tests := []struct {
		name    string
		guard   *Guard
		ctx     context.Context
		wantErr string
	}{
		{name: "system:masters", guard: &Guard{}, ctx: userCtx(admin)},
		{name: "escalate on cluster roles", guard: newGuard(grant{"bob", "escalate", "clusterroles", "", ""}), ctx: userCtx(bob)},
		{name: "holds everything", guard: holdsAll, ctx: userCtx(bob)},
		{name: "holds less than everything", guard: newGuard(), ctx: userCtx(bob), wantErr: refused},
		{name: "escalate on roles only", guard: newGuard(grant{"bob", "escalate", "roles", "team-a", ""}), ctx: userCtx(bob), wantErr: refused},
		{name: "no user", guard: newGuard(), ctx: context.Background(), wantErr: "no user on context"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectErr(t, tc.guard.ConfirmAggregationRule(tc.ctx), tc.wantErr)
		})
	}
}

func TestConfirmBinding(t *testing.T) {
	roleRef := func(kind, name string) rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: name}
	}
	tests := []struct {
		name      string
		guard     *Guard
		ctx       context.Context
		namespace string
		ref       rbacv1.RoleRef
		wantErr   string
		notFound  bool
	}{
		{name: "role whose rules are held", guard: newGuard(), ctx: userCtx(bob), namespace: "team-a", ref: roleRef("Role", "reader")},
		{name: "cluster role whose rules are held in the namespace", guard: newGuard(), ctx: userCtx(bob), namespace: "team-a", ref: roleRef("ClusterRole", "view")},
		{name: "cluster role bound cluster-wide with rules held there", guard: newGuard(), ctx: userCtx(bob), ref: roleRef("ClusterRole", "ns-read")},
		{name: "role whose rules are not held", guard: newGuard(), ctx: userCtx(bob), namespace: "team-a", ref: roleRef("Role", "writer"), wantErr: missingPodWrites},
		{
			name: "cluster role bound cluster-wide with rules held only in a namespace", guard: newGuard(), ctx: userCtx(bob), ref: roleRef("ClusterRole", "view"),
			wantErr: `user "bob" (groups=["devs" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["pods"], Verbs:["get" "list" "watch"]}`,
		},
		{name: "system:masters", guard: &Guard{}, ctx: userCtx(admin), namespace: "team-a", ref: roleRef("ClusterRole", "admin")},
		{name: "bind on the role", guard: newGuard(grant{"bob", "bind", "roles", "team-a", "writer"}), ctx: userCtx(bob), namespace: "team-a", ref: roleRef("Role", "writer")},
		{
			name: "bind on another role", guard: newGuard(grant{"bob", "bind", "roles", "team-a", "reader"}), ctx: userCtx(bob), namespace: "team-a", ref: roleRef("Role", "writer"),
			wantErr: missingPodWrites,
		},
		{
			name:  "bind on a cluster role delegated in the namespace",
			guard: newGuard(grant{"bob", "bind", "clusterroles", "team-a", "admin"}), ctx: userCtx(bob), namespace: "team-a", ref: roleRef("ClusterRole", "admin"),
		},
		{
			name:  "bind delegated in a namespace does not cover cluster role bindings",
			guard: newGuard(grant{"bob", "bind", "clusterroles", "team-a", "admin"}), ctx: userCtx(bob), ref: roleRef("ClusterRole", "admin"),
			wantErr: `user "bob" (groups=["devs" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:["*"], Resources:["*"], Verbs:["*"]}
{NonResourceURLs:["*"], Verbs:["*"]}`,
		},
		{name: "bind on roles does not cover cluster roles", guard: newGuard(grant{"bob", "bind", "roles", "team-a", ""}), ctx: userCtx(bob), namespace: "team-a", ref: roleRef("ClusterRole", "admin"),
			wantErr: `user "bob" (groups=["devs" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:["*"], Resources:["*"], Verbs:["*"]}
{NonResourceURLs:["*"], Verbs:["*"]}`,
		},
		{name: "missing role", guard: newGuard(), ctx: userCtx(bob), namespace: "team-a", ref: roleRef("Role", "gone"), notFound: true},
		{name: "unknown kind", guard: newGuard(), ctx: userCtx(bob), namespace: "team-a", ref: roleRef("Group", "devs"), wantErr: `roleRef.kind "Group" is neither Role nor ClusterRole`},
		{name: "cluster-wide binding to a role", guard: &Guard{}, ctx: userCtx(admin), ref: roleRef("Role", "reader"), wantErr: "a ClusterRoleBinding can only reference a ClusterRole"},
		{name: "unknown kind from system:masters", guard: &Guard{}, ctx: userCtx(admin), namespace: "team-a", ref: roleRef("User", "admin"), wantErr: `roleRef.kind "User" is neither Role nor ClusterRole`},
		{name: "unknown kind for a user who may bind anything", guard: newGuard(grant{"bob", "bind", "roles", "team-a", ""}), ctx: userCtx(bob), namespace: "team-a", ref: roleRef("", "writer"), wantErr: `roleRef.kind "" is neither Role nor ClusterRole`},
		{name: "no user", guard: newGuard(), ctx: context.Background(), namespace: "team-a", ref: roleRef("Role", "reader"), wantErr: "no user on context"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.guard.ConfirmBinding(tc.ctx, tc.namespace, tc.ref)
			if tc.notFound {
				if !apierrors.IsNotFound(err) {
					t.Errorf("error = %v, want NotFound", err)
				}
				return
			}
			expectErr(t, err, tc.wantErr)
		})
	}
}

func TestCompact(t *testing.T) {
	missing := []rbacv1.PolicyRule{
		rule("", "pods", "get"),
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"a"}, Verbs: []string{"get"}},
		rule("", "pods", "list"),
		{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"a"}, Verbs: []string{"update"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"b"}, Verbs: []string{"get"}},
	}

	var got []string
	for _, r := range compact(missing) {
		got = append(got, describe(r))
	}
	want := []string{
		`{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}`,
		`{APIGroups:[""], Resources:["secrets"], ResourceNames:["a"], Verbs:["get" "update"]}`,
		`{NonResourceURLs:["/metrics"], Verbs:["get"]}`,
		`{APIGroups:[""], Resources:["secrets"], ResourceNames:["b"], Verbs:["get"]}`,
	}
	if len(got) != len(want) {
		t.Fatalf("compact = %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("compact[%d] = %s, want %s", i, got[i], want[i])
		}
	}
	if len(missing[0].Verbs) != 1 || missing[0].Verbs[0] != "get" {
		t.Errorf("compact modified its input: %v", missing[0])
	}
}

func expectErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("unexpected error: %v", err)
	case want != "" && err == nil:
		t.Errorf("no error, want %q", want)
	case want != "" && err.Error() != want:
		t.Errorf("error =\n%s\nwant\n%s", err, want)
	}
}
