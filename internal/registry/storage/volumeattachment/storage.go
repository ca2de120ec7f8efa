// Package volumeattachment stores storage.k8s.io/v1 VolumeAttachments and their status
// subresource. The attach/detach controller writes the spec (which volume on which node) once;
// the external attacher reports progress through status.
package volumeattachment

import (
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/idplane/idplane/internal/printers"
	"github.com/idplane/idplane/internal/registry/store"
	"github.com/idplane/idplane/internal/validation"
)

const apiVersion = "storage.k8s.io/v1"

// strategy serves the main endpoint: a new attachment starts with no status, since only the
// attacher may say a volume is attached, and later writes here keep the stored status.
func strategy(typer runtime.ObjectTyper) *store.Strategy[*storagev1.VolumeAttachment] {
	return store.NewStrategy(typer, store.Rules[*storagev1.VolumeAttachment]{
		PrepareForCreate: func(va *storagev1.VolumeAttachment) { va.Status = storagev1.VolumeAttachmentStatus{} },
		PrepareForUpdate: func(va, old *storagev1.VolumeAttachment) { va.Status = old.Status },
		Validate:         validation.ValidateVolumeAttachment,
		ValidateUpdate:   validation.ValidateVolumeAttachmentUpdate,
		ResetFields:      []fieldpath.Path{fieldpath.MakePathOrDie("status")},
		APIVersion:       apiVersion,
	})
}

// statusStrategy serves volumeattachments/status, which the attacher may write without being
// able to retarget the attachment or touch its labels, annotations, finalizers or owners.
func statusStrategy(typer runtime.ObjectTyper) *store.Strategy[*storagev1.VolumeAttachment] {
	return store.NewStrategy(typer, store.Rules[*storagev1.VolumeAttachment]{
		PrepareForUpdate: func(va, old *storagev1.VolumeAttachment) {
			va.Spec = old.Spec
			metav1.ResetObjectMetaForStatus(&va.ObjectMeta, &old.ObjectMeta)
		},
		ValidateUpdate: validation.ValidateVolumeAttachmentStatusUpdate,
		ResetFields:    []fieldpath.Path{fieldpath.MakePathOrDie("metadata"), fieldpath.MakePathOrDie("spec")},
		APIVersion:     apiVersion,
	})
}

// NewREST returns volumeattachments and volumeattachments/status.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (map[string]rest.Storage, error) {
	s, err := store.New(optsGetter, store.Options{
		Resource: storagev1.Resource("volumeattachments"),
		Singular: "volumeattachment",
		Kind:     storagev1.SchemeGroupVersion.WithKind("VolumeAttachment"),
		New:      func() runtime.Object { return &storagev1.VolumeAttachment{} },
		NewList:  func() runtime.Object { return &storagev1.VolumeAttachmentList{} },
		Strategy: strategy(typer),
		Table:    printers.VolumeAttachments,
	})
	if err != nil {
		return nil, err
	}
	// As upstream, DELETE answers with the deleted attachment rather than a Status.
	s.ReturnDeletedObject = true
	status := s.WithStrategy(statusStrategy(typer))
	return map[string]rest.Storage{
		"volumeattachments":        s,
		"volumeattachments/status": store.NewSubresource(status),
	}, nil
}
