package rbac

import (
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// request holds the attributes rules are matched against, read from authorizer.Attributes
// once per decision rather than once per rule.
type request struct {
	verb        string
	isResource  bool
	apiGroup    string
	resource    string
	subresource string
	name        string
	path        string
}

func newRequest(attrs authorizer.Attributes) request {
	if !attrs.IsResourceRequest() {
		return request{verb: attrs.GetVerb(), path: attrs.GetPath()}
	}
	return request{
		verb:        attrs.GetVerb(),
		isResource:  true,
		apiGroup:    attrs.GetAPIGroup(),
		resource:    attrs.GetResource(),
		subresource: attrs.GetSubresource(),
		name:        attrs.GetName(),
	}
}

func (r *request) allowedByAny(rules []rbacv1.PolicyRule) bool {
	for i := range rules {
		if r.allowedBy(&rules[i]) {
			return true
		}
	}
	return false
}

// allowedBy reports whether rule grants the request. A rule listing only resources never
// grants a non-resource URL and the other way round, because the list that request kind
// needs is then empty.
func (r *request) allowedBy(rule *rbacv1.PolicyRule) bool {
	if !containsOrAll(rule.Verbs, r.verb, rbacv1.VerbAll) {
		return false
	}
	if !r.isResource {
		return nonResourceURLMatches(rule.NonResourceURLs, r.path)
	}
	return containsOrAll(rule.APIGroups, r.apiGroup, rbacv1.APIGroupAll) &&
		resourceMatches(rule.Resources, r.resource, r.subresource) &&
		(len(rule.ResourceNames) == 0 || slices.Contains(rule.ResourceNames, r.name))
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
