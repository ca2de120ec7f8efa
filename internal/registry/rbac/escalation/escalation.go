// Package escalation decides whether a user may write a role or a binding without gaining
// permissions they do not already have, as upstream Kubernetes does: a role may only grant what
// its author holds (or the author may "escalate" roles), and a binding may only hand out a role
// whose rules its author holds (or the author may "bind" that role).
package escalation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/component-helpers/auth/rbac/validation"
)

// Rules is what the RBAC authorizer knows (implemented by internal/authz/rbac.Authorizer).
type Rules interface {
	// GrantedRules returns the rules u holds in namespace ("" for cluster-wide only). An error
	// may come with the rules that could be resolved.
	GrantedRules(u user.Info, namespace string) ([]rbacv1.PolicyRule, error)
	// RoleRefRules returns the rules of the role a binding in namespace refers to.
	RoleRefRules(namespace string, ref rbacv1.RoleRef) ([]rbacv1.PolicyRule, error)
}

// Guard confirms that writes of roles and bindings do not escalate privileges. The user is the
// one of the request context. Refusals are plain errors whose text is upstream's reason; the
// caller turns them into a Forbidden status naming the object.
type Guard struct {
	// Authorizer answers the explicit "escalate" and "bind" permissions; nil means nobody has them.
	Authorizer authorizer.Authorizer
	Rules      Rules
}

// fullAuthority is what cluster-admin holds: everything on every resource and URL.
var fullAuthority = []rbacv1.PolicyRule{
	{Verbs: []string{rbacv1.VerbAll}, APIGroups: []string{rbacv1.APIGroupAll}, Resources: []string{rbacv1.ResourceAll}},
	{Verbs: []string{rbacv1.VerbAll}, NonResourceURLs: []string{rbacv1.NonResourceAll}},
}

var errNoUser = errors.New("no user on context")

// ConfirmRole allows writing a role with rules in namespace ("" for a ClusterRole) when the user
// is in system:masters, may "escalate" the role, or holds every rule. As upstream, the escalate
// check names the object only as the request does, so a name-restricted escalate permission
// covers updates of that role but not its creation.
func (g *Guard) ConfirmRole(ctx context.Context, namespace string, rules []rbacv1.PolicyRule) error {
	u, ok := request.UserFrom(ctx)
	if !ok {
		return errNoUser
	}
	if g.mayEscalate(ctx, u, namespace) {
		return nil
	}
	return g.confirmHeld(u, namespace, rules)
}

// ConfirmAggregationRule allows writing a ClusterRole that has (or had) an aggregation rule only
// to users who may escalate cluster roles or who hold everything: the rule can gather any
// permission, including ones added to other roles later.
func (g *Guard) ConfirmAggregationRule(ctx context.Context) error {
	u, ok := request.UserFrom(ctx)
	if !ok {
		return errNoUser
	}
	if g.mayEscalate(ctx, u, "") {
		return nil
	}
	if err := g.confirmHeld(u, "", fullAuthority); err != nil {
		return errors.New("must have cluster-admin privileges to use the aggregationRule")
	}
	return nil
}

// ConfirmBinding allows writing a binding in namespace ("" for a ClusterRoleBinding) to ref when
// the user is in system:masters, may "bind" the role, or holds every rule of the role. The bind
// check is made in the binding's namespace, so binding a ClusterRole there can be delegated per
// namespace.
func (g *Guard) ConfirmBinding(ctx context.Context, namespace string, ref rbacv1.RoleRef) error {
	u, ok := request.UserFrom(ctx)
	if !ok {
		return errNoUser
	}
	var resource string
	switch ref.Kind {
	case "Role":
		if namespace == "" {
			return errors.New("a ClusterRoleBinding can only reference a ClusterRole")
		}
		resource = "roles"
	case "ClusterRole":
		resource = "clusterroles"
	default:
		// Refused here rather than left to validation later in the request: a guard that lets
		// through what it does not understand fails open the day validation changes.
		return fmt.Errorf("roleRef.kind %q is neither Role nor ClusterRole", ref.Kind)
	}
	if privileged(u) {
		return nil
	}
	if g.allowed(ctx, authorizer.AttributesRecord{
		User: u, Verb: "bind", Namespace: namespace,
		APIGroup: ref.APIGroup, APIVersion: "*", Resource: resource, Name: ref.Name,
		ResourceRequest: true,
	}) {
		return nil
	}
	rules, err := g.Rules.RoleRefRules(namespace, ref)
	if err != nil {
		return err
	}
	return g.confirmHeld(u, namespace, rules)
}

// privileged is upstream's exception for system:masters, the group of the loopback client and
// the admin: it may do anything, so checking would only cost time.
func privileged(u user.Info) bool {
	return slices.Contains(u.GetGroups(), user.SystemPrivilegedGroup)
}

func (g *Guard) mayEscalate(ctx context.Context, u user.Info, namespace string) bool {
	if privileged(u) {
		return true
	}
	resource := "roles"
	if namespace == "" {
		resource = "clusterroles"
	}
	var name string
	if info, ok := request.RequestInfoFrom(ctx); ok && info.IsResourceRequest {
		name = info.Name
	}
	return g.allowed(ctx, authorizer.AttributesRecord{
		User: u, Verb: "escalate", Namespace: namespace,
		APIGroup: rbacv1.GroupName, APIVersion: "*", Resource: resource, Name: name,
		ResourceRequest: true,
	})
}

func (g *Guard) allowed(ctx context.Context, attrs authorizer.AttributesRecord) bool {
	if g.Authorizer == nil {
		return false
	}
	decision, _, err := g.Authorizer.Authorize(ctx, attrs)
	if err != nil {
		// The decision still stands (an error may come with an allow); the error is only worth a log.
		utilruntime.HandleErrorWithContext(ctx, err, "Authorizing RBAC escalation check",
			"user", attrs.User.GetName(), "verb", attrs.Verb, "resource", attrs.Resource, "namespace", attrs.Namespace, "name", attrs.Name)
	}
	return decision == authorizer.DecisionAllow
}

// confirmHeld checks that u holds every rule in namespace. Rules that could not be resolved (a
// binding to a missing role) are reported with the refusal but do not stop the check: what did
// resolve may be enough.
func (g *Guard) confirmHeld(u user.Info, namespace string, rules []rbacv1.PolicyRule) error {
	held, resolveErr := g.Rules.GrantedRules(u, namespace)
	covered, missing := validation.Covers(held, rules)
	if covered {
		return nil
	}
	descriptions := map[string]bool{}
	for _, r := range compact(missing) {
		descriptions[describe(r)] = true
	}
	lines := make([]string, 0, len(descriptions))
	for d := range descriptions {
		lines = append(lines, d)
	}
	slices.Sort(lines)
	msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s",
		u.GetName(), u.GetGroups(), strings.Join(lines, "\n"))
	if resolveErr != nil {
		msg += fmt.Sprintf("; resolution errors: %v", resolveErr)
	}
	return errors.New(msg)
}

// simpleRule identifies a missing rule that differs from others only by its verbs.
type simpleRule struct {
	group, resource string
	hasName         bool
	name            string
}

// compact merges missing rules that name one group, one resource and at most one object, so a
// role missing get, list and watch on pods reports one line rather than three.
func compact(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, 0, len(rules))
	merged := map[simpleRule]int{}
	for _, r := range rules {
		key, ok := simple(r)
		if !ok {
			out = append(out, r)
			continue
		}
		if i, seen := merged[key]; seen {
			out[i].Verbs = append(out[i].Verbs, r.Verbs...)
			continue
		}
		merged[key] = len(out)
		r.Verbs = slices.Clone(r.Verbs)
		out = append(out, r)
	}
	return out
}

func simple(r rbacv1.PolicyRule) (simpleRule, bool) {
	if len(r.APIGroups) != 1 || len(r.Resources) != 1 || len(r.ResourceNames) > 1 || len(r.NonResourceURLs) > 0 {
		return simpleRule{}, false
	}
	key := simpleRule{group: r.APIGroups[0], resource: r.Resources[0]}
	if len(r.ResourceNames) == 1 {
		key.hasName, key.name = true, r.ResourceNames[0]
	}
	return key, true
}

// describe prints a rule the way upstream's refusals do, e.g.
// {APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}.
func describe(r rbacv1.PolicyRule) string {
	var parts []string
	for _, f := range []struct {
		name   string
		values []string
	}{
		{"APIGroups", r.APIGroups},
		{"Resources", r.Resources},
		{"NonResourceURLs", r.NonResourceURLs},
		{"ResourceNames", r.ResourceNames},
		{"Verbs", r.Verbs},
	} {
		if len(f.values) > 0 {
			parts = append(parts, fmt.Sprintf("%s:%q", f.name, f.values))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
