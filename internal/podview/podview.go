// Package podview is the pod as the server's in-process readers keep it in their shared
// informer: everything they read, and nothing else of its spec or metadata.
//
// The readers of the shared pod informer are the Node authorizer's graph (every reference
// podwalk reports, the mirror pod annotation, UID, node, ephemeral container count and resource
// claim statuses), the service account token authenticator and its cache (name, namespace, UID,
// deletion), NodeRestriction (node, service account, UID, projected token audiences and pod
// certificate signers) and the node lifecycle controller (node, UID, status). None reads a
// container's image, command, ports, resources, probes or mounts, the pod's scheduling
// constraints, its labels or its other annotations; those are most of a pod's decoded bytes, and
// the informer keeps one copy of every pod in the cluster.
//
// Status is kept whole. Nothing writes a pod back from its informer copy: the node lifecycle
// controller, the one writer, reads the stored pod first, since the status subresource takes
// labels and annotations from the request.
//
// Pods of one shape share their projected volume sources: after slimming, the kube-api-access
// volume that admission adds to every pod (its token, the kube-root-ca.crt config map and the
// namespace from the downward API) is the same in all of them, so Slim points every pod at one
// copy of it (a bounded table, shapes.go). An informer's objects are read-only by contract, and
// here more than ever: a reader that changed a pod's projected volume in place would change it
// in every pod of that shape. A reader that needs to change a pod changes a deep copy.
package podview

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/idplane/idplane/internal/podwalk"
)

// Slim drops, in place, what no reader of the shared pod informer reads, and shares the pod's
// projected volume sources with the other pods of the same shape. It is meant for a pod the
// informer has just decoded and owns; calling it again changes nothing.
func Slim(pod *corev1.Pod) {
	slimMeta(&pod.ObjectMeta)
	s := &pod.Spec
	for c := range podwalk.Containers(s) {
		slimContainer(c.Container)
	}
	for i := range s.Volumes {
		v := &s.Volumes[i].VolumeSource
		slimVolume(v)
		if v.Projected != nil {
			v.Projected = projectedShapes.share(v.Projected)
		}
	}
	s.NodeSelector = nil
	s.Affinity = nil
	s.Tolerations = nil
	s.SecurityContext = nil
	s.HostAliases = nil
	s.DNSConfig = nil
	s.ReadinessGates = nil
	s.TopologySpreadConstraints = nil
	s.Overhead = nil
	s.SchedulingGates = nil
	s.Resources = nil
}

// slimContainer keeps a container's name and the environment's references (podwalk reads
// env[].valueFrom and envFrom), not literal values.
func slimContainer(c *corev1.Container) {
	for i := range c.Env {
		c.Env[i].Value = ""
	}
	*c = corev1.Container{Name: c.Name, Env: c.Env, EnvFrom: c.EnvFrom}
}

// slimVolume drops the key-to-path lists of the sources that have them: which keys a volume
// projects where is the node's business, not a reader's here; the object a source names, and
// the source itself, stay. A projected source may already be shared between pods (Slim called
// again), so its lists are only written when there is something to drop.
func slimVolume(v *corev1.VolumeSource) {
	switch {
	case v.Secret != nil:
		v.Secret.Items = nil
	case v.ConfigMap != nil:
		v.ConfigMap.Items = nil
	case v.DownwardAPI != nil:
		v.DownwardAPI.Items = nil
	case v.Projected != nil:
		for i := range v.Projected.Sources {
			src := &v.Projected.Sources[i]
			switch {
			case src.Secret != nil && src.Secret.Items != nil:
				src.Secret.Items = nil
			case src.ConfigMap != nil && src.ConfigMap.Items != nil:
				src.ConfigMap.Items = nil
			case src.DownwardAPI != nil && src.DownwardAPI.Items != nil:
				src.DownwardAPI.Items = nil
			}
		}
	}
}

// slimMeta keeps the pod's identity, version and deletion, and of its annotations only the one
// that makes it a mirror pod (the graph gives a mirror pod no references).
func slimMeta(m *metav1.ObjectMeta) {
	var annotations map[string]string
	if v, ok := m.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		if len(m.Annotations) == 1 {
			annotations = m.Annotations
		} else {
			annotations = map[string]string{corev1.MirrorPodAnnotationKey: v}
		}
	}
	*m = metav1.ObjectMeta{
		Name:                       m.Name,
		Namespace:                  m.Namespace,
		UID:                        m.UID,
		ResourceVersion:            m.ResourceVersion,
		Generation:                 m.Generation,
		CreationTimestamp:          m.CreationTimestamp,
		DeletionTimestamp:          m.DeletionTimestamp,
		DeletionGracePeriodSeconds: m.DeletionGracePeriodSeconds,
		Annotations:                annotations,
	}
}
