// Package secret stores secrets in etcd with idplane's validation.
package secret

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/idplane/idplane/internal/printers"
	"github.com/idplane/idplane/internal/registry/store"
	"github.com/idplane/idplane/internal/validation"
)

// NewREST returns the storage of secrets, by resource path.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (map[string]rest.Storage, error) {
	s, err := store.New(optsGetter, store.Options{
		Resource: corev1.Resource("secrets"),
		Singular: "secret",
		Kind:     corev1.SchemeGroupVersion.WithKind("Secret"),
		New:      func() runtime.Object { return &corev1.Secret{} },
		NewList:  func() runtime.Object { return &corev1.SecretList{} },
		Strategy: store.NewStrategy(typer, store.Rules[*corev1.Secret]{
			Namespaced:     true,
			Validate:       validation.ValidateSecret,
			ValidateUpdate: validation.ValidateSecretUpdate,
		}),
		Table: printers.Secrets,
	})
	if err != nil {
		return nil, err
	}
	return map[string]rest.Storage{"secrets": s}, nil
}
