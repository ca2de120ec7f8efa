package rbac

import (
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
)

// roleKey names a Role (cluster false, in namespace) or a ClusterRole (cluster true).
type roleKey struct {
	cluster   bool
	namespace string
	name      string
}

// roleKeyFor resolves a binding's roleRef; bindingNamespace is "" for ClusterRoleBindings,
// where a Role reference can never resolve since Roles always have a namespace.
func roleKeyFor(ref rbacv1.RoleRef, bindingNamespace string) (roleKey, error) {
	switch ref.Kind {
	case "Role":
		return roleKey{namespace: bindingNamespace, name: ref.Name}, nil
	case "ClusterRole":
		return roleKey{cluster: true, name: ref.Name}, nil
	default:
		return roleKey{}, fmt.Errorf("unsupported role reference kind %q", ref.Kind)
	}
}

// notFound is the error a missing role is reported with, worded as the API's own.
func (k roleKey) notFound() error {
	if k.cluster {
		return apierrors.NewNotFound(rbacv1.Resource("clusterrole"), k.name)
	}
	return apierrors.NewNotFound(rbacv1.Resource("role"), k.name)
}

type subjectKind uint8

const (
	// unmatchable marks a subject no user can be: an unknown kind, or a service account
	// without namespace in a ClusterRoleBinding.
	unmatchable subjectKind = iota
	userSubject
	groupSubject
)

// subject is a binding subject as the index keys it. Service accounts are users: the
// name they authenticate as.
type subject struct {
	kind subjectKind
	name string
}

type bindingKey struct {
	cluster   bool
	namespace string
	name      string
}

// binding is what decisions need of a RoleBinding or ClusterRoleBinding.
type binding struct {
	key  bindingKey
	role roleKey
	// roleErr is set when the roleRef can never resolve.
	roleErr error
	// subjects and reasons run parallel to the object's subjects; reasons are built here
	// so an allowed decision does not allocate.
	subjects []subject
	reasons  []string
}

func newBinding(key bindingKey, ref rbacv1.RoleRef, subjects []rbacv1.Subject) *binding {
	b := &binding{
		key:      key,
		subjects: make([]subject, len(subjects)),
		reasons:  make([]string, len(subjects)),
	}
	b.role, b.roleErr = roleKeyFor(ref, key.namespace)
	kind, name := "ClusterRoleBinding", strconv.Quote(key.name)
	if !key.cluster {
		kind, name = "RoleBinding", strconv.Quote(key.name+"/"+key.namespace)
	}
	prefix := "RBAC: allowed by " + kind + " " + name + " of " + ref.Kind + " " + strconv.Quote(ref.Name) + " to "
	for i, s := range subjects {
		b.subjects[i] = subjectOf(s, key.namespace)
		b.reasons[i] = prefix + describeSubject(s, key.namespace)
	}
	return b
}

func subjectOf(s rbacv1.Subject, bindingNamespace string) subject {
	switch s.Kind {
	case rbacv1.UserKind:
		return subject{kind: userSubject, name: s.Name}
	case rbacv1.GroupKind:
		return subject{kind: groupSubject, name: s.Name}
	case rbacv1.ServiceAccountKind:
		// A RoleBinding may leave out the namespace of a service account of its own namespace.
		ns := s.Namespace
		if ns == "" {
			ns = bindingNamespace
		}
		if ns == "" {
			return subject{}
		}
		return subject{kind: userSubject, name: serviceaccount.MakeUsername(ns, s.Name)}
	default:
		return subject{}
	}
}

func describeSubject(s rbacv1.Subject, bindingNamespace string) string {
	if s.Kind != rbacv1.ServiceAccountKind {
		return s.Kind + " " + strconv.Quote(s.Name)
	}
	ns := s.Namespace
	if ns == "" {
		ns = bindingNamespace
	}
	return s.Kind + " " + strconv.Quote(s.Name+"/"+ns)
}

// reasonFor names the first of the binding's subjects that u is, as the allowed reason.
func (b *binding) reasonFor(u user.Info) string {
	for i, s := range b.subjects {
		if (s.kind == userSubject && s.name == u.GetName()) ||
			(s.kind == groupSubject && slices.Contains(u.GetGroups(), s.name)) {
			return b.reasons[i]
		}
	}
	return "RBAC: allowed"
}

// index is the policy the authorizer decides from, fed by informer events. Decisions
// hold the read lock; events hold the write lock only for the few map operations one
// object needs, never for a rebuild.
type index struct {
	mu       sync.RWMutex
	roles    map[roleKey][]rbacv1.PolicyRule
	bindings map[bindingKey]*binding
	// users and groups hold, by name, the bindings naming each: one string-keyed lookup
	// per identity of the requesting user, and none of the bindings naming anyone else.
	users  map[string]*subjectBindings
	groups map[string]*subjectBindings
}

// subjectBindings are the bindings naming one user or group, each list ordered by binding
// name so decisions and their reasons do not depend on the order events arrived in.
type subjectBindings struct {
	cluster    []*binding
	namespaced map[string][]*binding
}

func newIndex() *index {
	return &index{
		roles:    map[roleKey][]rbacv1.PolicyRule{},
		bindings: map[bindingKey]*binding{},
		users:    map[string]*subjectBindings{},
		groups:   map[string]*subjectBindings{},
	}
}

// setRole stores the rules of a role. The slice is the informer's and is only read: an
// update replaces it rather than changing it in place.
func (x *index) setRole(k roleKey, rules []rbacv1.PolicyRule) {
	if rules == nil {
		rules = []rbacv1.PolicyRule{}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.roles[k] = rules
}

func (x *index) deleteRole(k roleKey) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.roles, k)
}

func (x *index) setBinding(b *binding) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.removeBindingLocked(b.key)
	x.bindings[b.key] = b
	for _, s := range b.subjects {
		if s.kind == unmatchable {
			continue
		}
		bySubject := x.bySubject(s.kind)
		sb := bySubject[s.name]
		if sb == nil {
			sb = &subjectBindings{}
			bySubject[s.name] = sb
		}
		list := sb.list(b.key)
		i, found := slices.BinarySearchFunc(list, b.key.name, byName)
		if found {
			// The subject is listed twice in b; stale bindings were removed above.
			continue
		}
		sb.setList(b.key, slices.Insert(list, i, b))
	}
}

func (x *index) deleteBinding(k bindingKey) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.removeBindingLocked(k)
}

func (x *index) removeBindingLocked(k bindingKey) {
	old, ok := x.bindings[k]
	if !ok {
		return
	}
	delete(x.bindings, k)
	for _, s := range old.subjects {
		if s.kind == unmatchable {
			continue
		}
		bySubject := x.bySubject(s.kind)
		sb := bySubject[s.name]
		if sb == nil {
			// Listed twice in old, and already gone.
			continue
		}
		list := sb.list(k)
		if i, found := slices.BinarySearchFunc(list, k.name, byName); found {
			sb.setList(k, slices.Delete(list, i, i+1))
		}
		if len(sb.cluster) == 0 && len(sb.namespaced) == 0 {
			delete(bySubject, s.name)
		}
	}
}

func (x *index) bySubject(kind subjectKind) map[string]*subjectBindings {
	if kind == groupSubject {
		return x.groups
	}
	return x.users
}

// list returns the bindings of the scope k is in.
func (sb *subjectBindings) list(k bindingKey) []*binding {
	if k.cluster {
		return sb.cluster
	}
	return sb.namespaced[k.namespace]
}

func (sb *subjectBindings) setList(k bindingKey, list []*binding) {
	switch {
	case k.cluster:
		sb.cluster = list
	case len(list) > 0:
		if sb.namespaced == nil {
			sb.namespaced = map[string][]*binding{}
		}
		sb.namespaced[k.namespace] = list
	default:
		delete(sb.namespaced, k.namespace)
	}
}

func byName(b *binding, name string) int {
	return strings.Compare(b.key.name, name)
}

// bindingsFor yields the bindings that may apply to u in namespace: for the user, then
// each of its groups in turn, the ClusterRoleBindings naming it and then its RoleBindings
// in namespace, each by binding name. A binding naming several of u's identities is
// yielded once for each. The caller holds the read lock.
func (x *index) bindingsFor(u user.Info, namespace string) iter.Seq[*binding] {
	return func(yield func(*binding) bool) {
		if !x.users[u.GetName()].yieldTo(yield, namespace) {
			return
		}
		for _, g := range u.GetGroups() {
			if !x.groups[g].yieldTo(yield, namespace) {
				return
			}
		}
	}
}

// yieldTo yields the ClusterRoleBindings of sb, then its RoleBindings in namespace; it
// reports whether yield wants more. A nil sb names no bindings.
func (sb *subjectBindings) yieldTo(yield func(*binding) bool, namespace string) bool {
	if sb == nil {
		return true
	}
	for _, b := range sb.cluster {
		if !yield(b) {
			return false
		}
	}
	if namespace == "" {
		return true
	}
	for _, b := range sb.namespaced[namespace] {
		if !yield(b) {
			return false
		}
	}
	return true
}

// rulesOf returns the rules of the role b refers to; false when that role does not exist
// (yet: a binding may arrive before its role). The caller holds the read lock.
func (x *index) rulesOf(b *binding) ([]rbacv1.PolicyRule, bool) {
	if b.roleErr != nil {
		return nil, false
	}
	rules, ok := x.roles[b.role]
	return rules, ok
}

// resolveError explains why rulesOf found nothing for b.
func (b *binding) resolveError() error {
	if b.roleErr != nil {
		return b.roleErr
	}
	return b.role.notFound()
}
