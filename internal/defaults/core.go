package defaults

import (
	corev1 "k8s.io/api/core/v1"
)

// Node copies capacity into allocatable when the kubelet reported no allocatable, so
// schedulers reading allocatable see the node's full size rather than nothing.
func Node(n *corev1.Node) {
	if n.Status.Allocatable == nil && n.Status.Capacity != nil {
		n.Status.Allocatable = n.Status.Capacity.DeepCopy()
	}
	roundResources(n.Status.Capacity)
	roundResources(n.Status.Allocatable)
	// As upstream's v1 conversion: the singular podCIDR is the first of podCIDRs.
	if n.Spec.PodCIDR != "" && len(n.Spec.PodCIDRs) == 0 {
		n.Spec.PodCIDRs = []string{n.Spec.PodCIDR}
	}
	if len(n.Spec.PodCIDRs) > 0 {
		n.Spec.PodCIDR = n.Spec.PodCIDRs[0]
	}
}

// NodeList defaults every node of the list.
func NodeList(l *corev1.NodeList) {
	for i := range l.Items {
		Node(&l.Items[i])
	}
}

// Namespace labels a namespace with its own name (so label selectors can pick namespaces by
// name) and marks it Active.
//
// The "kubernetes" finalizer is deliberately not added here: the namespace controller removes
// it through the finalize subresource, and defaulting on that decode would put it straight
// back. It belongs in the create strategy.
func Namespace(ns *corev1.Namespace) {
	// A namespace created with generateName has no name yet; it is labelled on a later write.
	if ns.Name != "" {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[corev1.LabelMetadataName] = ns.Name
	}
	orDefault(&ns.Status.Phase, corev1.NamespaceActive)
}

// NamespaceList defaults every namespace of the list.
func NamespaceList(l *corev1.NamespaceList) {
	for i := range l.Items {
		Namespace(&l.Items[i])
	}
}

// Secret makes an untyped secret Opaque and folds the write-only stringData into data, which
// upstream does while converting a request to its internal type: idplane has no conversion step,
// and decoding is the same moment.
func Secret(s *corev1.Secret) {
	orDefault(&s.Type, corev1.SecretTypeOpaque)
	if len(s.StringData) > 0 && s.Data == nil {
		s.Data = make(map[string][]byte, len(s.StringData))
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
}

// SecretList defaults every secret of the list.
func SecretList(l *corev1.SecretList) {
	for i := range l.Items {
		Secret(&l.Items[i])
	}
}

// ConfigMap gives a config map an empty, non-nil data map, as upstream does.
func ConfigMap(c *corev1.ConfigMap) {
	if c.Data == nil {
		c.Data = map[string]string{}
	}
}

// ConfigMapList defaults every config map of the list.
func ConfigMapList(l *corev1.ConfigMapList) {
	for i := range l.Items {
		ConfigMap(&l.Items[i])
	}
}

// PersistentVolume defaults a volume to Pending, Retain and Filesystem, and its source.
func PersistentVolume(pv *corev1.PersistentVolume) {
	orDefault(&pv.Status.Phase, corev1.VolumePending)
	orDefault(&pv.Spec.PersistentVolumeReclaimPolicy, corev1.PersistentVolumeReclaimRetain)
	orDefaultPtr(&pv.Spec.VolumeMode, corev1.PersistentVolumeFilesystem)
	persistentVolumeSource(&pv.Spec)
}

// PersistentVolumeList defaults every volume of the list.
func PersistentVolumeList(l *corev1.PersistentVolumeList) {
	for i := range l.Items {
		PersistentVolume(&l.Items[i])
	}
}

// persistentVolumeSource holds the spec defaults shared with the inline volume specs of
// VolumeAttachments; the reclaim policy and volume mode are not among them, upstream scopes
// those to the PersistentVolume object.
func persistentVolumeSource(spec *corev1.PersistentVolumeSpec) {
	roundResources(spec.Capacity)
	src := &spec.PersistentVolumeSource
	if src.HostPath != nil {
		hostPath(src.HostPath)
	}
	if src.RBD != nil {
		rbd(&src.RBD.RBDPool, &src.RBD.RadosUser, &src.RBD.Keyring)
	}
	if src.ISCSI != nil {
		orDefault(&src.ISCSI.ISCSIInterface, "default")
	}
	if src.AzureDisk != nil {
		azureDisk(src.AzureDisk)
	}
	if src.ScaleIO != nil {
		scaleIO(&src.ScaleIO.StorageMode, &src.ScaleIO.FSType)
	}
}

// PersistentVolumeClaim defaults a claim to Pending and Filesystem.
func PersistentVolumeClaim(pvc *corev1.PersistentVolumeClaim) {
	orDefault(&pvc.Status.Phase, corev1.ClaimPending)
	claimSpec(&pvc.Spec)
	roundResources(pvc.Status.Capacity)
	roundResources(pvc.Status.AllocatedResources)
}

// PersistentVolumeClaimList defaults every claim of the list.
func PersistentVolumeClaimList(l *corev1.PersistentVolumeClaimList) {
	for i := range l.Items {
		PersistentVolumeClaim(&l.Items[i])
	}
}

func claimSpec(spec *corev1.PersistentVolumeClaimSpec) {
	orDefaultPtr(&spec.VolumeMode, corev1.PersistentVolumeFilesystem)
	roundResources(spec.Resources.Limits)
	roundResources(spec.Resources.Requests)
}
