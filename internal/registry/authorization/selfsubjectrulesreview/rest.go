// Package selfsubjectrulesreview lists what the requesting user may do in a
// namespace (kubectl auth can-i --list), as far as the rule-based authorizers
// can enumerate it.
package selfsubjectrulesreview

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

// REST serves selfsubjectrulesreviews; nothing is stored.
type REST struct {
	resolver authorizer.RuleResolver
}

var (
	_ rest.Storage              = &REST{}
	_ rest.Creater              = &REST{}
	_ rest.Scoper               = &REST{}
	_ rest.SingularNameProvider = &REST{}
)

// NewREST lists rules with r. Authorizers that cannot enumerate their rules
// are expected to make r report the answer as incomplete.
func NewREST(r authorizer.RuleResolver) *REST { return &REST{resolver: r} }

func (r *REST) New() runtime.Object     { return &authorizationv1.SelfSubjectRulesReview{} }
func (r *REST) Destroy()                {}
func (r *REST) NamespaceScoped() bool   { return false }
func (r *REST) GetSingularName() string { return "selfsubjectrulesreview" }

func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	in, ok := obj.(*authorizationv1.SelfSubjectRulesReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a SelfSubjectRulesReview: %T", obj))
	}
	review := in.DeepCopy()
	review.Status = authorizationv1.SubjectRulesReviewStatus{}
	if errs := reviewattrs.ValidateSelfSubjectRulesReview(review); len(errs) > 0 {
		return nil, apierrors.NewInvalid(authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectRulesReview").GroupKind(), "", errs)
	}
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	if createValidation != nil {
		if err := createValidation(ctx, review.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	resourceInfos, nonResourceInfos, incomplete, err := r.resolver.RulesFor(ctx, u, review.Spec.Namespace)
	review.Status = authorizationv1.SubjectRulesReviewStatus{
		ResourceRules:    resourceRules(resourceInfos),
		NonResourceRules: nonResourceRules(nonResourceInfos),
		Incomplete:       incomplete,
	}
	if err != nil {
		review.Status.EvaluationError = err.Error()
	}
	return review, nil
}

// resourceRules always returns a non-nil slice: the field is required in the
// v1 schema, and clients expect [] rather than null when nothing is allowed.
func resourceRules(infos []authorizer.ResourceRuleInfo) []authorizationv1.ResourceRule {
	rules := make([]authorizationv1.ResourceRule, 0, len(infos))
	for _, info := range infos {
		rules = append(rules, authorizationv1.ResourceRule{
			Verbs:         info.GetVerbs(),
			APIGroups:     info.GetAPIGroups(),
			Resources:     info.GetResources(),
			ResourceNames: info.GetResourceNames(),
		})
	}
	return rules
}

func nonResourceRules(infos []authorizer.NonResourceRuleInfo) []authorizationv1.NonResourceRule {
	rules := make([]authorizationv1.NonResourceRule, 0, len(infos))
	for _, info := range infos {
		rules = append(rules, authorizationv1.NonResourceRule{
			Verbs:           info.GetVerbs(),
			NonResourceURLs: info.GetNonResourceURLs(),
		})
	}
	return rules
}
