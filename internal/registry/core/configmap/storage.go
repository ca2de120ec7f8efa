// Package configmap stores configmaps in etcd with idplane's validation.
package configmap

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/idplane/idplane/internal/printers"
	"github.com/idplane/idplane/internal/registry/store"
	"github.com/idplane/idplane/internal/validation"
)

// NewREST returns the storage of configmaps, by resource path.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (map[string]rest.Storage, error) {
	s, err := store.New(optsGetter, store.Options{
		Resource: corev1.Resource("configmaps"),
		Singular: "configmap",
		Kind:     corev1.SchemeGroupVersion.WithKind("ConfigMap"),
		New:      func() runtime.Object { return &corev1.ConfigMap{} },
		NewList:  func() runtime.Object { return &corev1.ConfigMapList{} },
		Strategy: store.NewStrategy(typer, store.Rules[*corev1.ConfigMap]{
			Namespaced:     true,
			Validate:       validation.ValidateConfigMap,
			ValidateUpdate: validation.ValidateConfigMapUpdate,
		}),
		Table:      printers.ConfigMaps,
		ShortNames: []string{"cm"},
	})
	if err != nil {
		return nil, err
	}
	return map[string]rest.Storage{"configmaps": s}, nil
}
