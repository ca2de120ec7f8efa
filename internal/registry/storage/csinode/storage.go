// Package csinode stores storage.k8s.io/v1 CSINodes: per node, the CSI drivers the kubelet has
// registered there.
package csinode

import (
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/idplane/idplane/internal/printers"
	"github.com/idplane/idplane/internal/registry/store"
	"github.com/idplane/idplane/internal/validation"
)

// strategy keeps status (storage health, written upstream only through csinodes/status behind
// the alpha CSIVolumeHealth gate, which idplane does not serve) out of client writes: create
// clears it and updates keep the stored one.
func strategy(typer runtime.ObjectTyper) *store.Strategy[*storagev1.CSINode] {
	return store.NewStrategy(typer, store.Rules[*storagev1.CSINode]{
		PrepareForCreate: func(n *storagev1.CSINode) { n.Status = storagev1.CSINodeStatus{} },
		PrepareForUpdate: func(n, old *storagev1.CSINode) { n.Status = old.Status },
		Validate:         validation.ValidateCSINode,
		ValidateUpdate:   validation.ValidateCSINodeUpdate,
		ResetFields:      []fieldpath.Path{fieldpath.MakePathOrDie("status")},
		APIVersion:       "storage.k8s.io/v1",
	})
}

// NewREST returns csinodes.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (map[string]rest.Storage, error) {
	s, err := store.New(optsGetter, store.Options{
		Resource: storagev1.Resource("csinodes"),
		Singular: "csinode",
		Kind:     storagev1.SchemeGroupVersion.WithKind("CSINode"),
		New:      func() runtime.Object { return &storagev1.CSINode{} },
		NewList:  func() runtime.Object { return &storagev1.CSINodeList{} },
		Strategy: strategy(typer),
		Table:    printers.CSINodes,
	})
	if err != nil {
		return nil, err
	}
	// As upstream, DELETE answers with the deleted object rather than a Status.
	s.ReturnDeletedObject = true
	return map[string]rest.Storage{"csinodes": s}, nil
}
