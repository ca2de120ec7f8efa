package rbac

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// benchPolicy returns n Roles with n RoleBindings spread over n/10 namespaces, n/10
// ClusterRoles with their ClusterRoleBindings, and the bindings of the benchmark's user:
// a RoleBinding in namespace ns-7, and ClusterRoleBindings to groups team and
// system:authenticated. Background RoleBindings name groups g-0…g-199, so a user in many
// of those groups has bindings to look through that do not grant its request.
func benchPolicy(n int) []runtime.Object {
	namespaces := max(1, n/10)
	objs := make([]runtime.Object, 0, 2*n+2*(n/10)+6)
	for i := range n {
		ns := "ns-" + strconv.Itoa(i%namespaces)
		name := "role-" + strconv.Itoa(i)
		objs = append(objs,
			role(ns, name,
				rule("get,list,watch", "", "pods", "services", "configmaps"),
				rbacv1.PolicyRule{Verbs: []string{"get", "update"}, APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"s-" + strconv.Itoa(i)}},
			),
			roleBinding(ns, "rb-"+strconv.Itoa(i), toRole(name),
				userSubj("user-"+strconv.Itoa(i)), groupSubj("g-"+strconv.Itoa(i%200)), saSubj(ns, "sa-"+strconv.Itoa(i))),
		)
	}
	for j := range n / 10 {
		name := "cr-" + strconv.Itoa(j)
		objs = append(objs,
			clusterRole(name, rule("get,list", "apps", "deployments", "statefulsets")),
			clusterRoleBinding("crb-"+strconv.Itoa(j), toClusterRole(name), userSubj("cuser-"+strconv.Itoa(j)), groupSubj("cg-"+strconv.Itoa(j))),
		)
	}
	return append(objs,
		role("ns-7", "alice", rule("get,list", "", "pods"), rule("get", "", "pods/log")),
		roleBinding("ns-7", "alice", toRole("alice"), userSubj("alice")),
		clusterRole("node-reader", rule("get,list", "", "nodes")),
		clusterRoleBinding("team-nodes", toClusterRole("node-reader"), groupSubj("team")),
		clusterRole("discovery", urlRule("get", "/healthz", "/version", "/api", "/api/*", "/apis", "/apis/*")),
		clusterRoleBinding("discovery", toClusterRole("discovery"), groupSubj("system:authenticated")),
	)
}

// benchUser is alice with `groups` groups: system:authenticated first, team last, and
// background groups g-0… between them.
func benchUser(groups int) user.Info {
	gs := []string{"system:authenticated"}
	for i := range groups - 2 {
		gs = append(gs, "g-"+strconv.Itoa(i))
	}
	return &user.DefaultInfo{Name: "alice", Groups: append(gs, "team")}
}

func BenchmarkAuthorize(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("bindings=%d", n), func(b *testing.B) {
			a, _ := startAuthorizer(b, benchPolicy(n)...)
			for _, groups := range []int{3, 100} {
				alice := benchUser(groups)
				cases := []struct {
					name  string
					attrs authorizer.AttributesRecord
					want  authorizer.Decision
				}{
					{"allowed/rolebinding-user", resourceRequest(alice, "get", "ns-7", "", "pods", "", "p"), authorizer.DecisionAllow},
					{"allowed/subresource", resourceRequest(alice, "get", "ns-7", "", "pods", "log", "p"), authorizer.DecisionAllow},
					{"allowed/clusterrolebinding-last-group", resourceRequest(alice, "list", "ns-7", "", "nodes", "", ""), authorizer.DecisionAllow},
					{"allowed/nonresource-first-group", urlRequest(alice, "get", "/apis/apps/v1"), authorizer.DecisionAllow},
					{"denied/namespaced", resourceRequest(alice, "delete", "ns-7", "", "secrets", "", "s"), authorizer.DecisionNoOpinion},
					{"denied/cluster", resourceRequest(alice, "delete", "", "", "nodes", "", "n"), authorizer.DecisionNoOpinion},
					{"denied/no-bindings", resourceRequest(&user.DefaultInfo{Name: "mallory"}, "get", "ns-7", "", "pods", "", "p"), authorizer.DecisionNoOpinion},
				}
				for _, c := range cases {
					b.Run(fmt.Sprintf("groups=%d/%s", groups, c.name), func(b *testing.B) {
						ctx := context.Background()
						// Boxed once, so the figures are the authorizer's own allocations.
						var attrs authorizer.Attributes = c.attrs
						if d, reason, err := a.Authorize(ctx, attrs); d != c.want || err != nil {
							b.Fatalf("Authorize = (%v, %q, %v), want %v", d, reason, err, c.want)
						}
						b.ReportAllocs()
						for b.Loop() {
							_, _, _ = a.Authorize(ctx, attrs)
						}
					})
				}
			}
			b.Run("groups=3/allowed/rolebinding-user/parallel", func(b *testing.B) {
				var attrs authorizer.Attributes = resourceRequest(benchUser(3), "get", "ns-7", "", "pods", "", "p")
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						_, _, _ = a.Authorize(context.Background(), attrs)
					}
				})
			})
		})
	}
}
