package node

import (
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/idplane/idplane/internal/authz/policyrule"
)

// fixedRules answers "does the system:node policy allow this" for requests the graph does
// not decide. Plain rules (no wildcards, no resource names) are indexed by group and
// resource, which is every rule of the bootstrap policy; anything else is matched in order
// with RBAC's own matching.
type fixedRules struct {
	verbs   map[ruleResource][]string
	general []rbacv1.PolicyRule
}

// ruleResource is a rule's group and resource, the resource split at its subresource so
// that a lookup needs no string building.
type ruleResource struct {
	group, resource, subresource string
}

func compileRules(rules []rbacv1.PolicyRule) fixedRules {
	f := fixedRules{verbs: map[ruleResource][]string{}}
	for _, r := range rules {
		if !plain(r) {
			f.general = append(f.general, r)
			continue
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				resource, sub, _ := strings.Cut(res, "/")
				k := ruleResource{g, resource, sub}
				f.verbs[k] = append(f.verbs[k], r.Verbs...)
			}
		}
	}
	return f
}

func plain(r rbacv1.PolicyRule) bool {
	return len(r.ResourceNames) == 0 && len(r.NonResourceURLs) == 0 && len(r.Resources) > 0 &&
		!slices.Contains(r.Verbs, rbacv1.VerbAll) && !slices.Contains(r.APIGroups, rbacv1.APIGroupAll) &&
		!slices.ContainsFunc(r.Resources, func(res string) bool { return strings.Contains(res, rbacv1.ResourceAll) })
}

func (f fixedRules) allow(req *request) bool {
	if req.resourceRequest {
		verbs := f.verbs[ruleResource{req.group, req.resource, req.sub}]
		if slices.Contains(verbs, req.verb) {
			return true
		}
	}
	if len(f.general) == 0 {
		return false
	}
	matched := policyrule.Request{
		Verb: req.verb, IsResource: req.resourceRequest, APIGroup: req.group,
		Resource: req.resource, Subresource: req.sub, Name: req.name, Path: req.path,
	}
	return matched.AllowedByAny(f.general)
}
