package apiserver

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/idplane/idplane/internal/authz/rbac"
	"github.com/idplane/idplane/internal/authz/rbac/bootstrap"
)

// TestBootstrapRBACWaitsForTheIndex: the start-up hook returns only once the RBAC index holds
// the whole default policy; a default object that never arrives (here a create the store lost,
// as if deleted right after) is reconciled again rather than waited for for ever.
func TestBootstrapRBACWaitsForTheIndex(t *testing.T) {
	client := fake.NewClientset()
	lost := bootstrap.ClusterRoleBindings()[0].Name
	var dropped atomic.Int32
	client.PrependReactor("create", "clusterrolebindings", func(a clienttesting.Action) (bool, runtime.Object, error) {
		b := a.(clienttesting.CreateAction).GetObject().(*rbacv1.ClusterRoleBinding)
		if b.Name == lost && dropped.Add(1) == 1 {
			return true, b, nil // answered, never stored
		}
		return false, nil, nil
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	index, err := rbac.New(factory.Rbac().V1())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	factory.Start(ctx.Done())
	defer func() {
		cancel()
		factory.Shutdown()
	}()

	if err := bootstrapRBAC(ctx, client, index, 200*time.Millisecond); err != nil {
		t.Fatalf("bootstrapRBAC: %v", err)
	}
	if dropped.Load() < 2 {
		t.Errorf("the lost binding %s was created %d times, want it created again", lost, dropped.Load())
	}
	var roles, bindings []string
	for _, r := range bootstrap.ClusterRoles() {
		roles = append(roles, r.Name)
	}
	for _, b := range bootstrap.ClusterRoleBindings() {
		bindings = append(bindings, b.Name)
	}
	if !index.HoldsClusterPolicy(roles, bindings) {
		t.Errorf("bootstrapRBAC returned before the index held the default policy")
	}
}
