// Package persistentvolumeclaim stores persistent volume claims and their status subresource.
package persistentvolumeclaim

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/idplane/idplane/internal/printers"
	"github.com/idplane/idplane/internal/registry/store"
	"github.com/idplane/idplane/internal/validation"
)

// NewREST returns persistentvolumeclaims and persistentvolumeclaims/status.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (map[string]rest.Storage, error) {
	s, err := store.New(optsGetter, store.Options{
		Resource: corev1.Resource("persistentvolumeclaims"),
		Singular: "persistentvolumeclaim",
		Kind:     corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"),
		New:      func() runtime.Object { return &corev1.PersistentVolumeClaim{} },
		NewList:  func() runtime.Object { return &corev1.PersistentVolumeClaimList{} },
		Strategy: store.NewStrategy(typer, store.Rules[*corev1.PersistentVolumeClaim]{
			Namespaced: true,
			PrepareForCreate: func(pvc *corev1.PersistentVolumeClaim) {
				pvc.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}
			},
			PrepareForUpdate: func(pvc, old *corev1.PersistentVolumeClaim) { pvc.Status = old.Status },
			Validate:         validation.ValidatePersistentVolumeClaim,
			ValidateUpdate:   validation.ValidatePersistentVolumeClaimUpdate,
			ResetFields:      []fieldpath.Path{fieldpath.MakePathOrDie("status")},
			APIVersion:       "v1",
		}),
		Table:      printers.PersistentVolumeClaims,
		ShortNames: []string{"pvc"},
	})
	if err != nil {
		return nil, err
	}
	status := s.WithStrategy(store.NewStrategy(typer, store.Rules[*corev1.PersistentVolumeClaim]{
		Namespaced:       true,
		PrepareForUpdate: func(pvc, old *corev1.PersistentVolumeClaim) { pvc.Spec = old.Spec },
		ValidateUpdate:   validation.ValidatePersistentVolumeClaimStatusUpdate,
		ResetFields:      []fieldpath.Path{fieldpath.MakePathOrDie("spec")},
		APIVersion:       "v1",
	}))
	return map[string]rest.Storage{
		"persistentvolumeclaims":        s,
		"persistentvolumeclaims/status": store.NewSubresource(status),
	}, nil
}
