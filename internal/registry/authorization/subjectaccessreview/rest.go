// Package subjectaccessreview answers "may this user do that?" for any user
// named in the review, by asking the server's whole authorizer chain.
package subjectaccessreview

import (
	"context"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/idplane/idplane/internal/registry/authorization/reviewattrs"
	"github.com/idplane/idplane/internal/registry/authorization/reviewrest"
)

// REST serves subjectaccessreviews; nothing is stored.
type REST = reviewrest.Storage[*authorizationv1.SubjectAccessReview]

// NewREST answers reviews with a, which should be the same chain that guards
// the server's own requests so that reviews and reality agree.
func NewREST(a authorizer.Authorizer) *REST {
	return &REST{
		Kind:      "SubjectAccessReview",
		NewObject: func() *authorizationv1.SubjectAccessReview { return &authorizationv1.SubjectAccessReview{} },
		ClearStatus: func(r *authorizationv1.SubjectAccessReview) {
			r.Status = authorizationv1.SubjectAccessReviewStatus{}
		},
		Validate: reviewattrs.ValidateSubjectAccessReview,
		Answer: func(ctx context.Context, r *authorizationv1.SubjectAccessReview) {
			r.Status = reviewattrs.Decide(ctx, a, reviewattrs.AttributesFromSpec(r.Spec))
		},
	}
}
