// Package node stores nodes and their status subresource.
package node

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

// NewREST returns nodes and nodes/status.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (map[string]rest.Storage, error) {
	s, err := store.New(optsGetter, store.Options{
		Resource: corev1.Resource("nodes"),
		Singular: "node",
		Kind:     corev1.SchemeGroupVersion.WithKind("Node"),
		New:      func() runtime.Object { return &corev1.Node{} },
		NewList:  func() runtime.Object { return &corev1.NodeList{} },
		// A node registers itself with its status already filled in, so create keeps status.
		Strategy: store.NewStrategy(typer, store.Rules[*corev1.Node]{
			PrepareForUpdate: func(n, old *corev1.Node) { n.Status = old.Status },
			Validate:         validation.ValidateNode,
			ValidateUpdate:   validation.ValidateNodeUpdate,
			ResetFields:      []fieldpath.Path{fieldpath.MakePathOrDie("status")},
			APIVersion:       "v1",
		}),
		Table:      printers.Nodes,
		ShortNames: []string{"no"},
	})
	if err != nil {
		return nil, err
	}
	status := s.WithStrategy(store.NewStrategy(typer, store.Rules[*corev1.Node]{
		PrepareForUpdate: func(n, old *corev1.Node) { n.Spec = old.Spec },
		ValidateUpdate:   validation.ValidateNodeStatusUpdate,
		ResetFields:      []fieldpath.Path{fieldpath.MakePathOrDie("spec")},
		APIVersion:       "v1",
	}))
	return map[string]rest.Storage{"nodes": s, "nodes/status": store.NewSubresource(status)}, nil
}
