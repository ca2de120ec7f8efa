package node

import (
	"encoding/binary"
	"iter"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/storage/ephemeral"
)

// kind is the type of an object a node may reach. It is a byte so that the keys of the
// reachability index, of which there are several per pod, stay small.
type kind uint8

const (
	kindPod kind = iota
	kindSecret
	kindConfigMap
	kindPVC
	kindPV
	kindServiceAccount
	kindVolumeAttachment
	kindResourceClaim
	numKinds
)

// kindNames are the singular resource names used in reasons, logs and Explain paths.
var kindNames = [numKinds]string{
	kindPod:              "pod",
	kindSecret:           "secret",
	kindConfigMap:        "configmap",
	kindPVC:              "persistentvolumeclaim",
	kindPV:               "persistentvolume",
	kindServiceAccount:   "serviceaccount",
	kindVolumeAttachment: "volumeattachment",
	kindResourceClaim:    "resourceclaim",
}

func (k kind) String() string { return kindNames[k] }

// ref is an object a pod refers to; its namespace is always the pod's.
type ref struct {
	kind kind
	name string
}

// podReferences lists, once each, the objects a bound pod makes readable to its node. A
// mirror pod was written by a node, so it grants nothing: otherwise a node could reach any
// object by creating a static pod that names it. NodeRestriction refuses such mirror pods
// too; this is the second line.
func podReferences(pod *corev1.Pod) []ref {
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return nil
	}
	var refs []ref
	add := func(k kind, name string) {
		if name == "" {
			return
		}
		for _, r := range refs {
			if r.kind == k && r.name == name {
				return
			}
		}
		refs = append(refs, ref{k, name})
	}
	spec := &pod.Spec
	add(kindServiceAccount, spec.ServiceAccountName)
	for _, s := range spec.ImagePullSecrets {
		add(kindSecret, s.Name)
	}
	visitContainer := func(envFrom []corev1.EnvFromSource, env []corev1.EnvVar) {
		for _, e := range envFrom {
			if e.SecretRef != nil {
				add(kindSecret, e.SecretRef.Name)
			}
			if e.ConfigMapRef != nil {
				add(kindConfigMap, e.ConfigMapRef.Name)
			}
		}
		for _, e := range env {
			if e.ValueFrom == nil {
				continue
			}
			if e.ValueFrom.SecretKeyRef != nil {
				add(kindSecret, e.ValueFrom.SecretKeyRef.Name)
			}
			if e.ValueFrom.ConfigMapKeyRef != nil {
				add(kindConfigMap, e.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
	}
	for i := range spec.InitContainers {
		visitContainer(spec.InitContainers[i].EnvFrom, spec.InitContainers[i].Env)
	}
	for i := range spec.Containers {
		visitContainer(spec.Containers[i].EnvFrom, spec.Containers[i].Env)
	}
	for i := range spec.EphemeralContainers {
		visitContainer(spec.EphemeralContainers[i].EnvFrom, spec.EphemeralContainers[i].Env)
	}
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		visitVolume(pod, v, add)
	}
	for _, c := range podResourceClaimNames(pod) {
		add(kindResourceClaim, c)
	}
	return refs
}

// visitVolume reports the secrets, configmaps and claims one pod volume uses, including the
// secrets of in-tree plugins that the kubelet reads to mount the volume.
func visitVolume(pod *corev1.Pod, v *corev1.Volume, add func(kind, string)) {
	s := &v.VolumeSource
	switch {
	case s.Secret != nil:
		add(kindSecret, s.Secret.SecretName)
	case s.ConfigMap != nil:
		add(kindConfigMap, s.ConfigMap.Name)
	case s.Projected != nil:
		for _, p := range s.Projected.Sources {
			if p.Secret != nil {
				add(kindSecret, p.Secret.Name)
			}
			if p.ConfigMap != nil {
				add(kindConfigMap, p.ConfigMap.Name)
			}
		}
	case s.PersistentVolumeClaim != nil:
		add(kindPVC, s.PersistentVolumeClaim.ClaimName)
	case s.Ephemeral != nil:
		add(kindPVC, ephemeral.VolumeClaimName(pod, v))
	case s.CSI != nil && s.CSI.NodePublishSecretRef != nil:
		add(kindSecret, s.CSI.NodePublishSecretRef.Name)
	case s.AzureFile != nil:
		add(kindSecret, s.AzureFile.SecretName)
	case s.CephFS != nil && s.CephFS.SecretRef != nil:
		add(kindSecret, s.CephFS.SecretRef.Name)
	case s.Cinder != nil && s.Cinder.SecretRef != nil:
		add(kindSecret, s.Cinder.SecretRef.Name)
	case s.FlexVolume != nil && s.FlexVolume.SecretRef != nil:
		add(kindSecret, s.FlexVolume.SecretRef.Name)
	case s.RBD != nil && s.RBD.SecretRef != nil:
		add(kindSecret, s.RBD.SecretRef.Name)
	case s.ScaleIO != nil && s.ScaleIO.SecretRef != nil:
		add(kindSecret, s.ScaleIO.SecretRef.Name)
	case s.ISCSI != nil && s.ISCSI.SecretRef != nil:
		add(kindSecret, s.ISCSI.SecretRef.Name)
	case s.StorageOS != nil && s.StorageOS.SecretRef != nil:
		add(kindSecret, s.StorageOS.SecretRef.Name)
	}
}

// podResourceClaimNames lists the ResourceClaims a pod uses: those it names, those generated
// for it from templates once its status records them, and the claim the scheduler made for
// its extended resources. A template whose claim is not generated yet grants nothing.
func podResourceClaimNames(pod *corev1.Pod) []string {
	var names []string
	for _, c := range pod.Spec.ResourceClaims {
		if c.ResourceClaimName != nil {
			names = append(names, *c.ResourceClaimName)
			continue
		}
		for _, st := range pod.Status.ResourceClaimStatuses {
			if st.Name == c.Name && st.ResourceClaimName != nil {
				names = append(names, *st.ResourceClaimName)
			}
		}
	}
	if ext := pod.Status.ExtendedResourceClaimStatus; ext != nil {
		names = append(names, ext.ResourceClaimName)
	}
	return names
}

// pvSecret is a secret a PersistentVolume's source names; unlike a pod's references it may
// live in any namespace.
type pvSecret struct {
	namespace, name string
}

// pvSecrets lists the secrets the kubelet reads to mount or expand a PersistentVolume.
// Secrets only the attach/detach or resize controllers read (CSI controller secrets) are
// left out: a node has no business reading them. Plugins whose secret reference predates a
// namespace field default to the bound claim's namespace, as those plugins did.
func pvSecrets(pv *corev1.PersistentVolume) []pvSecret {
	claimNS := ""
	if pv.Spec.ClaimRef != nil {
		claimNS = pv.Spec.ClaimRef.Namespace
	}
	var out []pvSecret
	add := func(namespace, name string) {
		if name == "" || namespace == "" {
			return
		}
		for _, s := range out {
			if s.namespace == namespace && s.name == name {
				return
			}
		}
		out = append(out, pvSecret{namespace, name})
	}
	orClaimNS := func(namespace string) string {
		if namespace == "" {
			return claimNS
		}
		return namespace
	}
	s := &pv.Spec.PersistentVolumeSource
	switch {
	case s.CSI != nil:
		for _, r := range []*corev1.SecretReference{s.CSI.NodePublishSecretRef, s.CSI.NodeStageSecretRef, s.CSI.NodeExpandSecretRef} {
			if r != nil {
				add(r.Namespace, r.Name)
			}
		}
	case s.AzureFile != nil:
		ns := ""
		if s.AzureFile.SecretNamespace != nil {
			ns = *s.AzureFile.SecretNamespace
		}
		add(orClaimNS(ns), s.AzureFile.SecretName)
	case s.CephFS != nil && s.CephFS.SecretRef != nil:
		add(orClaimNS(s.CephFS.SecretRef.Namespace), s.CephFS.SecretRef.Name)
	case s.FlexVolume != nil && s.FlexVolume.SecretRef != nil:
		add(orClaimNS(s.FlexVolume.SecretRef.Namespace), s.FlexVolume.SecretRef.Name)
	case s.RBD != nil && s.RBD.SecretRef != nil:
		add(orClaimNS(s.RBD.SecretRef.Namespace), s.RBD.SecretRef.Name)
	case s.ScaleIO != nil && s.ScaleIO.SecretRef != nil:
		add(orClaimNS(s.ScaleIO.SecretRef.Namespace), s.ScaleIO.SecretRef.Name)
	case s.ISCSI != nil && s.ISCSI.SecretRef != nil:
		add(orClaimNS(s.ISCSI.SecretRef.Namespace), s.ISCSI.SecretRef.Name)
	case s.Cinder != nil && s.Cinder.SecretRef != nil:
		add(s.Cinder.SecretRef.Namespace, s.Cinder.SecretRef.Name)
	case s.StorageOS != nil && s.StorageOS.SecretRef != nil:
		add(s.StorageOS.SecretRef.Namespace, s.StorageOS.SecretRef.Name)
	}
	return out
}

// podRecord is what the graph remembers of a bound pod, enough to withdraw exactly what it
// granted: its node and its references, packed into one string of length-prefixed parts.
// There is one per pod, so this saves most of the memory a slice of references would take.
type podRecord string

func newPodRecord(node string, refs []ref) podRecord {
	size := uvarintLen(len(node)) + len(node)
	for _, r := range refs {
		size += 1 + uvarintLen(len(r.name)) + len(r.name)
	}
	var b strings.Builder
	b.Grow(size)
	writePart(&b, node)
	for _, r := range refs {
		b.WriteByte(byte(r.kind))
		writePart(&b, r.name)
	}
	return podRecord(b.String())
}

func writePart(b *strings.Builder, s string) {
	var n [binary.MaxVarintLen64]byte
	b.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
	b.WriteString(s)
}

// readPart splits the first length-prefixed part off s.
func readPart(s string) (part, rest string) {
	n, w := binary.Uvarint([]byte(s[:min(len(s), binary.MaxVarintLen64)]))
	return s[w : w+int(n)], s[w+int(n):]
}

func (r podRecord) node() string {
	node, _ := readPart(string(r))
	return node
}

// refs yields the pod's references, their names sharing the record's memory.
func (r podRecord) refs() iter.Seq[ref] {
	return func(yield func(ref) bool) {
		_, rest := readPart(string(r))
		for rest != "" {
			k := kind(rest[0])
			var name string
			name, rest = readPart(rest[1:])
			if !yield(ref{k, name}) {
				return
			}
		}
	}
}
