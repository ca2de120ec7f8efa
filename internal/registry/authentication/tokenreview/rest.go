// Package tokenreview answers "whose token is this?" for other services (webhook authenticators,
// relying parties): the server's own authenticators judge the token, for the audiences asked.
package tokenreview

import (
	"context"
	"fmt"
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/idplane/idplane/internal/registry/authentication/userinfo"
)

// REST serves tokenreviews; nothing is stored.
type REST struct {
	auth      authenticator.Request
	audiences authenticator.Audiences
}

// NewREST reviews tokens with auth; a review that names no audience is for apiAudiences.
func NewREST(auth authenticator.Request, apiAudiences authenticator.Audiences) *REST {
	return &REST{auth: auth, audiences: apiAudiences}
}

var (
	_ rest.Creater              = &REST{}
	_ rest.Scoper               = &REST{}
	_ rest.SingularNameProvider = &REST{}
)

func (r *REST) New() runtime.Object     { return &authenticationv1.TokenReview{} }
func (r *REST) Destroy()                {}
func (r *REST) NamespaceScoped() bool   { return false }
func (r *REST) GetSingularName() string { return "tokenreview" }

var kind = authenticationv1.SchemeGroupVersion.WithKind("TokenReview").GroupKind()

func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	review, ok := obj.(*authenticationv1.TokenReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a TokenReview: %T", obj))
	}
	if review.Spec.Token == "" {
		return nil, apierrors.NewInvalid(kind, review.Name, field.ErrorList{field.Required(field.NewPath("spec", "token"), "a token to review is required")})
	}
	if createValidation != nil {
		if err := createValidation(ctx, review.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	audiences := r.audiences
	if len(review.Spec.Audiences) > 0 {
		audiences = review.Spec.Audiences
	}
	// The authenticators judge requests: give them one that carries nothing but the token.
	req := (&http.Request{Header: http.Header{}}).WithContext(authenticator.WithAudiences(ctx, audiences))
	req.Header.Set("Authorization", "Bearer "+review.Spec.Token)
	resp, ok, err := r.auth.AuthenticateRequest(req)

	out := review.DeepCopy()
	out.Status = authenticationv1.TokenReviewStatus{}
	if err != nil {
		out.Status.Error = err.Error()
	}
	// Anonymous access is not a token's identity.
	if !ok || resp == nil || resp.User == nil || resp.User.GetName() == user.Anonymous {
		return out, nil
	}
	out.Status.Authenticated = true
	out.Status.User = userinfo.From(resp.User)
	out.Status.Audiences = resp.Audiences
	return out, nil
}
