// Package selfsubjectrulesreview lists what the requesting user may do in a
// namespace (kubectl auth can-i --list), as far as the rule-based authorizers
// can enumerate it.
package selfsubjectrulesreview

import (
	"context"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/idplane/idplane/internal/registry/authorization/reviewattrs"
	"github.com/idplane/idplane/internal/registry/authorization/reviewrest"
)

// REST serves selfsubjectrulesreviews; nothing is stored.
type REST = reviewrest.Storage[*authorizationv1.SelfSubjectRulesReview]

// NewREST lists rules with r. Authorizers that cannot enumerate their rules
// are expected to make r report the answer as incomplete.
func NewREST(r authorizer.RuleResolver) *REST {
	return &REST{
		Kind:      "SelfSubjectRulesReview",
		NewObject: func() *authorizationv1.SelfSubjectRulesReview { return &authorizationv1.SelfSubjectRulesReview{} },
		ClearStatus: func(rr *authorizationv1.SelfSubjectRulesReview) {
			rr.Status = authorizationv1.SubjectRulesReviewStatus{}
		},
		Validate:     reviewattrs.ValidateSelfSubjectRulesReview,
		CheckRequest: reviewrest.RequireUser[*authorizationv1.SelfSubjectRulesReview],
		Answer: func(ctx context.Context, rr *authorizationv1.SelfSubjectRulesReview) {
			u, _ := genericapirequest.UserFrom(ctx) // RequireUser made sure there is one
			resourceInfos, nonResourceInfos, incomplete, err := r.RulesFor(ctx, u, rr.Spec.Namespace)
			rr.Status = authorizationv1.SubjectRulesReviewStatus{
				ResourceRules:    resourceRules(resourceInfos),
				NonResourceRules: nonResourceRules(nonResourceInfos),
				Incomplete:       incomplete,
			}
			if err != nil {
				rr.Status.EvaluationError = err.Error()
			}
		},
	}
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
