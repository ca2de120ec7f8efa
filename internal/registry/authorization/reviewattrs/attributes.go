// Package reviewattrs is the common ground of the authorization.k8s.io/v1 review
// resources: it validates a review, turns its spec into the attributes the
// authorizers understand, and renders their verdict as a review status.
package reviewattrs

import (
	"context"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// ResourceAttributesFrom describes a resource request by u. An empty version
// means "any version", as it does for every review served by Kubernetes.
// Field and label selectors are parsed so that authorizers which narrow on
// them (the Node authorizer) see the same requirements as for a live list or
// watch; a selector that fails to parse, wholly or partly, is kept out of the
// record and its parse error is recorded instead.
func ResourceAttributesFrom(u user.Info, in authorizationv1.ResourceAttributes) authorizer.AttributesRecord {
	version := in.Version
	if version == "" {
		version = "*"
	}
	attrs := authorizer.AttributesRecord{
		User:            u,
		Verb:            in.Verb,
		Namespace:       in.Namespace,
		APIGroup:        in.Group,
		APIVersion:      version,
		Resource:        in.Resource,
		Subresource:     in.Subresource,
		Name:            in.Name,
		ResourceRequest: true,
	}
	if in.FieldSelector != nil {
		attrs.FieldSelectorRequirements, attrs.FieldSelectorParsingErr = fieldRequirements(*in.FieldSelector)
	}
	if in.LabelSelector != nil {
		attrs.LabelSelectorRequirements, attrs.LabelSelectorParsingErr = labelRequirements(*in.LabelSelector)
	}
	return attrs
}

// NonResourceAttributesFrom describes a request by u for a non-resource URL.
func NonResourceAttributesFrom(u user.Info, in authorizationv1.NonResourceAttributes) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: u, Verb: in.Verb, Path: in.Path}
}

// AttributesFromSpec describes the request a SubjectAccessReview or
// LocalSubjectAccessReview asks about, made by the user the spec names.
func AttributesFromSpec(spec authorizationv1.SubjectAccessReviewSpec) authorizer.AttributesRecord {
	return attributesFor(UserFromSpec(spec), spec.ResourceAttributes, spec.NonResourceAttributes)
}

// SelfAttributes describes the request a SelfSubjectAccessReview asks about,
// made by u, the user who sent the review.
func SelfAttributes(u user.Info, spec authorizationv1.SelfSubjectAccessReviewSpec) authorizer.AttributesRecord {
	return attributesFor(u, spec.ResourceAttributes, spec.NonResourceAttributes)
}

func attributesFor(u user.Info, res *authorizationv1.ResourceAttributes, nonRes *authorizationv1.NonResourceAttributes) authorizer.AttributesRecord {
	switch {
	case res != nil:
		return ResourceAttributesFrom(u, *res)
	case nonRes != nil:
		return NonResourceAttributesFrom(u, *nonRes)
	default:
		// Validation rejects a spec without either; an empty request is
		// still the safe answer should one slip through.
		return authorizer.AttributesRecord{User: u}
	}
}

// UserFromSpec is the user a SubjectAccessReview spec asks about.
func UserFromSpec(spec authorizationv1.SubjectAccessReviewSpec) user.Info {
	var extra map[string][]string
	if spec.Extra != nil {
		extra = make(map[string][]string, len(spec.Extra))
		for k, v := range spec.Extra {
			extra[k] = []string(v)
		}
	}
	return &user.DefaultInfo{Name: spec.User, UID: spec.UID, Groups: spec.Groups, Extra: extra}
}

// Decide asks a about attrs and reports its answer the way every access review
// does: denied is set only for an explicit deny (no opinion is neither allowed
// nor denied), and the evaluation error also tells the caller which selectors
// could not be taken into account.
func Decide(ctx context.Context, a authorizer.UnconditionalAuthorizer, attrs authorizer.AttributesRecord) authorizationv1.SubjectAccessReviewStatus {
	decision, reason, err := a.Authorize(ctx, attrs)
	return authorizationv1.SubjectAccessReviewStatus{
		Allowed:         decision == authorizer.DecisionAllow,
		Denied:          decision == authorizer.DecisionDeny,
		Reason:          reason,
		EvaluationError: EvaluationError(err, attrs),
	}
}

// EvaluationError joins the authorizer's error with a note for each selector
// that was dropped, wholly or partly, because it did not parse: a caller must
// learn that the answer was for a broader request than the one it asked about.
func EvaluationError(err error, attrs authorizer.Attributes) string {
	var msgs []string
	if err != nil {
		msgs = append(msgs, err.Error())
	}
	if reqs, perr := attrs.GetFieldSelector(); perr != nil {
		msgs = append(msgs, selectorNote("fieldSelector", len(reqs) > 0))
	}
	if reqs, perr := attrs.GetLabelSelector(); perr != nil {
		msgs = append(msgs, selectorNote("labelSelector", len(reqs) > 0))
	}
	return strings.Join(msgs, "; ")
}

func selectorNote(name string, partial bool) string {
	if partial {
		return "spec.resourceAttributes." + name + " partially ignored due to parse error"
	}
	return "spec.resourceAttributes." + name + " ignored due to parse error"
}
