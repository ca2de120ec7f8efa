package noderestriction

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apiserver/pkg/admission"
	kubeletapis "k8s.io/kubelet/pkg/apis"
)

// admitNode lets a node create, update (spec or status) and delete only its own Node. Deleting is
// the design's rule; current upstream leaves it to the authorizer, which no longer grants it.
func admitNode(nodeName string, a admission.Attributes) error {
	if requested := targetName(a); requested != nodeName {
		return forbid(a, "node %q is not allowed to modify node %q", nodeName, requested)
	}
	switch a.GetOperation() {
	case admission.Create:
		node, ok := a.GetObject().(*corev1.Node)
		if !ok {
			return forbid(a, "unexpected type %T", a.GetObject())
		}
		// The Node authorizer scopes a node's reads by what its Node lists, so a node may not
		// point itself at a config source.
		//lint:ignore SA1019 the field is deprecated, not gone: a node may still send it, and must not.
		if node.Spec.ConfigSource != nil {
			return forbid(a, "node %q is not allowed to create a Node with a non-nil configSource", nodeName)
		}
		if bad := forbiddenLabels(node.Labels, nil); len(bad) > 0 {
			return forbid(a, "node %q is not allowed to set the following labels: %s", nodeName, strings.Join(bad, ", "))
		}
	case admission.Update:
		node, ok := a.GetObject().(*corev1.Node)
		if !ok {
			return forbid(a, "unexpected type %T", a.GetObject())
		}
		old, ok := a.GetOldObject().(*corev1.Node)
		if !ok {
			return forbid(a, "unexpected type %T", a.GetOldObject())
		}
		// Only a new non-nil source is refused: older kubelets drop the field on status updates.
		//lint:ignore SA1019 the field is deprecated, not gone: a node may still send it, and must not.
		if node.Spec.ConfigSource != nil && !apiequality.Semantic.DeepEqual(node.Spec.ConfigSource, old.Spec.ConfigSource) {
			return forbid(a, "node %q is not allowed to update configSource to a new non-nil configSource", nodeName)
		}
		// Taints keep workloads off a node; a node that could lift them could draw in what an
		// administrator kept away.
		if !apiequality.Semantic.DeepEqual(node.Spec.Taints, old.Spec.Taints) {
			return forbid(a, "node %q is not allowed to modify taints", nodeName)
		}
		// An owner reference to an object that is missing or later deleted would have the garbage
		// collector delete the Node, and with it the administrator's taints.
		if !apiequality.Semantic.DeepEqual(node.OwnerReferences, old.OwnerReferences) {
			return forbid(a, "node %q is not allowed to modify ownerReferences", nodeName)
		}
		if bad := forbiddenLabels(node.Labels, old.Labels); len(bad) > 0 {
			return forbid(a, "node %q is not allowed to modify labels: %s", nodeName, strings.Join(bad, ", "))
		}
	}
	return nil
}

// forbiddenLabels returns, sorted, the labels that differ between labels and old (added, removed
// or changed) and that a node may not touch: those under node-restriction.kubernetes.io, which
// administrators use to steer workloads to trusted nodes, and any other kubernetes.io or k8s.io
// label that is not one of the well-known kubelet labels k8s.io/kubelet lists.
func forbiddenLabels(labels, old map[string]string) []string {
	var bad []string
	check := func(key string) {
		if slices.Contains(bad, key) {
			return
		}
		ns := labelNamespace(key)
		if inDomain(ns, corev1.LabelNamespaceNodeRestriction) || (isKubernetesLabel(ns) && !kubeletapis.IsKubeletLabel(key)) {
			bad = append(bad, key)
		}
	}
	for k, v := range labels {
		if ov, ok := old[k]; !ok || ov != v {
			check(k)
		}
	}
	for k := range old {
		if _, ok := labels[k]; !ok {
			check(k)
		}
	}
	slices.Sort(bad)
	return bad
}

func isKubernetesLabel(ns string) bool {
	return inDomain(ns, "kubernetes.io") || inDomain(ns, "k8s.io")
}

// inDomain reports whether ns is domain or one of its subdomains.
func inDomain(ns, domain string) bool {
	return ns == domain || strings.HasSuffix(ns, "."+domain)
}

// labelNamespace is the prefix of a label key before its slash, or "" when it has none.
func labelNamespace(key string) string {
	ns, _, found := strings.Cut(key, "/")
	if !found {
		return ""
	}
	return ns
}
