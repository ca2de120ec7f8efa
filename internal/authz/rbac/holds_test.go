package rbac

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// TestHoldsClusterPolicy: synced on an empty list, the index holds a policy written afterwards
// only once its events arrived: HoldsClusterPolicy says so, where HasSynced already says true.
func TestHoldsClusterPolicy(t *testing.T) {
	a, client := startAuthorizer(t, clusterRole("present", rule("get", "", "pods")))
	roles, bindings := []string{"present", "late"}, []string{"late-binding"}
	if !a.HasSynced() || a.HoldsClusterPolicy(roles, bindings) {
		t.Fatalf("before the writes: HasSynced %v, HoldsClusterPolicy %v; want true, false", a.HasSynced(), a.HoldsClusterPolicy(roles, bindings))
	}
	if !a.HoldsClusterPolicy([]string{"present"}, nil) {
		t.Errorf("HoldsClusterPolicy of the listed role: false")
	}
	ctx := context.Background()
	if _, err := client.RbacV1().ClusterRoles().Create(ctx, clusterRole("late", rule("get", "", "nodes")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A namespaced binding of the same name is not the cluster binding.
	if _, err := client.RbacV1().RoleBindings("ns1").Create(ctx, roleBinding("ns1", "late-binding", toClusterRole("late"), userSubj("frank")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	holdsRole := func(context.Context) (bool, error) { return a.HoldsClusterPolicy(roles, nil), nil }
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, holdsRole); err != nil {
		t.Fatalf("the index never held the role written after sync: %v", err)
	}
	frankGetsNodes := check{attrs: resourceRequest(person("frank"), "get", "ns1", "", "nodes", "", "n")}
	rolebindingArrived := func(context.Context) (bool, error) {
		d, _, err := frankGetsNodes.run(a)
		return err == nil && d == authorizer.DecisionAllow, nil
	}
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, rolebindingArrived); err != nil {
		t.Fatalf("the index never held the RoleBinding: %v", err)
	}
	if a.HoldsClusterPolicy(roles, bindings) {
		t.Errorf("HoldsClusterPolicy counts a RoleBinding as the ClusterRoleBinding of its name")
	}
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, clusterRoleBinding("late-binding", toClusterRole("late"), userSubj("frank")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	holdsAll := func(context.Context) (bool, error) { return a.HoldsClusterPolicy(roles, bindings), nil }
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, holdsAll); err != nil {
		t.Fatalf("the index never held the binding written after sync: %v", err)
	}
}
