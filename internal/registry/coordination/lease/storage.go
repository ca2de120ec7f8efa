// Package lease stores leases in etcd with idplane's validation.
package lease

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/idplane/idplane/internal/printers"
	"github.com/idplane/idplane/internal/registry/store"
	"github.com/idplane/idplane/internal/validation"
)

// NewREST returns the storage of leases, by resource path.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (map[string]rest.Storage, error) {
	s, err := store.New(optsGetter, store.Options{
		Resource: coordinationv1.Resource("leases"),
		Singular: "lease",
		Kind:     coordinationv1.SchemeGroupVersion.WithKind("Lease"),
		New:      func() runtime.Object { return &coordinationv1.Lease{} },
		NewList:  func() runtime.Object { return &coordinationv1.LeaseList{} },
		Strategy: store.NewStrategy(typer, store.Rules[*coordinationv1.Lease]{
			Namespaced:     true,
			Validate:       validation.ValidateLease,
			ValidateUpdate: validation.ValidateLeaseUpdate,
			// Leader-election clients take a lease with PUT when it does not exist yet.
			AllowCreateOnUpdate: true,
		}),
		Table: printers.Leases,
	})
	if err != nil {
		return nil, err
	}
	return map[string]rest.Storage{"leases": s}, nil
}
