// Package serviceaccount stores serviceaccounts in etcd with idplane's validation.
package serviceaccount

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/idplane/idplane/internal/printers"
	"github.com/idplane/idplane/internal/registry/store"
	"github.com/idplane/idplane/internal/validation"
)

// NewREST returns the storage of serviceaccounts, by resource path.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (map[string]rest.Storage, error) {
	s, err := store.New(optsGetter, store.Options{
		Resource: corev1.Resource("serviceaccounts"),
		Singular: "serviceaccount",
		Kind:     corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
		New:      func() runtime.Object { return &corev1.ServiceAccount{} },
		NewList:  func() runtime.Object { return &corev1.ServiceAccountList{} },
		Strategy: store.NewStrategy(typer, store.Rules[*corev1.ServiceAccount]{
			Namespaced:     true,
			Validate:       validation.ValidateServiceAccount,
			ValidateUpdate: validation.ValidateServiceAccountUpdate,
		}),
		Table:      printers.ServiceAccounts,
		ShortNames: []string{"sa"},
	})
	if err != nil {
		return nil, err
	}
	return map[string]rest.Storage{"serviceaccounts": s}, nil
}
