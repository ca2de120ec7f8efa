// Package store builds the etcd-backed REST storage of one resource from small values: the
// resource's rules (preparation, validation, reset fields) and its table columns. Each resource
// package states only what differs about it.
package store

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Rules are one resource's (or subresource's) create and update rules on objects of type T.
// Nil functions do nothing.
type Rules[T runtime.Object] struct {
	Namespaced bool
	// PrepareForCreate clears what a client may not set on create, such as status.
	PrepareForCreate func(obj T)
	// RecordRequester sets, on create, what the server knows of the request, such as who made it.
	RecordRequester func(ctx context.Context, obj T)
	// PrepareForUpdate keeps what this endpoint may not change from the stored object.
	PrepareForUpdate func(obj, old T)
	Validate         func(obj T) field.ErrorList
	// ValidateRequest replaces Validate for rules that depend on the request, such as the API
	// version it came in.
	ValidateRequest func(ctx context.Context, obj T) field.ErrorList
	ValidateUpdate  func(obj, old T) field.ErrorList
	// ResetFields are the field paths PrepareForUpdate resets, so server-side apply does not
	// record managers for fields this endpoint ignores.
	ResetFields []fieldpath.Path
	// APIVersion is the group/version the ResetFields belong to (e.g. "v1").
	APIVersion string
	// AllowCreateOnUpdate lets PUT create the object when it does not exist (nodes, namespaces do
	// not; events and leases do as upstream).
	AllowCreateOnUpdate bool
}

// Strategy adapts Rules to the library's create, update, delete and reset-fields strategies.
type Strategy[T runtime.Object] struct {
	runtime.ObjectTyper
	names.NameGenerator
	rules Rules[T]
}

// NewStrategy returns the strategy for rules; typer is the server's scheme.
func NewStrategy[T runtime.Object](typer runtime.ObjectTyper, rules Rules[T]) *Strategy[T] {
	return &Strategy[T]{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator, rules: rules}
}

var (
	_ rest.RESTCreateStrategy  = &Strategy[runtime.Object]{}
	_ rest.RESTUpdateStrategy  = &Strategy[runtime.Object]{}
	_ rest.RESTDeleteStrategy  = &Strategy[runtime.Object]{}
	_ rest.ResetFieldsStrategy = &Strategy[runtime.Object]{}
)

func (s *Strategy[T]) NamespaceScoped() bool { return s.rules.Namespaced }

func (s *Strategy[T]) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	if s.rules.PrepareForCreate != nil {
		s.rules.PrepareForCreate(obj.(T))
	}
	if s.rules.RecordRequester != nil {
		s.rules.RecordRequester(ctx, obj.(T))
	}
}

func (s *Strategy[T]) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	if s.rules.PrepareForUpdate != nil {
		s.rules.PrepareForUpdate(obj.(T), old.(T))
	}
}

func (s *Strategy[T]) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	switch {
	case s.rules.ValidateRequest != nil:
		return s.rules.ValidateRequest(ctx, obj.(T))
	case s.rules.Validate != nil:
		return s.rules.Validate(obj.(T))
	}
	return nil
}

func (s *Strategy[T]) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	if s.rules.ValidateUpdate == nil {
		return nil
	}
	return s.rules.ValidateUpdate(obj.(T), old.(T))
}

func (s *Strategy[T]) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

func (s *Strategy[T]) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

func (s *Strategy[T]) Canonicalize(runtime.Object) {}

func (s *Strategy[T]) AllowCreateOnUpdate(context.Context) bool { return s.rules.AllowCreateOnUpdate }

func (s *Strategy[T]) AllowUnconditionalUpdate(context.Context) bool { return true }

func (s *Strategy[T]) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	if len(s.rules.ResetFields) == 0 {
		return nil
	}
	return map[fieldpath.APIVersion]*fieldpath.Set{
		fieldpath.APIVersion(s.rules.APIVersion): fieldpath.NewSet(s.rules.ResetFields...),
	}
}
