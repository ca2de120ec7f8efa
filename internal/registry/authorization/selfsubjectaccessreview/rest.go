// Package selfsubjectaccessreview answers "may I do that?" (kubectl auth can-i)
// for the user sending the review, as the server's authorizer chain sees them.
package selfsubjectaccessreview

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/idplane/idplane/internal/registry/authorization/reviewattrs"
)

// REST serves selfsubjectaccessreviews; nothing is stored.
type REST struct {
	authorizer authorizer.Authorizer
}

var (
	_ rest.Storage              = &REST{}
	_ rest.Creater              = &REST{}
	_ rest.Scoper               = &REST{}
	_ rest.SingularNameProvider = &REST{}
)

// NewREST answers reviews with a, which should be the same chain that guards
// the server's own requests so that reviews and reality agree.
func NewREST(a authorizer.Authorizer) *REST { return &REST{authorizer: a} }

func (r *REST) New() runtime.Object     { return &authorizationv1.SelfSubjectAccessReview{} }
func (r *REST) Destroy()                {}
func (r *REST) NamespaceScoped() bool   { return false }
func (r *REST) GetSingularName() string { return "selfsubjectaccessreview" }

func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	in, ok := obj.(*authorizationv1.SelfSubjectAccessReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a SelfSubjectAccessReview: %T", obj))
	}
	review := in.DeepCopy()
	// A status sent by the client is not part of the question.
	review.Status = authorizationv1.SubjectAccessReviewStatus{}
	if errs := reviewattrs.ValidateSelfSubjectAccessReview(review); len(errs) > 0 {
		return nil, apierrors.NewInvalid(authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview").GroupKind(), "", errs)
	}
	// The subject is whoever the request was authenticated (or impersonated) as.
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	if createValidation != nil {
		if err := createValidation(ctx, review.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	review.Status = reviewattrs.Decide(ctx, r.authorizer, reviewattrs.SelfAttributes(u, review.Spec))
	return review, nil
}
