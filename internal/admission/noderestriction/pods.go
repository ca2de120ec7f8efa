package noderestriction

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/admission"
)

// admitPod lets a node create its mirror pods and delete the pods bound to it; it may not update a
// pod's spec or metadata at all.
func (p *Plugin) admitPod(nodeName string, a admission.Attributes) error {
	switch a.GetOperation() {
	case admission.Create:
		return p.admitMirrorPod(nodeName, a)
	case admission.Delete:
		// The stored pod arrives as the old object; fall back to the cache only without it.
		pod, ok := a.GetOldObject().(*corev1.Pod)
		if !ok {
			var err error
			if pod, err = p.getPod(a, a.GetNamespace(), a.GetName()); err != nil {
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
func (p *Plugin) admitMirrorPod(nodeName string, a admission.Attributes) error {
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
	if err := p.checkMirrorPodOwner(nodeName, pod, a); err != nil {
		return err
	}
	resource, err := apiReference(pod)
	if err != nil {
		return admission.NewForbidden(a, err)
	}
	if resource != "" {
		return forbid(a, "node %q can not create pods that reference %s", nodeName, resource)
	}
	return nil
}

// checkMirrorPodOwner requires exactly one owner reference: the node's own current Node, as
// controller, without blockOwnerDeletion (which would need delete rights on the Node). The UID
// check keeps a mirror pod from outliving a Node that was deleted and re-registered.
func (p *Plugin) checkMirrorPodOwner(nodeName string, pod *corev1.Pod, a admission.Attributes) error {
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
	node, err := p.getNode(a, nodeName)
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
func (p *Plugin) admitEviction(nodeName string, a admission.Attributes) error {
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
	pod, err := p.getPod(a, a.GetNamespace(), name)
	if err != nil {
		return err
	}
	if pod.Spec.NodeName != nodeName {
		return forbid(a, "node %q can only evict pods with spec.nodeName set to itself", nodeName)
	}
	return nil
}

// apiReference returns the plural resource (with how it is reached) of the first API object the
// pod references, or "" when it references none. An unknown volume or projection source is an
// error: a source added to the API later must be judged before mirror pods may use it.
func apiReference(pod *corev1.Pod) (string, error) {
	spec := &pod.Spec
	if spec.ServiceAccountName != "" || spec.DeprecatedServiceAccount != "" {
		return "serviceaccounts", nil
	}
	if referencesSecrets(spec) {
		return "secrets", nil
	}
	if referencesConfigMaps(spec) {
		return "configmaps", nil
	}
	if len(spec.ResourceClaims) > 0 {
		return "resourceclaims", nil
	}
	for i := range spec.Volumes {
		if resource, err := volumeReference(&spec.Volumes[i]); resource != "" || err != nil {
			return resource, err
		}
	}
	return "", nil
}

// volumeReference classifies one volume source; sources backed only by the node or by storage
// outside the API reference nothing.
func volumeReference(v *corev1.Volume) (string, error) {
	s := &v.VolumeSource
	switch {
	case s.AWSElasticBlockStore != nil, s.AzureDisk != nil, s.CephFS != nil, s.Cinder != nil,
		s.DownwardAPI != nil, s.EmptyDir != nil, s.FC != nil, s.FlexVolume != nil, s.Flocker != nil,
		s.GCEPersistentDisk != nil, s.GitRepo != nil, s.HostPath != nil, s.Image != nil, s.ISCSI != nil,
		s.NFS != nil, s.PhotonPersistentDisk != nil, s.PortworxVolume != nil, s.Quobyte != nil,
		s.RBD != nil, s.ScaleIO != nil, s.StorageOS != nil, s.VsphereVolume != nil:
		return "", nil
	case s.ConfigMap != nil:
		return "configmaps (via configmap volumes)", nil
	case s.Secret != nil:
		return "secrets (via secret volumes)", nil
	case s.CSI != nil:
		return "csidrivers (via CSI volumes)", nil
	case s.Glusterfs != nil:
		return "endpoints (via glusterFS volumes)", nil
	case s.PersistentVolumeClaim != nil:
		return "persistentvolumeclaims", nil
	case s.Ephemeral != nil:
		return "persistentvolumeclaims (via ephemeral volumes)", nil
	case s.AzureFile != nil:
		return "secrets (via azureFile volumes)", nil
	case s.Projected != nil:
		for _, src := range s.Projected.Sources {
			switch {
			case src.DownwardAPI != nil:
			case src.ConfigMap != nil:
				return "configmaps (via projected volumes)", nil
			case src.Secret != nil:
				return "secrets (via projected volumes)", nil
			case src.ServiceAccountToken != nil:
				return "serviceaccounts (via projected volumes)", nil
			case src.ClusterTrustBundle != nil:
				return "clustertrustbundles", nil
			case src.PodCertificate != nil:
				return "podcertificates", nil
			default:
				return "", fmt.Errorf("unknown source for projected volume %q", v.Name)
			}
		}
		return "", nil
	default:
		return "", fmt.Errorf("unknown volume type for volume %q", v.Name)
	}
}

// referencesSecrets reports any secret the pod names: pull secrets, environment of every kind of
// container, and the volume sources that carry a secret reference.
func referencesSecrets(spec *corev1.PodSpec) bool {
	if len(spec.ImagePullSecrets) > 0 {
		return true
	}
	found := false
	visitContainers(spec, func(c *corev1.Container) {
		for _, e := range c.EnvFrom {
			found = found || e.SecretRef != nil
		}
		for _, e := range c.Env {
			found = found || (e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil)
		}
	})
	if found {
		return true
	}
	for i := range spec.Volumes {
		s := &spec.Volumes[i].VolumeSource
		switch {
		case s.Secret != nil, s.AzureFile != nil,
			s.CephFS != nil && s.CephFS.SecretRef != nil,
			s.Cinder != nil && s.Cinder.SecretRef != nil,
			s.FlexVolume != nil && s.FlexVolume.SecretRef != nil,
			s.ISCSI != nil && s.ISCSI.SecretRef != nil,
			s.RBD != nil && s.RBD.SecretRef != nil,
			s.ScaleIO != nil && s.ScaleIO.SecretRef != nil,
			s.StorageOS != nil && s.StorageOS.SecretRef != nil,
			s.CSI != nil && s.CSI.NodePublishSecretRef != nil:
			return true
		case s.Projected != nil:
			for _, src := range s.Projected.Sources {
				if src.Secret != nil {
					return true
				}
			}
		}
	}
	return false
}

// referencesConfigMaps reports any configmap the pod names, in environment or volumes.
func referencesConfigMaps(spec *corev1.PodSpec) bool {
	found := false
	visitContainers(spec, func(c *corev1.Container) {
		for _, e := range c.EnvFrom {
			found = found || e.ConfigMapRef != nil
		}
		for _, e := range c.Env {
			found = found || (e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil)
		}
	})
	if found {
		return true
	}
	for i := range spec.Volumes {
		s := &spec.Volumes[i].VolumeSource
		if s.ConfigMap != nil {
			return true
		}
		if s.Projected != nil {
			for _, src := range s.Projected.Sources {
				if src.ConfigMap != nil {
					return true
				}
			}
		}
	}
	return false
}

// visitContainers calls visit for init, regular and ephemeral containers alike.
func visitContainers(spec *corev1.PodSpec, visit func(*corev1.Container)) {
	for i := range spec.InitContainers {
		visit(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		visit(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		visit((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
}
