// Package policyrule matches requests against RBAC policy rules. The RBAC authorizer and the
// Node authorizer's fixed rules both decide with it, so a rule means the same in both.
package policyrule

import (
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Request holds the attributes rules are matched against, read from authorizer.Attributes
// once per decision rather than once per rule.
type Request struct {
	Verb        string
	IsResource  bool
	APIGroup    string
	Resource    string
	Subresource string
	Name        string
	Path        string
}

// RequestFrom reads the matched attributes of a request.
func RequestFrom(attrs authorizer.Attributes) Request {
	if !attrs.IsResourceRequest() {
		return Request{Verb: attrs.GetVerb(), Path: attrs.GetPath()}
	}
	return Request{
		Verb:        attrs.GetVerb(),
		IsResource:  true,
		APIGroup:    attrs.GetAPIGroup(),
		Resource:    attrs.GetResource(),
		Subresource: attrs.GetSubresource(),
		Name:        attrs.GetName(),
	}
}

// AllowedByAny reports whether one of rules grants the request.
func (r *Request) AllowedByAny(rules []rbacv1.PolicyRule) bool {
	for i := range rules {
		if r.AllowedBy(&rules[i]) {
			return true
		}
	}
	return false
}

// AllowedBy reports whether rule grants the request. A rule listing only resources never
// grants a non-resource URL and the other way round, because the list that request kind
// needs is then empty.
func (r *Request) AllowedBy(rule *rbacv1.PolicyRule) bool {
	if !containsOrAll(rule.Verbs, r.Verb, rbacv1.VerbAll) {
		return false
	}
	if !r.IsResource {
		return nonResourceURLMatches(rule.NonResourceURLs, r.Path)
	}
	return containsOrAll(rule.APIGroups, r.APIGroup, rbacv1.APIGroupAll) &&
		resourceMatches(rule.Resources, r.Resource, r.Subresource) &&
		(len(rule.ResourceNames) == 0 || slices.Contains(rule.ResourceNames, r.Name))
}

func containsOrAll(list []string, want, all string) bool {
	for _, s := range list {
		if s == want || s == all {
			return true
		}
	}
	return false
}

// resourceMatches matches "resource" or "resource/subresource" against the rule's
// resources without building the combined string: this runs for every rule of every
// binding a request looks at. A subresource request needs "*", "<resource>/<sub>" or
// "*/<sub>"; the bare resource name does not grant its subresources.
func resourceMatches(ruleResources []string, resource, subresource string) bool {
	for _, rr := range ruleResources {
		if rr == rbacv1.ResourceAll {
			return true
		}
		if subresource == "" {
			if rr == resource {
				return true
			}
			continue
		}
		parent, sub, ok := strings.Cut(rr, "/")
		if ok && sub == subresource && (parent == resource || parent == rbacv1.ResourceAll) {
			return true
		}
	}
	return false
}

// nonResourceURLMatches matches a path exactly, or by prefix when the rule ends in "*".
func nonResourceURLMatches(ruleURLs []string, path string) bool {
	for _, u := range ruleURLs {
		if u == rbacv1.NonResourceAll || u == path {
			return true
		}
		if prefix, ok := strings.CutSuffix(u, "*"); ok && strings.HasPrefix(path, strings.TrimRight(prefix, "*")) {
			return true
		}
	}
	return false
}

// RuleInfos lists rules the way a SelfSubjectRulesReview reports them: a rule naming
// resources is a resource rule, one naming URLs a non-resource rule, and one naming both is
// both. The infos share slices with rules.
func RuleInfos(rules []rbacv1.PolicyRule) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo) {
	var resources []authorizer.ResourceRuleInfo
	var urls []authorizer.NonResourceRuleInfo
	for _, r := range rules {
		if len(r.Resources) > 0 {
			resources = append(resources, &authorizer.DefaultResourceRuleInfo{
				Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames,
			})
		}
		if len(r.NonResourceURLs) > 0 {
			urls = append(urls, &authorizer.DefaultNonResourceRuleInfo{Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs})
		}
	}
	return resources, urls
}
