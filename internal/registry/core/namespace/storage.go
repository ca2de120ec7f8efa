// Package namespace stores namespaces with their status and finalize subresources. Deleting a
// namespace first marks it Terminating; it is removed only once its spec.finalizers are empty,
// which the namespace controller arranges after deleting the namespace's contents.
package namespace

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/idplane/idplane/internal/registry/store"
	"github.com/idplane/idplane/internal/validation"
)

// NewREST returns namespaces, namespaces/status and namespaces/finalize.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (map[string]rest.Storage, error) {
	s, err := store.New(optsGetter, store.Options{
		Resource: corev1.Resource("namespaces"),
		Singular: "namespace",
		Kind:     corev1.SchemeGroupVersion.WithKind("Namespace"),
		New:      func() runtime.Object { return &corev1.Namespace{} },
		NewList:  func() runtime.Object { return &corev1.NamespaceList{} },
		Strategy: store.NewStrategy(typer, store.Rules[*corev1.Namespace]{
			PrepareForCreate: func(ns *corev1.Namespace) {
				ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
				if !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
					ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
				}
			},
			// Finalizers change only through namespaces/finalize, status only through
			// namespaces/status.
			PrepareForUpdate: func(ns, old *corev1.Namespace) {
				ns.Spec.Finalizers = old.Spec.Finalizers
				ns.Status = old.Status
			},
			Validate:       validation.ValidateNamespace,
			ValidateUpdate: validation.ValidateNamespaceUpdate,
			ResetFields:    []fieldpath.Path{fieldpath.MakePathOrDie("status")},
			APIVersion:     "v1",
		}),
		ShortNames: []string{"ns"},
	})
	if err != nil {
		return nil, err
	}
	s.ShouldDeleteDuringUpdate = func(_ context.Context, _ string, obj, _ runtime.Object) bool {
		return len(obj.(*corev1.Namespace).Spec.Finalizers) == 0
	}
	status := s.WithStrategy(store.NewStrategy(typer, store.Rules[*corev1.Namespace]{
		PrepareForUpdate: func(ns, old *corev1.Namespace) { ns.Spec = old.Spec },
		ValidateUpdate:   validation.ValidateNamespaceStatusUpdate,
		ResetFields:      []fieldpath.Path{fieldpath.MakePathOrDie("spec")},
		APIVersion:       "v1",
	}))
	finalize := s.WithStrategy(store.NewStrategy(typer, store.Rules[*corev1.Namespace]{
		PrepareForUpdate: func(ns, old *corev1.Namespace) { ns.Status = old.Status },
		ValidateUpdate:   validation.ValidateNamespaceFinalizeUpdate,
		ResetFields:      []fieldpath.Path{fieldpath.MakePathOrDie("status")},
		APIVersion:       "v1",
	}))
	return map[string]rest.Storage{
		"namespaces":          &REST{Store: s},
		"namespaces/status":   store.NewSubresource(status),
		"namespaces/finalize": store.NewSubresource(finalize),
	}, nil
}

// REST is the namespaces endpoint, whose delete is two-phase.
type REST struct {
	*store.Store
}

// Delete marks the namespace Terminating on the first request and deletes it only when no
// spec.finalizers remain.
func (r *REST) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	obj, err := r.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, false, err
	}
	ns := obj.(*corev1.Namespace)
	if deleteValidation != nil {
		if err := deleteValidation(ctx, ns); err != nil {
			return nil, false, err
		}
	}
	if ns.DeletionTimestamp == nil {
		var preconditions *storage.Preconditions
		if options.Preconditions != nil {
			preconditions = &storage.Preconditions{UID: options.Preconditions.UID, ResourceVersion: options.Preconditions.ResourceVersion}
		}
		key, err := r.KeyFunc(ctx, name)
		if err != nil {
			return nil, false, err
		}
		now := metav1.Now()
		out := &corev1.Namespace{}
		err = r.Storage.GuaranteedUpdate(ctx, key, out, false, preconditions,
			storage.SimpleUpdate(func(existing runtime.Object) (runtime.Object, error) {
				ns := existing.(*corev1.Namespace)
				if ns.DeletionTimestamp == nil {
					ns.DeletionTimestamp = &now
				}
				ns.Status.Phase = corev1.NamespaceTerminating
				return ns, nil
			}), len(options.DryRun) > 0, nil)
		if err != nil {
			return nil, false, err
		}
		ns = out
	}
	if len(ns.Spec.Finalizers) > 0 {
		return ns, false, nil
	}
	return r.Store.Delete(ctx, name, deleteValidation, options)
}
