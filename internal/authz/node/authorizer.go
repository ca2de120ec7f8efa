package node

import (
	"context"
	"slices"
	"strconv"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/klog/v2"

	nodev1alpha1 "github.com/idplane/idplane/api/node/v1alpha1"
	"github.com/idplane/idplane/internal/authz/policyrule"
	"github.com/idplane/idplane/internal/nodeidentity"
)

var (
	_ authorizer.Authorizer   = (*Authorizer)(nil)
	_ authorizer.RuleResolver = (*Authorizer)(nil)
)

// NodeLeaseNamespace holds the nodes' heartbeat Leases, one per node, named after it.
const NodeLeaseNamespace = "kube-node-lease"

// Reasons given with an allow; constants, so that allowing allocates nothing.
const (
	reasonFixedPolicy = "allowed to nodes by the fixed system:node policy"
	reasonDeferred    = "allowed to nodes; NodeRestriction admission limits each node to its own objects"
	reasonNoAdmission = "no opinion: this write is allowed to nodes only where NodeRestriction admission limits each node to its own objects, and it is not declared enabled"
	reasonOwnObject   = "the object belongs to the requesting node"
	reasonNodePods    = "the field selector limits the request to the requesting node's objects"
	reasonReadables   = "the field selector limits the request to what the requesting node may read"
)

var reasonReached = [numKinds]string{
	kindPod:                   "the pod is bound to the requesting node",
	kindSecret:                "a pod bound to the requesting node uses this secret",
	kindConfigMap:             "a pod bound to the requesting node uses this configmap",
	kindPVC:                   "a pod bound to the requesting node uses this persistentvolumeclaim",
	kindPV:                    "a pod bound to the requesting node uses this persistentvolume",
	kindServiceAccount:        "a pod bound to the requesting node runs as this serviceaccount",
	kindVolumeAttachment:      "the volumeattachment is attached to the requesting node",
	kindResourceClaim:         "a pod bound to the requesting node uses this resourceclaim",
	kindPodCertificateRequest: "the podcertificaterequest is for a pod bound to the requesting node",
}

// Authorizer is the Node authorizer. It has an opinion only on requests from nodes: those
// for objects a node's pods use are allowed along a path in the graph; requests on the
// resources it narrows are otherwise left to later authorizers (NoOpinion, with a reason);
// everything else is allowed when the system:node policy allows it.
type Authorizer struct {
	graph *Graph
	fresh *Freshness
	rules fixedRules
	// nodeRestriction is set when NodeRestriction admission judges every node write. Without
	// it the writes left to that plugin get no opinion: a node allowed to create any pod bound
	// to itself could name any secret in it and then read the secret through the graph.
	nodeRestriction bool
	// listed are the fixed rules as RulesFor reports them: without the rights this
	// authorizer narrows, which depend on the object.
	listed []rbacv1.PolicyRule
}

// Option adjusts an Authorizer at construction.
type Option func(*Authorizer)

// WithNodeRestriction declares that NodeRestriction admission runs on every write, so the
// pod, eviction and Node writes it narrows to each node's own objects may be allowed here.
func WithNodeRestriction() Option {
	return func(a *Authorizer) { a.nodeRestriction = true }
}

// NewAuthorizer returns the Node authorizer deciding from g and the fixed rules (the
// system:node policy). With fresh non-nil, a request about to be refused for lack of a
// path first waits for the graph to catch up with storage, then is decided again.
func NewAuthorizer(g *Graph, fresh *Freshness, rules []rbacv1.PolicyRule, opts ...Option) *Authorizer {
	a := &Authorizer{graph: g, fresh: fresh, rules: compileRules(rules), listed: listedRules(rules)}
	for _, o := range opts {
		o(a)
	}
	return a
}

// deferred answers a write that only NodeRestriction can judge, object by object.
func (a *Authorizer) deferred() (authorizer.Decision, string, error) {
	if !a.nodeRestriction {
		return authorizer.DecisionNoOpinion, reasonNoAdmission, nil
	}
	return authorizer.DecisionAllow, reasonDeferred, nil
}

// request holds what a decision reads of the attributes, read once: AttributesRecord's
// methods take the record by value, so every call through the interface copies it whole.
type request struct {
	attrs                                       authorizer.Attributes
	user                                        user.Info
	verb, group, resource, sub, namespace, name string
	path                                        string
	resourceRequest                             bool
}

func newRequest(attrs authorizer.Attributes) request {
	if r, ok := attrs.(*authorizer.AttributesRecord); ok {
		return request{
			attrs: attrs, user: r.User, verb: r.Verb, group: r.APIGroup, resource: r.Resource, sub: r.Subresource,
			namespace: r.Namespace, name: r.Name, path: r.Path, resourceRequest: r.ResourceRequest,
		}
	}
	return request{
		attrs: attrs, user: attrs.GetUser(), verb: attrs.GetVerb(), group: attrs.GetAPIGroup(), resource: attrs.GetResource(),
		sub: attrs.GetSubresource(), namespace: attrs.GetNamespace(), name: attrs.GetName(), path: attrs.GetPath(),
		resourceRequest: attrs.IsResourceRequest(),
	}
}

// Authorize decides a request; see Authorizer.
func (a *Authorizer) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	req := newRequest(attrs)
	node, isNode := nodeidentity.NodeName(req.user)
	if !isNode {
		return authorizer.DecisionNoOpinion, "", nil
	}
	if node == "" {
		return a.deny(node, "user "+strconv.Quote(req.user.GetName())+" names no node")
	}
	if req.resourceRequest {
		switch req.group {
		case "":
			switch req.resource {
			case "secrets":
				return a.readObject(ctx, node, kindSecret, &req)
			case "configmaps":
				return a.readObject(ctx, node, kindConfigMap, &req)
			case "persistentvolumeclaims":
				return a.claim(ctx, node, &req)
			case "persistentvolumes":
				return a.getObject(ctx, node, kindPV, &req)
			case "serviceaccounts":
				return a.serviceAccount(ctx, node, &req)
			case "pods":
				return a.pod(ctx, node, &req)
			case "nodes":
				return a.nodeObject(node, &req)
			}
		case "storage.k8s.io":
			switch req.resource {
			case "volumeattachments":
				return a.getObject(ctx, node, kindVolumeAttachment, &req)
			case "csinodes":
				return a.csiNode(node, &req)
			}
		case "coordination.k8s.io":
			if req.resource == "leases" {
				return a.lease(node, &req)
			}
		case "certificates.k8s.io":
			if req.resource == "podcertificaterequests" {
				return a.podCertificateRequest(ctx, node, &req)
			}
		case nodev1alpha1.GroupName:
			if req.resource == nodev1alpha1.ResourceName {
				return a.nodeReadables(node, &req)
			}
		case "resource.k8s.io":
			switch req.resource {
			case "resourceclaims":
				return a.getObject(ctx, node, kindResourceClaim, &req)
			case "resourceslices":
				return a.resourceSlices(node, &req)
			}
		}
	}
	if a.rules.allow(&req) {
		return authorizer.DecisionAllow, reasonFixedPolicy, nil
	}
	return a.deny(node, "node "+strconv.Quote(node)+" may not "+describe(&req)+": the system:node policy does not allow it")
}

// readObject decides secrets and configmaps: get, or list/watch of a single object by
// metadata.name, of one a pod bound to the node uses.
func (a *Authorizer) readObject(ctx context.Context, node string, k kind, req *request) (authorizer.Decision, string, error) {
	switch req.verb {
	case "get", "list", "watch":
	default:
		return a.deny(node, "node "+strconv.Quote(node)+" may only get, list or watch individual "+k.String()+"s")
	}
	if req.sub != "" {
		return a.deny(node, "node "+strconv.Quote(node)+" may not read subresources of "+k.String()+"s")
	}
	name, ok := objectName(req)
	if !ok || req.namespace == "" {
		return a.deny(node, "node "+strconv.Quote(node)+" may only read one "+k.String()+" at a time, by namespace and name (for list and watch: field selector metadata.name=<name>)")
	}
	return a.reach(ctx, node, k, req.namespace, name)
}

// getObject decides kinds a node may only get, one related object at a time.
func (a *Authorizer) getObject(ctx context.Context, node string, k kind, req *request) (authorizer.Decision, string, error) {
	if req.verb != "get" || req.sub != "" || req.name == "" {
		return a.deny(node, "node "+strconv.Quote(node)+" may only get individual "+k.String()+"s")
	}
	return a.reach(ctx, node, k, req.namespace, req.name)
}

// claim decides persistentvolumeclaims: get, and update or patch of the status (volume
// expansion), of a claim a pod bound to the node uses.
func (a *Authorizer) claim(ctx context.Context, node string, req *request) (authorizer.Decision, string, error) {
	if req.sub != "status" {
		return a.getObject(ctx, node, kindPVC, req)
	}
	switch req.verb {
	case "update", "patch":
		return a.reach(ctx, node, kindPVC, req.namespace, req.name)
	}
	return a.deny(node, "node "+strconv.Quote(node)+" may only update or patch the status of persistentvolumeclaims")
}

// serviceAccount decides get, and create of a token, for the service account of a pod
// bound to the node.
func (a *Authorizer) serviceAccount(ctx context.Context, node string, req *request) (authorizer.Decision, string, error) {
	verb, sub := req.verb, req.sub
	if req.name == "" || !(verb == "get" && sub == "" || verb == "create" && sub == "token") {
		return a.deny(node, "node "+strconv.Quote(node)+" may only get individual serviceaccounts and create their tokens")
	}
	return a.reach(ctx, node, kindServiceAccount, req.namespace, req.name)
}

// pod decides pods: get of a pod bound to the node, list/watch of the node's pods, and
// the writes a kubelet makes (mirror pods, status, eviction), which NodeRestriction limits
// to pods bound to the node.
func (a *Authorizer) pod(ctx context.Context, node string, req *request) (authorizer.Decision, string, error) {
	verb := req.verb
	switch req.sub {
	case "":
		switch verb {
		case "get":
			return a.getObject(ctx, node, kindPod, req)
		case "list", "watch":
			if v, ok := fieldValue(req, "spec.nodeName"); ok && v == node {
				return authorizer.DecisionAllow, reasonNodePods, nil
			}
			if name, ok := objectName(req); ok {
				return a.reach(ctx, node, kindPod, req.namespace, name)
			}
			return a.deny(node, "node "+strconv.Quote(node)+" may only list or watch pods with field selector spec.nodeName="+node)
		case "create", "delete":
			return a.deferred()
		}
	case "status":
		if verb == "update" || verb == "patch" {
			return a.deferred()
		}
	case "eviction":
		if verb == "create" {
			return a.deferred()
		}
	}
	return a.deny(node, "node "+strconv.Quote(node)+" may not "+describe(req))
}

// podCertificateRequest decides certificates.k8s.io podcertificaterequests: a node creates
// requests (NodeRestriction keeps them to its own pods), gets those for its pods, and lists or
// watches only with field selector spec.nodeName=<itself>. The signer's /status is never a node's.
func (a *Authorizer) podCertificateRequest(ctx context.Context, node string, req *request) (authorizer.Decision, string, error) {
	if req.sub == "" {
		switch req.verb {
		case "create":
			return a.deferred()
		case "get":
			return a.getObject(ctx, node, kindPodCertificateRequest, req)
		case "list", "watch":
			if v, ok := fieldValue(req, "spec.nodeName"); ok && v == node {
				return authorizer.DecisionAllow, reasonNodePods, nil
			}
			return a.deny(node, "node "+strconv.Quote(node)+" may only list or watch podcertificaterequests with field selector spec.nodeName="+node)
		}
	}
	return a.deny(node, "node "+strconv.Quote(node)+" may not "+describe(req))
}

// nodeReadables decides node.idplane.io nodereadables: a node lists and watches only its own,
// with field selector nodeName=<itself>. The storage refuses any other caller as well.
func (a *Authorizer) nodeReadables(node string, req *request) (authorizer.Decision, string, error) {
	if req.sub == "" && (req.verb == "list" || req.verb == "watch") {
		if v, ok := fieldValue(req, nodev1alpha1.NodeNameField); ok && v == node {
			return authorizer.DecisionAllow, reasonReadables, nil
		}
	}
	return a.deny(node, "node "+strconv.Quote(node)+" may only list or watch nodereadables with field selector "+nodev1alpha1.NodeNameField+"="+node)
}

// nodeObject decides nodes: a node reads only its own Node object (so that it can look
// for it before registering); creates and updates are left to NodeRestriction; it may
// delete its own Node, as the design allows.
func (a *Authorizer) nodeObject(node string, req *request) (authorizer.Decision, string, error) {
	verb := req.verb
	switch req.sub {
	case "":
		switch verb {
		case "create", "update", "patch":
			return a.deferred()
		case "get", "list", "watch", "delete":
			if name, ok := objectName(req); ok && name == node {
				return authorizer.DecisionAllow, reasonOwnObject, nil
			}
			return a.deny(node, "node "+strconv.Quote(node)+" may "+verb+" only its own Node object"+listHint(verb, node))
		}
	case "status":
		if verb == "update" || verb == "patch" {
			return a.deferred()
		}
	}
	return a.deny(node, "node "+strconv.Quote(node)+" may not "+describe(req))
}

// lease decides coordination.k8s.io leases: only the node's own, in kube-node-lease. A
// create carries no name here; NodeRestriction checks it.
func (a *Authorizer) lease(node string, req *request) (authorizer.Decision, string, error) {
	if !ownObjectVerb(req.verb) || req.sub != "" {
		return a.deny(node, "node "+strconv.Quote(node)+" may only get, create, update, patch or delete its own lease")
	}
	if req.namespace != NodeLeaseNamespace {
		return a.deny(node, "node "+strconv.Quote(node)+" may only use leases in namespace "+NodeLeaseNamespace)
	}
	if req.verb != "create" && req.name != node {
		return a.deny(node, "node "+strconv.Quote(node)+" may only use the lease named after it")
	}
	return authorizer.DecisionAllow, reasonOwnObject, nil
}

// csiNode decides storage.k8s.io csinodes: only the node's own. A create carries no name
// here; NodeRestriction checks it.
func (a *Authorizer) csiNode(node string, req *request) (authorizer.Decision, string, error) {
	if !ownObjectVerb(req.verb) || req.sub != "" {
		return a.deny(node, "node "+strconv.Quote(node)+" may only get, create, update, patch or delete its own CSINode")
	}
	if req.verb != "create" && req.name != node {
		return a.deny(node, "node "+strconv.Quote(node)+" may only use the CSINode named after it")
	}
	return authorizer.DecisionAllow, reasonOwnObject, nil
}

// resourceSlices decides resource.k8s.io resourceslices: a node may only delete its own
// slices, all at once, as the kubelet does when it starts.
func (a *Authorizer) resourceSlices(node string, req *request) (authorizer.Decision, string, error) {
	if req.verb == "deletecollection" && req.sub == "" {
		if v, ok := fieldValue(req, "spec.nodeName"); ok && v == node {
			return authorizer.DecisionAllow, reasonNodePods, nil
		}
	}
	return a.deny(node, "node "+strconv.Quote(node)+" may only deletecollection resourceslices with field selector spec.nodeName="+node)
}

func ownObjectVerb(verb string) bool {
	switch verb {
	case "get", "create", "update", "patch", "delete":
		return true
	}
	return false
}

// reach allows when the graph has a path from the object to the node. Before refusing, it
// lets the graph catch up with storage: the object's pod may have been bound a moment ago,
// and the kubelet, told by its watch, may ask before this server's watch has delivered it.
func (a *Authorizer) reach(ctx context.Context, node string, k kind, namespace, name string) (authorizer.Decision, string, error) {
	if name == "" {
		return a.deny(node, "node "+strconv.Quote(node)+" may only access individual "+k.String()+"s, by name")
	}
	if a.graph.reaches(node, k, namespace, name) {
		return authorizer.DecisionAllow, reasonReached[k], nil
	}
	if a.fresh != nil {
		a.fresh.WaitFresh(ctx)
		if a.graph.reaches(node, k, namespace, name) {
			return authorizer.DecisionAllow, reasonReached[k], nil
		}
	}
	return a.deny(node, noRelationship(node, k, namespace, name))
}

// noRelationship is the reason for the most common refusal, built with one allocation.
func noRelationship(node string, k kind, namespace, name string) string {
	var b strings.Builder
	b.Grow(len(node) + len(namespace) + len(name) + 64)
	b.WriteString("no relationship found between node ")
	writeQuoted(&b, node)
	b.WriteString(" and ")
	b.WriteString(k.String())
	b.WriteByte(' ')
	if namespace == "" {
		writeQuoted(&b, name)
	} else {
		writeQuoted(&b, namespace, "/", name)
	}
	return b.String()
}

// writeQuoted writes the parts, joined, as strconv.Quote would, without its cost for the
// plain names nearly every request carries.
func writeQuoted(b *strings.Builder, parts ...string) {
	for _, s := range parts {
		for i := range len(s) {
			if c := s[i]; c < ' ' || c > '~' || c == '"' || c == '\\' {
				b.WriteString(strconv.Quote(strings.Join(parts, "")))
				return
			}
		}
	}
	b.WriteByte('"')
	for _, s := range parts {
		b.WriteString(s)
	}
	b.WriteByte('"')
}

// deny gives no opinion, so that a later authorizer may still allow, with the reason the
// request was not allowed here, and logs it as upstream does for administrators auditing
// their kubelets' access.
func (a *Authorizer) deny(node, reason string) (authorizer.Decision, string, error) {
	if v := klog.V(2); v.Enabled() {
		v.InfoS("NODE DENY", "node", node, "reason", reason)
	}
	return authorizer.DecisionNoOpinion, reason, nil
}

// objectName is the single object a request is for: its name, or for list and watch the
// name its field selector metadata.name=<name> requires. ok is false when the request may
// cover several objects, or its name and selector disagree.
func objectName(req *request) (string, bool) {
	name := req.name
	switch req.verb {
	case "list", "watch":
		if v, ok := fieldValue(req, "metadata.name"); ok {
			if name != "" && name != v {
				return "", false
			}
			name = v
		}
	}
	return name, name != ""
}

// fieldValue is the value a request's field selector requires field to equal.
func fieldValue(req *request, field string) (string, bool) {
	reqs, err := req.attrs.GetFieldSelector()
	if err != nil {
		return "", false
	}
	for _, r := range reqs {
		if r.Field == field && (r.Operator == selection.Equals || r.Operator == selection.DoubleEquals) {
			return r.Value, true
		}
	}
	return "", false
}

func listHint(verb, node string) string {
	if verb == "list" || verb == "watch" {
		return " (field selector metadata.name=" + node + ")"
	}
	return ""
}

// describe names a request in a reason: "<verb> <resource>[/<subresource>][.<group>]", or
// "<verb> <path>" for a non-resource request.
func describe(req *request) string {
	if !req.resourceRequest {
		return req.verb + " " + req.path
	}
	var b strings.Builder
	b.WriteString(req.verb)
	b.WriteByte(' ')
	b.WriteString(req.resource)
	if sub := req.sub; sub != "" {
		b.WriteByte('/')
		b.WriteString(sub)
	}
	if g := req.group; g != "" {
		b.WriteByte('.')
		b.WriteString(g)
	}
	return b.String()
}

// ConditionsAwareAuthorize gives Authorize's decision: the Node authorizer has no
// conditions.
func (a *Authorizer) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(a.Authorize(ctx, attrs))
}

// EvaluateConditions fails closed: the Node authorizer never returns conditions.
func (a *Authorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// RulesFor lists, for a node, the fixed rules without the rights this authorizer grants
// per object (secrets of its pods, its own Lease…), which no rule list can express; it
// says so by reporting the list incomplete. Anyone else gets nothing from this authorizer.
func (a *Authorizer) RulesFor(_ context.Context, u user.Info, _ string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	node, isNode := nodeidentity.NodeName(u)
	if !isNode || node == "" {
		return nil, nil, false, nil
	}
	resourceRules, nonResourceRules := policyrule.RuleInfos(a.listed)
	return resourceRules, nonResourceRules, true, nil
}

// narrowed are the resources whose fixed rights this authorizer replaces, with the verbs it
// still allows on any object of them; the others depend on the object.
var narrowed = map[ruleResource][]string{
	{"", "secrets", ""}:                                   nil,
	{"", "configmaps", ""}:                                nil,
	{"", "persistentvolumeclaims", ""}:                    nil,
	{"", "persistentvolumeclaims", "status"}:              nil,
	{"", "persistentvolumes", ""}:                         nil,
	{"", "serviceaccounts", ""}:                           nil,
	{"", "serviceaccounts", "token"}:                      nil,
	{"", "pods", ""}:                                      {"create", "delete"},
	{"", "pods", "status"}:                                {"patch", "update"},
	{"", "pods", "eviction"}:                              {"create"},
	{"", "nodes", ""}:                                     {"create", "patch", "update"},
	{"", "nodes", "status"}:                               {"patch", "update"},
	{"storage.k8s.io", "volumeattachments", ""}:           nil,
	{"storage.k8s.io", "csinodes", ""}:                    nil,
	{"coordination.k8s.io", "leases", ""}:                 nil,
	{"resource.k8s.io", "resourceclaims", ""}:             nil,
	{"resource.k8s.io", "resourceslices", ""}:             nil,
	{"certificates.k8s.io", "podcertificaterequests", ""}: {"create"},
}

// listedRules removes from rules what narrowed says depends on the object. A plain rule
// is split per API group, since a resource may be narrowed in one group and not another.
func listedRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, r := range rules {
		if !plain(r) {
			out = append(out, r)
			continue
		}
		for _, g := range r.APIGroups {
			var kept []string
			for _, res := range r.Resources {
				resource, sub, _ := strings.Cut(res, "/")
				verbs, ok := narrowed[ruleResource{g, resource, sub}]
				if !ok {
					kept = append(kept, res)
					continue
				}
				still := slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return !slices.Contains(verbs, v) })
				if len(still) > 0 {
					out = append(out, rbacv1.PolicyRule{Verbs: still, APIGroups: []string{g}, Resources: []string{res}})
				}
			}
			if len(kept) > 0 {
				out = append(out, rbacv1.PolicyRule{Verbs: slices.Clone(r.Verbs), APIGroups: []string{g}, Resources: kept})
			}
		}
	}
	return out
}

// Explain returns the path by which node reaches an object, from the object to the node
// (for example secret ns/s, pod ns/p, node n1), for an administrator asking why the node
// may read it. kind is a resource name, singular or plural: secret, configmap,
// persistentvolumeclaim, persistentvolume, serviceaccount, pod, volumeattachment or
// resourceclaim. ok is false when there is no path or the kind is not one the graph holds.
func (a *Authorizer) Explain(node, resource, namespace, name string) (path []string, ok bool) {
	k, ok := kindFor(resource)
	if !ok || node == "" || name == "" {
		return nil, false
	}
	return a.graph.path(node, k, namespace, name)
}

// ExplainKind reports whether Explain knows resource (singular or plural) and whether objects
// of that kind live in a namespace.
func ExplainKind(resource string) (namespaced, ok bool) {
	k, ok := kindFor(resource)
	return ok && k != kindPV && k != kindVolumeAttachment, ok
}

// ExplainKinds are the kinds Explain knows, singular.
func ExplainKinds() []string { return slices.Clone(kindNames[:]) }

func kindFor(name string) (kind, bool) {
	name = strings.ToLower(name)
	for k, n := range kindNames {
		if name == n || name == n+"s" {
			return kind(k), true
		}
	}
	return 0, false
}
