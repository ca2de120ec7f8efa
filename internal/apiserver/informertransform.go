package apiserver

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/idplane/idplane/internal/managedfields"
	"github.com/idplane/idplane/internal/podview"
)

// informerTransform is what the server's shared informers keep of an object: no managed fields,
// which none of their readers reads, and of a pod only what its readers read (package podview
// names them). A part that needs more of a pod than that reads it from the API, not from these
// informers.
func informerTransform(obj any) (any, error) {
	obj, err := managedfields.Drop(obj)
	if pod, ok := obj.(*corev1.Pod); ok {
		podview.Slim(pod)
	}
	return obj, err
}
