// Package bootstrap holds the default RBAC policy every idplane server reconciles at start
// (the roles and bindings a fresh cluster needs before an administrator writes any) and the
// reconciliation that keeps it present without overwriting what administrators added.
package bootstrap

import (
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"

	"github.com/idplane/idplane/internal/certificates/podcert"
)

const (
	// bootstrappingLabel marks every object of the default policy, as upstream, so that
	// `kubectl get clusterroles -l kubernetes.io/bootstrapping=rbac-defaults` lists them.
	bootstrappingLabel = "kubernetes.io/bootstrapping"
	bootstrappingValue = "rbac-defaults"

	aggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	aggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	aggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"

	systemNode = "system:node"
)

const (
	coreGroup           = ""
	authenticationGroup = "authentication.k8s.io"
	authorizationGroup  = "authorization.k8s.io"
	certificatesGroup   = "certificates.k8s.io"
	coordinationGroup   = "coordination.k8s.io"
	discoveryGroup      = "discovery.k8s.io"
	nodeGroup           = "node.k8s.io"
	resourceGroup       = "resource.k8s.io"
	storageGroup        = "storage.k8s.io"
)

var (
	read      = []string{"get", "list", "watch"}
	write     = []string{"create", "update", "patch", "delete", "deletecollection"}
	readWrite = slices.Concat(read, write)
)

// ClusterRoles returns the default ClusterRoles. Each call builds fresh objects, so callers
// may modify them.
func ClusterRoles() []rbacv1.ClusterRole {
	roles := []rbacv1.ClusterRole{
		clusterRole("cluster-admin",
			resourceRule([]string{"*"}, "*", "*"),
			urlRule([]string{"*"}, "*"),
		),
		// Enough to find out whether the server is up and which APIs it serves.
		clusterRole("system:discovery",
			urlRule([]string{"get"},
				"/livez", "/readyz", "/healthz", "/version", "/version/",
				"/openapi", "/openapi/*", "/api", "/api/*", "/apis", "/apis/*"),
		),
		// What every user may ask about themselves.
		clusterRole("system:basic-user",
			resourceRule([]string{"create"}, authorizationGroup, "selfsubjectaccessreviews", "selfsubjectrulesreviews"),
			resourceRule([]string{"create"}, authenticationGroup, "selfsubjectreviews"),
		),
		// Non-sensitive server information, granted even to anonymous clients.
		clusterRole("system:public-info-viewer",
			urlRule([]string{"get"}, "/livez", "/readyz", "/healthz", "/version", "/version/"),
		),

		// admin, edit and view hold no rules of their own: the aggregation controller fills
		// them from every ClusterRole carrying their label, so that extensions can add to
		// them. edit aggregates into admin and view into edit, making each a superset of
		// the next.
		aggregatedClusterRole("admin", aggregateToAdmin, nil),
		aggregatedClusterRole("edit", aggregateToEdit, map[string]string{aggregateToAdmin: "true"}),
		aggregatedClusterRole("view", aggregateToView, map[string]string{aggregateToEdit: "true"}),
		labelledClusterRole("system:aggregate-to-admin", aggregateToAdmin,
			resourceRule([]string{"create"}, authorizationGroup, "localsubjectaccessreviews"),
			resourceRule(readWrite, rbacv1.GroupName, "roles", "rolebindings"),
		),
		// Reading secrets and impersonating service accounts escalate to the service
		// accounts' rights, which is why these stop at edit and are not in view.
		labelledClusterRole("system:aggregate-to-edit", aggregateToEdit,
			resourceRule(read, coreGroup, "secrets"),
			resourceRule([]string{"impersonate"}, coreGroup, "serviceaccounts"),
			resourceRule(write, coreGroup, "pods"),
			resourceRule([]string{"create"}, coreGroup, "pods/eviction"),
			// Endpoints are not here, as upstream since CVE-2021-25740: writing them would point a
			// Service at addresses its selector never chose.
			resourceRule(write, coreGroup, "serviceaccounts", "services", "persistentvolumeclaims", "configmaps", "secrets", "events"),
			resourceRule([]string{"create"}, coreGroup, "serviceaccounts/token"),
			resourceRule(readWrite, coordinationGroup, "leases"),
		),
		labelledClusterRole("system:aggregate-to-view", aggregateToView,
			resourceRule(read, coreGroup, "pods", "serviceaccounts", "persistentvolumeclaims", "persistentvolumeclaims/status", "configmaps"),
			resourceRule(read, coreGroup, "events", "pods/status", "namespaces/status"),
			resourceRule(read, coreGroup, "services", "endpoints"),
			resourceRule(read, discoveryGroup, "endpointslices"),
			// Reading namespaces through a namespaced binding shows the user its own namespace.
			resourceRule(read, coreGroup, "namespaces"),
		),

		clusterRole(systemNode, NodeRules()...),
		clusterRole("system:node-bootstrapper",
			resourceRule([]string{"create", "get", "list", "watch"}, certificatesGroup, "certificatesigningrequests"),
		),
		// For servers that delegate authentication and authorization to idplane.
		clusterRole("system:auth-delegator",
			resourceRule([]string{"create"}, authenticationGroup, "tokenreviews"),
			resourceRule([]string{"create"}, authorizationGroup, "subjectaccessreviews"),
		),
		clusterRole("system:service-account-issuer-discovery",
			urlRule([]string{"get"}, "/.well-known/openid-configuration", "/openid/v1/jwks"),
		),
		// The SPIFFE bundle of idplane.io/spiffe, which parties federating with the trust domain fetch.
		clusterRole("idplane:spiffe-bundle-discovery", urlRule([]string{"get"}, podcert.BundlePath)),

		// Holding one of these makes the CSR approving controller approve the requester's
		// node client CSRs (first certificate, then renewals of its own).
		clusterRole("system:certificates.k8s.io:certificatesigningrequests:nodeclient",
			resourceRule([]string{"create"}, certificatesGroup, "certificatesigningrequests/nodeclient"),
		),
		clusterRole("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
			resourceRule([]string{"create"}, certificatesGroup, "certificatesigningrequests/selfnodeclient"),
		),
		signerApprover("system:certificates.k8s.io:kube-apiserver-client-approver", certificatesv1.KubeAPIServerClientSignerName),
		signerApprover("system:certificates.k8s.io:kube-apiserver-client-kubelet-approver", certificatesv1.KubeAPIServerClientKubeletSignerName),
		signerApprover("system:certificates.k8s.io:kubelet-serving-approver", certificatesv1.KubeletServingSignerName),
		signerApprover("system:certificates.k8s.io:legacy-unknown-approver", certificatesv1beta1.LegacyUnknownSignerName),
	}
	for i := range roles {
		markBootstrap(&roles[i].ObjectMeta)
	}
	return roles
}

// ClusterRoleBindings returns the default ClusterRoleBindings. Each call builds fresh
// objects.
func ClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	bindings := []rbacv1.ClusterRoleBinding{
		groupBinding("cluster-admin", user.SystemPrivilegedGroup),
		groupBinding("system:discovery", user.AllAuthenticated),
		groupBinding("system:basic-user", user.AllAuthenticated),
		groupBinding("system:public-info-viewer", user.AllAuthenticated, user.AllUnauthenticated),
		// Nodes get their rights from the Node authorizer, which limits each to the objects
		// of its own pods. Binding system:nodes here would hand every node the whole role
		// and undo that isolation, so the binding exists, as upstream keeps it, with no
		// subjects.
		groupBinding(systemNode),
		// Service accounts may read where their tokens come from; anything wider is the
		// administrator's choice.
		groupBinding("system:service-account-issuer-discovery", serviceaccount.AllServiceAccountsGroup),
		// Likewise the SPIFFE bundle: workloads verify each other's SVIDs with it.
		groupBinding("idplane:spiffe-bundle-discovery", serviceaccount.AllServiceAccountsGroup),
		// Upstream leaves these to kubeadm; a cluster needs them for nodes to join and renew:
		// new nodes' bootstrap credentials may create and follow CSRs and have kubelet client
		// certificates approved, and nodes may renew their own. The last two roles grant only a
		// subresource the approver checks.
		namedGroupBinding("idplane:node-bootstrapper", "system:node-bootstrapper", bootstrapapi.BootstrapDefaultGroup),
		namedGroupBinding("idplane:node-bootstrapper-nodeclient", "system:certificates.k8s.io:certificatesigningrequests:nodeclient", bootstrapapi.BootstrapDefaultGroup),
		namedGroupBinding("idplane:nodes-selfnodeclient", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", user.NodesGroup),
	}
	for i := range bindings {
		markBootstrap(&bindings[i].ObjectMeta)
	}
	return bindings
}

// NodeRules returns the rules of the system:node role: everything a kubelet may need. The
// Node authorizer narrows them to the objects related to the requesting node.
func NodeRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		// Checks of API access; these creates write nothing.
		resourceRule([]string{"create"}, authenticationGroup, "tokenreviews"),
		resourceRule([]string{"create"}, authorizationGroup, "subjectaccessreviews", "localsubjectaccessreviews"),
		// Service environment variables of containers.
		resourceRule(read, coreGroup, "services"),
		// Registering the node and reporting its status.
		resourceRule([]string{"create", "get", "list", "watch"}, coreGroup, "nodes"),
		resourceRule([]string{"update", "patch"}, coreGroup, "nodes/status"),
		resourceRule([]string{"update", "patch"}, coreGroup, "nodes"),
		resourceRule([]string{"create", "update", "patch"}, coreGroup, "events"),
		// Pods bound to the node, mirror pods of static pods, their status and evictions.
		resourceRule(read, coreGroup, "pods"),
		resourceRule([]string{"create", "delete"}, coreGroup, "pods"),
		resourceRule([]string{"update", "patch"}, coreGroup, "pods/status"),
		resourceRule([]string{"create"}, coreGroup, "pods/eviction"),
		// What the node's pods mount or reference.
		resourceRule(read, coreGroup, "secrets", "configmaps"),
		resourceRule([]string{"get"}, coreGroup, "persistentvolumeclaims", "persistentvolumes"),
		resourceRule([]string{"get"}, coreGroup, "endpoints"),
		// Client certificate bootstrap and rotation.
		resourceRule([]string{"create", "get", "list", "watch"}, certificatesGroup, "certificatesigningrequests"),
		// Node heartbeats.
		resourceRule([]string{"get", "create", "update", "patch", "delete"}, coordinationGroup, "leases"),
		resourceRule([]string{"get"}, storageGroup, "volumeattachments"),
		// Projected service account token volumes.
		resourceRule([]string{"create"}, coreGroup, "serviceaccounts/token"),
		resourceRule([]string{"get", "update", "patch"}, coreGroup, "persistentvolumeclaims/status"),
		resourceRule(read, storageGroup, "csidrivers"),
		resourceRule([]string{"get", "create", "update", "patch", "delete"}, storageGroup, "csinodes"),
		resourceRule(read, nodeGroup, "runtimeclasses"),
		resourceRule([]string{"get"}, resourceGroup, "resourceclaims"),
		resourceRule([]string{"deletecollection"}, resourceGroup, "resourceslices"),
		// ClusterTrustBundle projected volumes.
		resourceRule(read, certificatesGroup, "clustertrustbundles"),
		// podCertificate projected volumes.
		resourceRule([]string{"get", "list", "watch", "create"}, certificatesGroup, "podcertificaterequests"),
		// Service account tokens handed to image credential providers.
		resourceRule([]string{"get"}, coreGroup, "serviceaccounts"),
	}
}

func clusterRole(name string, rules ...rbacv1.PolicyRule) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
}

func labelledClusterRole(name, label string, rules ...rbacv1.PolicyRule) rbacv1.ClusterRole {
	r := clusterRole(name, rules...)
	r.Labels = map[string]string{label: "true"}
	return r
}

func aggregatedClusterRole(name, selectorLabel string, labels map[string]string) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		AggregationRule: &rbacv1.AggregationRule{
			ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{selectorLabel: "true"}}},
		},
	}
}

func signerApprover(name, signerName string) rbacv1.ClusterRole {
	r := resourceRule([]string{"approve"}, certificatesGroup, "signers")
	r.ResourceNames = []string{signerName}
	return clusterRole(name, r)
}

func groupBinding(role string, groups ...string) rbacv1.ClusterRoleBinding {
	return namedGroupBinding(role, role, groups...)
}

func namedGroupBinding(name, role string, groups ...string) rbacv1.ClusterRoleBinding {
	b := rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
	}
	for _, g := range groups {
		b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: g})
	}
	return b
}

// resourceRule and urlRule sort their lists, as upstream's rule builder does, so that the
// stored objects read the same as upstream's.
func resourceRule(verbs []string, group string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: sorted(verbs), APIGroups: []string{group}, Resources: sorted(resources)}
}

func urlRule(verbs []string, urls ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: sorted(verbs), NonResourceURLs: sorted(urls)}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func markBootstrap(meta *metav1.ObjectMeta) {
	if meta.Labels == nil {
		meta.Labels = map[string]string{}
	}
	meta.Labels[bootstrappingLabel] = bootstrappingValue
	meta.Annotations = map[string]string{rbacv1.AutoUpdateAnnotationKey: "true"}
}
