// Package clusterrole stores RBAC ClusterRoles; a user may only write a cluster role granting what
// they already hold cluster-wide, unless they may escalate cluster roles.
package clusterrole

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

// strategy returns the create and update rules of cluster roles. As upstream, PUT may create a
// cluster role, which is how reconciling clients (kubectl auth reconcile) write them.
func strategy(typer runtime.ObjectTyper) *store.Strategy[*rbacv1.ClusterRole] {
	return store.NewStrategy(typer, store.Rules[*rbacv1.ClusterRole]{
		Validate:            validation.ValidateClusterRole,
		ValidateUpdate:      validation.ValidateClusterRoleUpdate,
		AllowCreateOnUpdate: true,
	})
}

// NewREST returns the storage of cluster roles, by resource path.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter, guard *escalation.Guard) (map[string]rest.Storage, error) {
	s, err := store.New(optsGetter, store.Options{
		Resource: rbacv1.Resource("clusterroles"),
		Singular: "clusterrole",
		Kind:     rbacv1.SchemeGroupVersion.WithKind("ClusterRole"),
		New:      func() runtime.Object { return &rbacv1.ClusterRole{} },
		NewList:  func() runtime.Object { return &rbacv1.ClusterRoleList{} },
		Strategy: strategy(typer),
	})
	if err != nil {
		return nil, err
	}
	return map[string]rest.Storage{"clusterroles": policybased.New(s, check(guard))}, nil
}

// check confirms that the request's user may write role. Setting, changing or removing an
// aggregation rule takes more: it can gather any permission, and removing it would freeze what
// it gathered.
func check(guard *escalation.Guard) policybased.Check[*rbacv1.ClusterRole] {
	return func(ctx context.Context, role, old *rbacv1.ClusterRole) error {
		if err := guard.ConfirmRole(ctx, "", role.Rules); err != nil {
			return err
		}
		if aggregates(role) || (old != nil && aggregates(old)) {
			return guard.ConfirmAggregationRule(ctx)
		}
		return nil
	}
}

func aggregates(role *rbacv1.ClusterRole) bool {
	return role.AggregationRule != nil && len(role.AggregationRule.ClusterRoleSelectors) > 0
}
