// Package persistentvolume stores persistent volumes and their status subresource.
package persistentvolume

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

// NewREST returns persistentvolumes and persistentvolumes/status.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (map[string]rest.Storage, error) {
	s, err := store.New(optsGetter, store.Options{
		Resource: corev1.Resource("persistentvolumes"),
		Singular: "persistentvolume",
		Kind:     corev1.SchemeGroupVersion.WithKind("PersistentVolume"),
		New:      func() runtime.Object { return &corev1.PersistentVolume{} },
		NewList:  func() runtime.Object { return &corev1.PersistentVolumeList{} },
		Strategy: store.NewStrategy(typer, store.Rules[*corev1.PersistentVolume]{
			PrepareForCreate: func(pv *corev1.PersistentVolume) {
				pv.Status = corev1.PersistentVolumeStatus{Phase: corev1.VolumePending}
			},
			PrepareForUpdate: func(pv, old *corev1.PersistentVolume) { pv.Status = old.Status },
			Validate:         validation.ValidatePersistentVolume,
			ValidateUpdate:   validation.ValidatePersistentVolumeUpdate,
			ResetFields:      []fieldpath.Path{fieldpath.MakePathOrDie("status")},
			APIVersion:       "v1",
		}),
		Table:      printers.PersistentVolumes,
		ShortNames: []string{"pv"},
	})
	if err != nil {
		return nil, err
	}
	status := s.WithStrategy(store.NewStrategy(typer, store.Rules[*corev1.PersistentVolume]{
		PrepareForUpdate: func(pv, old *corev1.PersistentVolume) { pv.Spec = old.Spec },
		ValidateUpdate:   validation.ValidatePersistentVolumeStatusUpdate,
		ResetFields:      []fieldpath.Path{fieldpath.MakePathOrDie("spec")},
		APIVersion:       "v1",
	}))
	return map[string]rest.Storage{
		"persistentvolumes":        s,
		"persistentvolumes/status": store.NewSubresource(status),
	}, nil
}
