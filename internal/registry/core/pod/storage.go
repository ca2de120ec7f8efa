// Package pod stores pods and serves their subresources: status, binding, ephemeralcontainers and
// eviction.
package pod

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/idplane/idplane/internal/registry/store"
	"github.com/idplane/idplane/internal/validation"
)

// NewREST returns pods and their subresources, by resource path.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (map[string]rest.Storage, error) {
	s, err := store.New(optsGetter, store.Options{
		Resource: corev1.Resource("pods"),
		Singular: "pod",
		Kind:     corev1.SchemeGroupVersion.WithKind("Pod"),
		New:      func() runtime.Object { return &corev1.Pod{} },
		NewList:  func() runtime.Object { return &corev1.PodList{} },
		Strategy: &strategy{store.NewStrategy(typer, store.Rules[*corev1.Pod]{
			Namespaced: true,
			PrepareForCreate: func(p *corev1.Pod) {
				p.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: qosClass(&p.Spec)}
			},
			PrepareForUpdate: func(p, old *corev1.Pod) { p.Status = old.Status },
			Validate:         validation.ValidatePod,
			ValidateUpdate:   validation.ValidatePodUpdate,
			ResetFields:      []fieldpath.Path{fieldpath.MakePathOrDie("status")},
			APIVersion:       "v1",
		})},
		// Nodes list and watch only their own pods; the index keeps that cheap.
		Triggers:   storage.IndexerFuncs{"spec.nodeName": nodeNameTrigger},
		ShortNames: []string{"po"},
		Categories: []string{"all"},
	})
	if err != nil {
		return nil, err
	}
	status := s.WithStrategy(store.NewStrategy(typer, store.Rules[*corev1.Pod]{
		Namespaced: true,
		PrepareForUpdate: func(p, old *corev1.Pod) {
			p.Spec = old.Spec
			p.DeletionTimestamp = old.DeletionTimestamp
			p.OwnerReferences = old.OwnerReferences
		},
		ValidateUpdate: validation.ValidatePodStatusUpdate,
		ResetFields:    []fieldpath.Path{fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata", "deletionTimestamp"), fieldpath.MakePathOrDie("metadata", "ownerReferences")},
		APIVersion:     "v1",
	}))
	ephemeral := s.WithStrategy(store.NewStrategy(typer, store.Rules[*corev1.Pod]{
		Namespaced: true,
		PrepareForUpdate: func(p, old *corev1.Pod) {
			containers := p.Spec.EphemeralContainers
			p.Spec = *old.Spec.DeepCopy()
			p.Spec.EphemeralContainers = containers
			p.Status = old.Status
		},
		ValidateUpdate: validation.ValidatePodEphemeralContainersUpdate,
	}))
	return map[string]rest.Storage{
		"pods":                     s,
		"pods/status":              store.NewSubresource(status),
		"pods/ephemeralcontainers": store.NewSubresource(ephemeral),
		"pods/binding":             &bindingREST{pods: s},
		"pods/eviction":            &evictionREST{pods: s},
	}, nil
}

func nodeNameTrigger(obj runtime.Object) string { return obj.(*corev1.Pod).Spec.NodeName }

// strategy adds graceful deletion to the pod rules: a running pod gets its grace period so its
// node can stop it; an unscheduled or finished pod goes at once, as nothing would stop it.
type strategy struct {
	*store.Strategy[*corev1.Pod]
}

var _ rest.RESTGracefulDeleteStrategy = &strategy{}

func (s *strategy) CheckGracefulDelete(_ context.Context, obj runtime.Object, options *metav1.DeleteOptions) bool {
	if options == nil {
		return false
	}
	p := obj.(*corev1.Pod)
	var period int64
	switch {
	case options.GracePeriodSeconds != nil:
		period = *options.GracePeriodSeconds
	case p.Spec.TerminationGracePeriodSeconds != nil:
		period = *p.Spec.TerminationGracePeriodSeconds
	}
	if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		period = 0
	}
	options.GracePeriodSeconds = &period
	return true
}

// qosClass is the pod's quality-of-service class: Guaranteed when every container limits CPU and
// memory and requests equal limits, BestEffort when nothing is requested or limited, else Burstable.
func qosClass(spec *corev1.PodSpec) corev1.PodQOSClass {
	any, guaranteed := false, true
	check := func(c *corev1.Container) {
		req, lim := c.Resources.Requests, c.Resources.Limits
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			r, hasReq := req[name]
			l, hasLim := lim[name]
			if (hasReq && !r.IsZero()) || (hasLim && !l.IsZero()) {
				any = true
			}
			if !hasLim || l.IsZero() || (hasReq && r.Cmp(l) != 0) {
				guaranteed = false
			}
		}
	}
	for i := range spec.InitContainers {
		check(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		check(&spec.Containers[i])
	}
	switch {
	case !any:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	default:
		return corev1.PodQOSBurstable
	}
}
