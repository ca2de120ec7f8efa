// Package reviewrest serves the authorization.k8s.io review kinds. A review is a
// question rather than an object: the client creates it, the response carries
// it back with the answer in its status, and nothing is stored.
package reviewrest

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// Storage is create-only storage for the review kind T. The funcs are the
// kind's specifics; Create runs them in a fixed order so that every kind
// refuses bad reviews the same way and answers only what admission let through.
type Storage[T runtime.Object] struct {
	// Kind names T, e.g. "SubjectAccessReview"; errors quote it, and its
	// lower case is the singular resource name.
	Kind       string
	Namespaced bool
	NewObject  func() T
	// ClearStatus drops a status sent by the client: it is not part of the
	// question, and neither validation nor admission should see it.
	ClearStatus func(T)
	Validate    func(T) field.ErrorList
	// CheckRequest, if set, refuses a valid review that this request cannot
	// ask. It runs before admission, so admission only sees answerable reviews.
	CheckRequest func(context.Context, T) error
	// Answer fills in the status.
	Answer func(context.Context, T)
}

// The method set does not depend on T, so one instantiation checks them all.
var (
	_ rest.Storage              = &Storage[runtime.Object]{}
	_ rest.Creater              = &Storage[runtime.Object]{}
	_ rest.Scoper               = &Storage[runtime.Object]{}
	_ rest.SingularNameProvider = &Storage[runtime.Object]{}
)

func (s *Storage[T]) New() runtime.Object     { return s.NewObject() }
func (s *Storage[T]) Destroy()                {}
func (s *Storage[T]) NamespaceScoped() bool   { return s.Namespaced }
func (s *Storage[T]) GetSingularName() string { return strings.ToLower(s.Kind) }

// Create answers the review without modifying obj.
func (s *Storage[T]) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	in, ok := obj.(T)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a %s: %T", s.Kind, obj))
	}
	review := in.DeepCopyObject().(T)
	s.ClearStatus(review)
	if errs := s.Validate(review); len(errs) > 0 {
		return nil, apierrors.NewInvalid(authorizationv1.SchemeGroupVersion.WithKind(s.Kind).GroupKind(), "", errs)
	}
	if s.CheckRequest != nil {
		if err := s.CheckRequest(ctx, review); err != nil {
			return nil, err
		}
	}
	if createValidation != nil {
		if err := createValidation(ctx, review.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	s.Answer(ctx, review)
	return review, nil
}

// RequireUser is the CheckRequest of reviews about the requesting user: the
// subject is whoever the request was authenticated (or impersonated) as.
func RequireUser[T any](ctx context.Context, _ T) error {
	if _, ok := genericapirequest.UserFrom(ctx); !ok {
		return apierrors.NewBadRequest("no user present on request")
	}
	return nil
}
