// Package localsubjectaccessreview answers "may this user do that here?": a
// subject access review confined to one namespace, so that namespace admins
// can be allowed to ask it without learning about the rest of the cluster.
package localsubjectaccessreview

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/idplane/idplane/internal/registry/authorization/reviewattrs"
	"github.com/idplane/idplane/internal/registry/authorization/reviewrest"
)

// REST serves localsubjectaccessreviews; nothing is stored.
type REST = reviewrest.Storage[*authorizationv1.LocalSubjectAccessReview]

// NewREST answers reviews with a, which should be the same chain that guards
// the server's own requests so that reviews and reality agree.
func NewREST(a authorizer.Authorizer) *REST {
	return &REST{
		Kind:       "LocalSubjectAccessReview",
		Namespaced: true,
		NewObject:  func() *authorizationv1.LocalSubjectAccessReview { return &authorizationv1.LocalSubjectAccessReview{} },
		ClearStatus: func(r *authorizationv1.LocalSubjectAccessReview) {
			r.Status = authorizationv1.SubjectAccessReviewStatus{}
		},
		Validate:     reviewattrs.ValidateLocalSubjectAccessReview,
		CheckRequest: checkNamespace,
		Answer: func(ctx context.Context, r *authorizationv1.LocalSubjectAccessReview) {
			r.Status = reviewattrs.Decide(ctx, a, reviewattrs.AttributesFromSpec(r.Spec))
		},
	}
}

// checkNamespace ties the review's namespace, which validation tied the
// question to, to the namespace the request was authorized for.
func checkNamespace(ctx context.Context, r *authorizationv1.LocalSubjectAccessReview) error {
	namespace := genericapirequest.NamespaceValue(ctx)
	if namespace == "" {
		return apierrors.NewBadRequest("namespace is required on this type")
	}
	if namespace != r.Namespace {
		return apierrors.NewBadRequest(fmt.Sprintf("spec.resourceAttributes.namespace must match namespace: %s", namespace))
	}
	return nil
}
