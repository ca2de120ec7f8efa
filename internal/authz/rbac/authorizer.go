// Package rbac is the RBAC authorizer: it allows a request when a RoleBinding of the
// request's namespace or a ClusterRoleBinding names the user, one of its groups or its
// service account, and the role bound has a rule matching the request. It never denies.
// Decisions come from an in-memory index kept current by informers, never from storage.
package rbac

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	rbacv1informers "k8s.io/client-go/informers/rbac/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/idplane/idplane/internal/authz/policyrule"
)

var (
	errNotSynced = errors.New("RBAC: policy cache not synced yet")
	errNoUser    = errors.New("RBAC: no user on request")
)

var (
	_ authorizer.Authorizer   = (*Authorizer)(nil)
	_ authorizer.RuleResolver = (*Authorizer)(nil)
)

// Authorizer decides from roles and bindings seen through informers.
type Authorizer struct {
	idx           *index
	registrations []cache.ResourceEventHandlerRegistration
	// synced latches once every registration has delivered its initial list, so the
	// decision path stops asking the informers.
	synced atomic.Bool
}

// New returns the authorizer; it keeps an in-memory index fed by the informers' events.
// The informers must be started by the caller; until they have synced every decision is
// NoOpinion.
func New(informers rbacv1informers.Interface) (*Authorizer, error) {
	idx := newIndex()
	a := &Authorizer{idx: idx}
	sources := []struct {
		resource string
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
	}{
		{"roles", informers.Roles().Informer(), handler(
			func(r *rbacv1.Role) { idx.setRole(roleKey{namespace: r.Namespace, name: r.Name}, r.Rules) },
			func(r *rbacv1.Role) { idx.deleteRole(roleKey{namespace: r.Namespace, name: r.Name}) },
		)},
		{"clusterroles", informers.ClusterRoles().Informer(), handler(
			func(r *rbacv1.ClusterRole) { idx.setRole(roleKey{cluster: true, name: r.Name}, r.Rules) },
			func(r *rbacv1.ClusterRole) { idx.deleteRole(roleKey{cluster: true, name: r.Name}) },
		)},
		{"rolebindings", informers.RoleBindings().Informer(), handler(
			func(b *rbacv1.RoleBinding) {
				idx.setBinding(newBinding(bindingKey{namespace: b.Namespace, name: b.Name}, b.RoleRef, b.Subjects))
			},
			func(b *rbacv1.RoleBinding) { idx.deleteBinding(bindingKey{namespace: b.Namespace, name: b.Name}) },
		)},
		{"clusterrolebindings", informers.ClusterRoleBindings().Informer(), handler(
			func(b *rbacv1.ClusterRoleBinding) {
				idx.setBinding(newBinding(bindingKey{cluster: true, name: b.Name}, b.RoleRef, b.Subjects))
			},
			func(b *rbacv1.ClusterRoleBinding) { idx.deleteBinding(bindingKey{cluster: true, name: b.Name}) },
		)},
	}
	for _, s := range sources {
		reg, err := s.informer.AddEventHandler(s.handler)
		if err != nil {
			return nil, fmt.Errorf("watching %s for RBAC: %w", s.resource, err)
		}
		a.registrations = append(a.registrations, reg)
	}
	return a, nil
}

// handler routes informer events for one type to set and del; an update is a set, since
// the index replaces whatever it held under the object's key.
func handler[T metav1.Object](set, del func(T)) cache.ResourceEventHandler {
	unexpected := func(obj any) {
		utilruntime.HandleErrorWithLogger(klog.Background(), nil, "RBAC index ignored an unexpected object", "type", fmt.Sprintf("%T", obj))
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if o, ok := obj.(T); ok {
				set(o)
			} else {
				unexpected(obj)
			}
		},
		UpdateFunc: func(_, obj any) {
			if o, ok := obj.(T); ok {
				set(o)
			} else {
				unexpected(obj)
			}
		},
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if o, ok := obj.(T); ok {
				del(o)
			} else {
				unexpected(obj)
			}
		},
	}
}

// HasSynced reports whether the index holds every role and binding of the informers'
// initial lists.
func (a *Authorizer) HasSynced() bool {
	if a.synced.Load() {
		return true
	}
	for _, r := range a.registrations {
		if !r.HasSynced() {
			return false
		}
	}
	a.synced.Store(true)
	return true
}

// HoldsClusterPolicy reports whether the index holds every named ClusterRole and
// ClusterRoleBinding: that objects just written have reached the decisions, not only the
// store, which HasSynced does not say of objects written after the informers' first lists.
func (a *Authorizer) HoldsClusterPolicy(clusterRoles, clusterRoleBindings []string) bool {
	a.idx.mu.RLock()
	defer a.idx.mu.RUnlock()
	for _, name := range clusterRoles {
		if _, ok := a.idx.roles[roleKey{cluster: true, name: name}]; !ok {
			return false
		}
	}
	for _, name := range clusterRoleBindings {
		if _, ok := a.idx.bindings[bindingKey{cluster: true, name: name}]; !ok {
			return false
		}
	}
	return true
}

// Authorize allows the request when a binding that applies to its user grants it. The
// NoOpinion reason is empty unless a binding's role could not be found, which it names.
func (a *Authorizer) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if !a.HasSynced() {
		return authorizer.DecisionNoOpinion, errNotSynced.Error(), nil
	}
	u := attrs.GetUser()
	if u == nil {
		return authorizer.DecisionNoOpinion, "", errNoUser
	}
	req := policyrule.RequestFrom(attrs)

	a.idx.mu.RLock()
	defer a.idx.mu.RUnlock()
	var unresolved []*binding
	for b := range a.idx.bindingsFor(u, attrs.GetNamespace()) {
		rules, ok := a.idx.rulesOf(b)
		if !ok {
			unresolved = append(unresolved, b)
			continue
		}
		if req.AllowedByAny(rules) {
			return authorizer.DecisionAllow, b.reasonFor(u), nil
		}
	}
	if len(unresolved) == 0 {
		return authorizer.DecisionNoOpinion, "", nil
	}
	return authorizer.DecisionNoOpinion, "RBAC: " + resolveErrors(unresolved).Error(), nil
}

// ConditionsAwareAuthorize gives Authorize's decision: RBAC has no conditions.
func (a *Authorizer) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(a.Authorize(ctx, attrs))
}

// EvaluateConditions fails closed: RBAC never returns conditions to evaluate.
func (a *Authorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// RulesFor lists what u may do in namespace, for SelfSubjectRulesReview. A rule with both
// resources and non-resource URLs appears in both lists. The error names roles that could
// not be found; the rules are complete for every other binding.
func (a *Authorizer) RulesFor(_ context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	rules, err := a.GrantedRules(u, namespace)
	if errors.Is(err, errNotSynced) || errors.Is(err, errNoUser) {
		return nil, nil, true, err
	}
	resourceRules, nonResourceRules := policyrule.RuleInfos(rules)
	return resourceRules, nonResourceRules, false, err
}

// GrantedRules returns every rule u holds in namespace: its RoleBindings there plus all
// ClusterRoleBindings (namespace "" = cluster-wide only). An error naming missing roles
// comes with the rules of every binding that did resolve, as rules only ever add rights.
// The rules share slices with the informers' objects and must not be modified.
func (a *Authorizer) GrantedRules(u user.Info, namespace string) ([]rbacv1.PolicyRule, error) {
	if !a.HasSynced() {
		return nil, errNotSynced
	}
	if u == nil {
		return nil, errNoUser
	}
	a.idx.mu.RLock()
	defer a.idx.mu.RUnlock()
	var (
		rules      []rbacv1.PolicyRule
		unresolved []*binding
		seen       = map[*binding]bool{}
	)
	for b := range a.idx.bindingsFor(u, namespace) {
		if seen[b] {
			continue
		}
		seen[b] = true
		r, ok := a.idx.rulesOf(b)
		if !ok {
			unresolved = append(unresolved, b)
			continue
		}
		rules = append(rules, r...)
	}
	if len(unresolved) > 0 {
		return rules, resolveErrors(unresolved)
	}
	return rules, nil
}

// RoleRefRules returns the rules of the Role (in namespace) or ClusterRole a binding
// refers to; a NotFound error when it does not exist. The rules share slices with the
// informers' objects and must not be modified.
func (a *Authorizer) RoleRefRules(namespace string, ref rbacv1.RoleRef) ([]rbacv1.PolicyRule, error) {
	if !a.HasSynced() {
		return nil, errNotSynced
	}
	k, err := roleKeyFor(ref, namespace)
	if err != nil {
		return nil, err
	}
	a.idx.mu.RLock()
	defer a.idx.mu.RUnlock()
	rules, ok := a.idx.roles[k]
	if !ok {
		return nil, k.notFound()
	}
	return slices.Clone(rules), nil
}

// resolveErrors lists each missing role once, however many bindings refer to it.
func resolveErrors(unresolved []*binding) error {
	var errs []error
	seen := map[string]bool{}
	for _, b := range unresolved {
		err := b.resolveError()
		if !seen[err.Error()] {
			seen[err.Error()] = true
			errs = append(errs, err)
		}
	}
	return utilerrors.NewAggregate(errs)
}
