package objects

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/idplane/idplane/internal/podwalk"
)

// kinds are the podwalk kinds the cache reads one object at a time.
var kinds = map[podwalk.Kind]Kind{podwalk.Secret: Secret, podwalk.ConfigMap: ConfigMap}

// PodRefs are the secrets and configmaps whose data pod's volumes and its containers'
// environments hold, each once: what the pod reads through the cache.
func PodRefs(pod *corev1.Pod) []Ref {
	var refs []Ref
	for r := range podwalk.References(pod) {
		kind, ok := kinds[r.Kind]
		if !r.Contents || !ok || r.Name == "" {
			continue
		}
		if ref := (Ref{Kind: kind, Namespace: pod.Namespace, Name: r.Name}); !slices.Contains(refs, ref) {
			refs = append(refs, ref)
		}
	}
	return refs
}
