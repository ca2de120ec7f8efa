// Package event stores events in etcd with idplane's validation.
package event

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/idplane/idplane/internal/printers"
	"github.com/idplane/idplane/internal/registry/store"
	"github.com/idplane/idplane/internal/validation"
)

// NewREST returns the storage of events, by resource path.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (map[string]rest.Storage, error) {
	s, err := store.New(optsGetter, store.Options{
		Resource: corev1.Resource("events"),
		Singular: "event",
		Kind:     corev1.SchemeGroupVersion.WithKind("Event"),
		New:      func() runtime.Object { return &corev1.Event{} },
		NewList:  func() runtime.Object { return &corev1.EventList{} },
		Strategy: store.NewStrategy(typer, store.Rules[*corev1.Event]{
			Namespaced:     true,
			Validate:       validation.ValidateEvent,
			ValidateUpdate: validation.ValidateEventUpdate,
			// Clients record events with PUT as well as POST, as upstream allows.
			AllowCreateOnUpdate: true,
		}),
		Table:      printers.Events,
		ShortNames: []string{"ev"},
		// Events are history, not state: etcd drops them an hour after their last update.
		TTLSeconds: 3600,
	})
	if err != nil {
		return nil, err
	}
	return map[string]rest.Storage{"events": s}, nil
}
