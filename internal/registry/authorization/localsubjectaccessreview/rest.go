// Package localsubjectaccessreview answers "may this user do that here?": a
// subject access review confined to one namespace, so that namespace admins
// can be allowed to ask it without learning about the rest of the cluster.
package localsubjectaccessreview

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

// REST serves localsubjectaccessreviews; nothing is stored.
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

func (r *REST) New() runtime.Object     { return &authorizationv1.LocalSubjectAccessReview{} }
func (r *REST) Destroy()                {}
func (r *REST) NamespaceScoped() bool   { return true }
func (r *REST) GetSingularName() string { return "localsubjectaccessreview" }

func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	in, ok := obj.(*authorizationv1.LocalSubjectAccessReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a LocalSubjectAccessReview: %T", obj))
	}
	review := in.DeepCopy()
	// A status sent by the client is not part of the question.
	review.Status = authorizationv1.SubjectAccessReviewStatus{}
	if errs := reviewattrs.ValidateLocalSubjectAccessReview(review); len(errs) > 0 {
		return nil, apierrors.NewInvalid(authorizationv1.SchemeGroupVersion.WithKind("LocalSubjectAccessReview").GroupKind(), "", errs)
	}
	// Validation tied the question to metadata.namespace; this ties that to the
	// namespace the request was authorized for.
	namespace := genericapirequest.NamespaceValue(ctx)
	if namespace == "" {
		return nil, apierrors.NewBadRequest("namespace is required on this type")
	}
	if namespace != review.Namespace {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("spec.resourceAttributes.namespace must match namespace: %s", namespace))
	}
	if createValidation != nil {
		if err := createValidation(ctx, review.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	review.Status = reviewattrs.Decide(ctx, r.authorizer, reviewattrs.AttributesFromSpec(review.Spec))
	return review, nil
}
