// Package policybased serves an RBAC resource whose creates and updates must first pass a
// privilege-escalation check: the same store, with the check in front of its writes.
package policybased

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/idplane/idplane/internal/registry/store"
)

// Check returns nil when the request's user may store obj, or the reason they may not. old is
// the stored object on update (an empty object when the update creates) and nil on create.
type Check[T runtime.Object] func(ctx context.Context, obj, old T) error

// writer is the part of the store the check guards.
type writer interface {
	rest.Creater
	rest.Updater
}

// Store is a resource's storage with check run before every create and update. Reads, watches
// and deletes are the embedded store's.
type Store[T runtime.Object] struct {
	*store.Store
	writes writer
	check  Check[T]
}

var (
	_ rest.StandardStorage      = &Store[runtime.Object]{}
	_ rest.TableConvertor       = &Store[runtime.Object]{}
	_ rest.ShortNamesProvider   = &Store[runtime.Object]{}
	_ rest.SingularNameProvider = &Store[runtime.Object]{}
	_ rest.ResetFieldsStrategy  = &Store[runtime.Object]{}
)

// New guards s with check.
func New[T runtime.Object](s *store.Store, check Check[T]) *Store[T] {
	return &Store[T]{Store: s, writes: s, check: check}
}

// Create checks obj, then stores it.
func (s *Store[T]) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	typed, ok := obj.(T)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a %T: %T", *new(T), obj))
	}
	var none T
	if err := s.check(ctx, typed, none); err != nil {
		return nil, s.refusal(objectName(obj), err)
	}
	return s.writes.Create(ctx, obj, createValidation, options)
}

// Update checks the object the update would store, against the object stored, inside the
// store's read-modify-write so the check sees what is actually written.
func (s *Store[T]) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	checked := rest.WrapUpdatedObjectInfo(objInfo, func(ctx context.Context, obj, old runtime.Object) (runtime.Object, error) {
		// The garbage collector must be able to finish deleting any role or binding, whoever
		// it runs as.
		if onlyGCFieldsChange(obj, old) {
			return obj, nil
		}
		typed, ok := obj.(T)
		if !ok {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("not a %T: %T", *new(T), obj))
		}
		typedOld, _ := old.(T)
		if err := s.check(ctx, typed, typedOld); err != nil {
			return nil, s.refusal(name, err)
		}
		return obj, nil
	})
	return s.writes.Update(ctx, name, checked, createValidation, updateValidation, forceAllowCreate, options)
}

// refusal is a Forbidden status for the object, unless the check already answered with a status
// of its own (the role a binding refers to was not found).
func (s *Store[T]) refusal(name string, err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	return apierrors.NewForbidden(s.DefaultQualifiedResource, name, err)
}

func objectName(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetName()
}

// onlyGCFieldsChange reports whether obj differs from old only in owner references and
// finalizers, the fields the garbage collector edits.
func onlyGCFieldsChange(obj, old runtime.Object) bool {
	oldMeta, err := meta.Accessor(old)
	if err != nil {
		return false
	}
	stomped := obj.DeepCopyObject()
	m, err := meta.Accessor(stomped)
	if err != nil {
		return false
	}
	m.SetOwnerReferences(oldMeta.GetOwnerReferences())
	m.SetFinalizers(oldMeta.GetFinalizers())
	return equality.Semantic.DeepEqual(stomped, old)
}
