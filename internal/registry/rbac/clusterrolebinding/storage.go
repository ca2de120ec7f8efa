// Package clusterrolebinding stores RBAC ClusterRoleBindings; a user may only bind a cluster role
// whose rules they already hold cluster-wide, unless they may bind that cluster role.
package clusterrolebinding

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/idplane/idplane/internal/registry/rbac/escalation"
	"github.com/idplane/idplane/internal/registry/rbac/policybased"
	"github.com/idplane/idplane/internal/registry/store"
	"github.com/idplane/idplane/internal/validation"
)

// strategy returns the create and update rules of cluster role bindings. As upstream, PUT may
// create a binding, which is how reconciling clients (kubectl auth reconcile) write them.
func strategy(typer runtime.ObjectTyper) *store.Strategy[*rbacv1.ClusterRoleBinding] {
	return store.NewStrategy(typer, store.Rules[*rbacv1.ClusterRoleBinding]{
		Validate:            validation.ValidateClusterRoleBinding,
		ValidateUpdate:      validation.ValidateClusterRoleBindingUpdate,
		AllowCreateOnUpdate: true,
	})
}

// NewREST returns the storage of cluster role bindings, by resource path.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter, guard *escalation.Guard) (map[string]rest.Storage, error) {
	s, err := store.New(optsGetter, store.Options{
		Resource: rbacv1.Resource("clusterrolebindings"),
		Singular: "clusterrolebinding",
		Kind:     rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"),
		New:      func() runtime.Object { return &rbacv1.ClusterRoleBinding{} },
		NewList:  func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} },
		Strategy: strategy(typer),
	})
	if err != nil {
		return nil, err
	}
	return map[string]rest.Storage{"clusterrolebindings": policybased.New(s, check(guard))}, nil
}

// check confirms that the request's user may write binding. Every update is checked, not only
// role changes: adding a subject hands the role out too.
func check(guard *escalation.Guard) policybased.Check[*rbacv1.ClusterRoleBinding] {
	return func(ctx context.Context, binding, _ *rbacv1.ClusterRoleBinding) error {
		return guard.ConfirmBinding(ctx, "", binding.RoleRef)
	}
}
