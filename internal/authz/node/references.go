package node

import (
	"encoding/binary"
	"iter"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/idplane/idplane/internal/podwalk"
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
	kindPodCertificateRequest
	numKinds
)

// kindNames are the singular resource names used in reasons, logs and Explain paths.
var kindNames = [numKinds]string{
	kindPod:                   "pod",
	kindSecret:                "secret",
	kindConfigMap:             "configmap",
	kindPVC:                   "persistentvolumeclaim",
	kindPV:                    "persistentvolume",
	kindServiceAccount:        "serviceaccount",
	kindVolumeAttachment:      "volumeattachment",
	kindResourceClaim:         "resourceclaim",
	kindPodCertificateRequest: "podcertificaterequest",
}

func (k kind) String() string { return kindNames[k] }

// ref is an object a pod refers to; its namespace is always the pod's.
type ref struct {
	kind kind
	name string
}

// graphKinds maps the kinds of objects a pod references to those the graph lets a node reach;
// the others (claim templates, trust bundles, CSI drivers...) map to numKinds: the Node
// authorizer does not hand them out by name.
var graphKinds = func() (m [podwalk.NumKinds]kind) {
	for i := range m {
		m[i] = numKinds
	}
	m[podwalk.Secret] = kindSecret
	m[podwalk.ConfigMap] = kindConfigMap
	m[podwalk.ServiceAccount] = kindServiceAccount
	m[podwalk.PersistentVolumeClaim] = kindPVC
	m[podwalk.ResourceClaim] = kindResourceClaim
	return m
}()

// podReferences lists, once each, the objects a bound pod makes readable to its node. A
// mirror pod was written by a node, so it grants nothing: otherwise a node could reach any
// object by creating a static pod that names it. NodeRestriction refuses such mirror pods
// too; this is the second line.
func podReferences(pod *corev1.Pod) []ref {
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return nil
	}
	// Most pods name a few objects; one allocation holds them.
	refs := make([]ref, 0, 8)
	for r := range podwalk.References(pod) {
		k := graphKinds[r.Kind]
		if k != numKinds && r.Name != "" && !slices.Contains(refs, ref{k, r.Name}) {
			refs = append(refs, ref{k, r.Name})
		}
	}
	return refs
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

// podResourceClaimNames lists the ResourceClaims a pod uses: those it names and those its status
// records as made for it. A pod update that changes them changes what the node may read.
func podResourceClaimNames(pod *corev1.Pod) []string {
	var names []string
	for r := range podwalk.References(pod) {
		if r.Kind == podwalk.ResourceClaim {
			names = append(names, r.Name)
		}
	}
	return names
}
