// Package role stores RBAC Roles; a user may only write a role granting what they already hold
// in its namespace, unless they may escalate roles there.
package role

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

// strategy returns the create and update rules of roles. As upstream, PUT may create a role,
// which is how reconciling clients (kubectl auth reconcile) write them.
func strategy(typer runtime.ObjectTyper) *store.Strategy[*rbacv1.Role] {
	return store.NewStrategy(typer, store.Rules[*rbacv1.Role]{
		Namespaced:          true,
		Validate:            validation.ValidateRole,
		ValidateUpdate:      validation.ValidateRoleUpdate,
		AllowCreateOnUpdate: true,
	})
}

// NewREST returns the storage of roles, by resource path.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter, guard *escalation.Guard) (map[string]rest.Storage, error) {
	s, err := store.New(optsGetter, store.Options{
		Resource: rbacv1.Resource("roles"),
		Singular: "role",
		Kind:     rbacv1.SchemeGroupVersion.WithKind("Role"),
		New:      func() runtime.Object { return &rbacv1.Role{} },
		NewList:  func() runtime.Object { return &rbacv1.RoleList{} },
		Strategy: strategy(typer),
	})
	if err != nil {
		return nil, err
	}
	return map[string]rest.Storage{"roles": policybased.New(s, check(guard))}, nil
}

// check confirms that the request's user may write role in the request's namespace (the
// object's may still be empty, to be filled from the request).
func check(guard *escalation.Guard) policybased.Check[*rbacv1.Role] {
	return func(ctx context.Context, role, _ *rbacv1.Role) error {
		return guard.ConfirmRole(ctx, request.NamespaceValue(ctx), role.Rules)
	}
}
