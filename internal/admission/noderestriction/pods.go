package noderestriction

import (
	"context"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/admission"

	"github.com/idplane/idplane/internal/podwalk"
)

// admitPod lets a node create its mirror pods and delete the pods bound to it; it may not update a
// pod's spec or metadata at all.
func (p *Plugin) admitPod(ctx context.Context, nodeName string, a admission.Attributes) error {
	switch a.GetOperation() {
	case admission.Create:
		return p.admitMirrorPod(ctx, nodeName, a)
	case admission.Delete:
		// The stored pod arrives as the old object; fall back to the cache only without it.
		pod, ok := a.GetOldObject().(*corev1.Pod)
		if !ok {
			var err error
			if pod, err = p.getPod(ctx, a, a.GetNamespace(), a.GetName()); err != nil {
				return err
			}
		}
		if pod.Spec.NodeName != nodeName {
			return forbid(a, "node %q can only delete pods with spec.nodeName set to itself", nodeName)
		}
		return nil
	default:
		return forbid(a, "unexpected operation %q, node %q can only create and delete mirror pods", a.GetOperation(), nodeName)
	}
}

// admitMirrorPod lets a node create only the mirror pod of one of its static pods: bound to itself,
// controlled by its own Node, and reaching no API object, since creating a pod that references a
// secret would otherwise give the node a path to that secret in the Node authorizer's graph.
func (p *Plugin) admitMirrorPod(ctx context.Context, nodeName string, a admission.Attributes) error {
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok {
		return forbid(a, "unexpected type %T", a.GetObject())
	}
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; !mirror {
		return forbid(a, "pod does not have %q annotation, node %q can only create mirror pods", corev1.MirrorPodAnnotationKey, nodeName)
	}
	if pod.Spec.NodeName != nodeName {
		return forbid(a, "node %q can only create pods with spec.nodeName set to itself", nodeName)
	}
	if err := p.checkMirrorPodOwner(ctx, nodeName, pod, a); err != nil {
		return err
	}
	for r := range podwalk.References(pod) {
		if r.Kind == podwalk.Unknown {
			return forbid(a, "node %q can not create pods with a volume source it cannot judge (%s)", nodeName, r.Path)
		}
		// A mirror pod may reference nothing: creating a pod that names a secret would
		// otherwise give the node a path to it.
		return forbid(a, "node %q can not create pods that reference %s (%s)", nodeName, r.Kind.Resource(), r.Path)
	}
	return nil
}

// checkMirrorPodOwner requires exactly one owner reference: the node's own current Node, as
// controller, without blockOwnerDeletion (which would need delete rights on the Node). The UID
// check keeps a mirror pod from outliving a Node that was deleted and re-registered.
func (p *Plugin) checkMirrorPodOwner(ctx context.Context, nodeName string, pod *corev1.Pod, a admission.Attributes) error {
	switch len(pod.OwnerReferences) {
	case 0:
		return forbid(a, "node %q can only create pods with an owner reference set to itself", nodeName)
	case 1:
	default:
		return forbid(a, "node %q can only create pods with a single owner reference set to itself", nodeName)
	}
	owner := pod.OwnerReferences[0]
	if owner.APIVersion != corev1.SchemeGroupVersion.String() || owner.Kind != "Node" || owner.Name != nodeName {
		return forbid(a, "node %q can only create pods with an owner reference set to itself", nodeName)
	}
	if owner.Controller == nil || !*owner.Controller {
		return forbid(a, "node %q can only create pods with a controller owner reference set to itself", nodeName)
	}
	if owner.BlockOwnerDeletion != nil && *owner.BlockOwnerDeletion {
		return forbid(a, "node %q must not set blockOwnerDeletion on an owner reference", nodeName)
	}
	node, err := p.getNode(ctx, a, nodeName)
	if err != nil {
		return err
	}
	if owner.UID != node.UID {
		return forbid(a, "node %q UID mismatch: owner reference has %s, the Node has %s", nodeName, owner.UID, node.UID)
	}
	return nil
}

// admitPodStatus lets a node report status only for pods bound to it, and not use the status
// subresource to relabel the pod or repoint its resource claims.
func admitPodStatus(nodeName string, a admission.Attributes) error {
	if a.GetOperation() != admission.Update {
		return forbid(a, "unexpected operation %q", a.GetOperation())
	}
	old, ok := a.GetOldObject().(*corev1.Pod)
	if !ok {
		return forbid(a, "unexpected type %T", a.GetOldObject())
	}
	if old.Spec.NodeName != nodeName {
		return forbid(a, "node %q can only update pod status for pods with spec.nodeName set to itself", nodeName)
	}
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok {
		return forbid(a, "unexpected type %T", a.GetObject())
	}
	if !labels.Equals(old.Labels, pod.Labels) {
		return forbid(a, "node %q cannot update labels through pod status", nodeName)
	}
	if !sameClaimStatuses(old.Status.ResourceClaimStatuses, pod.Status.ResourceClaimStatuses) {
		return forbid(a, "node %q cannot update resource claim statuses", nodeName)
	}
	if !apiequality.Semantic.DeepEqual(old.Status.ExtendedResourceClaimStatus, pod.Status.ExtendedResourceClaimStatus) {
		return forbid(a, "node %q cannot update extended resource claim status", nodeName)
	}
	return nil
}

// sameClaimStatuses compares which claim each entry names; those names decide what the Node
// authorizer lets the node read, so only the scheduler and the claim controller set them.
func sameClaimStatuses(a, b []corev1.PodResourceClaimStatus) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name {
			return false
		}
		ca, cb := a[i].ResourceClaimName, b[i].ResourceClaimName
		if (ca == nil) != (cb == nil) || (ca != nil && *ca != *cb) {
			return false
		}
	}
	return true
}

// admitEviction lets a node evict only pods bound to it. The pod is named by the URL, or failing
// that by the Eviction body.
func (p *Plugin) admitEviction(ctx context.Context, nodeName string, a admission.Attributes) error {
	if a.GetOperation() != admission.Create {
		return forbid(a, "unexpected operation %q", a.GetOperation())
	}
	name := a.GetName()
	if name == "" {
		m, err := meta.Accessor(a.GetObject())
		if err != nil {
			return forbid(a, "unexpected type %T", a.GetObject())
		}
		name = m.GetName()
	}
	if name == "" {
		return forbid(a, "could not determine pod from request data")
	}
	pod, err := p.getPod(ctx, a, a.GetNamespace(), name)
	if err != nil {
		return err
	}
	if pod.Spec.NodeName != nodeName {
		return forbid(a, "node %q can only evict pods with spec.nodeName set to itself", nodeName)
	}
	return nil
}
