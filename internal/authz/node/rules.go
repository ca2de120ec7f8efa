package node

import (
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// fixedRules answers "does the system:node policy allow this" for requests the graph does
// not decide. Plain rules (no wildcards, no resource names) are indexed by group and
// resource, which is every rule of the bootstrap policy; anything else is matched in order.
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
	for i := range f.general {
		if ruleAllows(&f.general[i], req) {
			return true
		}
	}
	return false
}

// ruleAllows is RBAC's matching: a subresource needs "<resource>/<sub>", "*/<sub>" or
// "*"; a non-resource URL matches exactly or by a prefix ending in "*".
func ruleAllows(r *rbacv1.PolicyRule, req *request) bool {
	if !hasOrAll(r.Verbs, req.verb, rbacv1.VerbAll) {
		return false
	}
	if !req.resourceRequest {
		path := req.path
		return slices.ContainsFunc(r.NonResourceURLs, func(u string) bool {
			if prefix, ok := strings.CutSuffix(u, "*"); ok {
				return strings.HasPrefix(path, prefix)
			}
			return u == path
		})
	}
	if !hasOrAll(r.APIGroups, req.group, rbacv1.APIGroupAll) {
		return false
	}
	if len(r.ResourceNames) > 0 && !slices.Contains(r.ResourceNames, req.name) {
		return false
	}
	resource, sub := req.resource, req.sub
	return slices.ContainsFunc(r.Resources, func(rr string) bool {
		if rr == rbacv1.ResourceAll {
			return true
		}
		if sub == "" {
			return rr == resource
		}
		parent, rsub, ok := strings.Cut(rr, "/")
		return ok && rsub == sub && (parent == resource || parent == rbacv1.ResourceAll)
	})
}

func hasOrAll(list []string, want, all string) bool {
	return slices.Contains(list, want) || slices.Contains(list, all)
}
