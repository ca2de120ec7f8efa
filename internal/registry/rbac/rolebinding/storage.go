// Package rolebinding stores RBAC RoleBindings; a user may only bind a role whose rules they
// already hold in the binding's namespace, unless they may bind that role.
package rolebinding

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/idplane/idplane/internal/registry/rbac/escalation"
	"github.com/idplane/idplane/internal/registry/rbac/policybased"
	"github.com/idplane/idplane/internal/registry/store"
	"github.com/idplane/idplane/internal/validation"
)

// strategy returns the create and update rules of role bindings. As upstream, PUT may create a
// binding, which is how reconciling clients (kubectl auth reconcile) write them.
func strategy(typer runtime.ObjectTyper) *store.Strategy[*rbacv1.RoleBinding] {
	return store.NewStrategy(typer, store.Rules[*rbacv1.RoleBinding]{
		Namespaced:          true,
		Validate:            validation.ValidateRoleBinding,
		ValidateUpdate:      validation.ValidateRoleBindingUpdate,
		AllowCreateOnUpdate: true,
	})
}

// NewREST returns the storage of role bindings, by resource path.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter, guard *escalation.Guard) (map[string]rest.Storage, error) {
	s, err := store.New(optsGetter, store.Options{
		Resource: rbacv1.Resource("rolebindings"),
		Singular: "rolebinding",
		Kind:     rbacv1.SchemeGroupVersion.WithKind("RoleBinding"),
		New:      func() runtime.Object { return &rbacv1.RoleBinding{} },
		NewList:  func() runtime.Object { return &rbacv1.RoleBindingList{} },
		Strategy: strategy(typer),
	})
	if err != nil {
		return nil, err
	}
	return map[string]rest.Storage{"rolebindings": policybased.New(s, check(guard))}, nil
}

// check confirms that the request's user may write binding in the request's namespace (the
// object's may still be empty, to be filled from the request). Every update is checked, not
// only role changes: adding a subject hands the role out too.
func check(guard *escalation.Guard) policybased.Check[*rbacv1.RoleBinding] {
	return func(ctx context.Context, binding, _ *rbacv1.RoleBinding) error {
		return guard.ConfirmBinding(ctx, request.NamespaceValue(ctx), binding.RoleRef)
	}
}
