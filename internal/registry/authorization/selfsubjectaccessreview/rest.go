// Package selfsubjectaccessreview answers "may I do that?" (kubectl auth can-i)
// for the user sending the review, as the server's authorizer chain sees them.
package selfsubjectaccessreview

import (
	"context"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/idplane/idplane/internal/registry/authorization/reviewattrs"
	"github.com/idplane/idplane/internal/registry/authorization/reviewrest"
)

// REST serves selfsubjectaccessreviews; nothing is stored.
type REST = reviewrest.Storage[*authorizationv1.SelfSubjectAccessReview]

// NewREST answers reviews with a, which should be the same chain that guards
// the server's own requests so that reviews and reality agree.
func NewREST(a authorizer.Authorizer) *REST {
	return &REST{
		Kind:      "SelfSubjectAccessReview",
		NewObject: func() *authorizationv1.SelfSubjectAccessReview { return &authorizationv1.SelfSubjectAccessReview{} },
		ClearStatus: func(r *authorizationv1.SelfSubjectAccessReview) {
			r.Status = authorizationv1.SubjectAccessReviewStatus{}
		},
		Validate:     reviewattrs.ValidateSelfSubjectAccessReview,
		CheckRequest: reviewrest.RequireUser[*authorizationv1.SelfSubjectAccessReview],
		Answer: func(ctx context.Context, r *authorizationv1.SelfSubjectAccessReview) {
			u, _ := genericapirequest.UserFrom(ctx) // RequireUser made sure there is one
			r.Status = reviewattrs.Decide(ctx, a, reviewattrs.SelfAttributes(u, r.Spec))
		},
	}
}
