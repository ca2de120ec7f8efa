package pod

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"

	"github.com/idplane/idplane/internal/registry/store"
	"github.com/idplane/idplane/internal/validation"
)

// bindingREST assigns a pending pod to a node (pods/binding), the scheduler's one write.
type bindingREST struct {
	pods *store.Store
}

var (
	_ rest.NamedCreater         = &bindingREST{}
	_ rest.SingularNameProvider = &bindingREST{}
)

func (r *bindingREST) New() runtime.Object     { return &corev1.Binding{} }
func (r *bindingREST) Destroy()                {}
func (r *bindingREST) NamespaceScoped() bool   { return true }
func (r *bindingREST) GetSingularName() string { return "binding" }

func (r *bindingREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	binding, ok := obj.(*corev1.Binding)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a Binding: %T", obj))
	}
	if binding.Name != name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("binding name %q does not match pod name %q", binding.Name, name))
	}
	if ns, ok := genericapirequest.NamespaceFrom(ctx); ok && binding.Namespace == "" {
		binding.Namespace = ns
	}
	if errs := validation.ValidatePodBinding(binding); len(errs) > 0 {
		return nil, apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Binding").GroupKind(), binding.Name, errs)
	}
	if createValidation != nil {
		if err := createValidation(ctx, binding); err != nil {
			return nil, err
		}
	}
	key, err := r.pods.KeyFunc(ctx, name)
	if err != nil {
		return nil, err
	}
	var preconditions *storage.Preconditions
	if binding.UID != "" || binding.ResourceVersion != "" {
		preconditions = &storage.Preconditions{}
		if binding.UID != "" {
			preconditions.UID = &binding.UID
		}
		if binding.ResourceVersion != "" {
			preconditions.ResourceVersion = &binding.ResourceVersion
		}
	}
	err = r.pods.Storage.GuaranteedUpdate(ctx, key, &corev1.Pod{}, false, preconditions,
		storage.SimpleUpdate(func(existing runtime.Object) (runtime.Object, error) {
			p := existing.(*corev1.Pod)
			if p.DeletionTimestamp != nil {
				return nil, apierrors.NewConflict(corev1.Resource("pods/binding"), name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a node", name))
			}
			if p.Spec.NodeName != "" {
				return nil, apierrors.NewConflict(corev1.Resource("pods/binding"), name, fmt.Errorf("pod %s is already assigned to node %q", name, p.Spec.NodeName))
			}
			p.Spec.NodeName = binding.Target.Name
			for k, v := range binding.Annotations {
				if p.Annotations == nil {
					p.Annotations = map[string]string{}
				}
				p.Annotations[k] = v
			}
			setScheduled(p)
			return p, nil
		}), len(options.DryRun) > 0, nil)
	if err != nil {
		return nil, err
	}
	return &metav1.Status{Status: metav1.StatusSuccess, Code: 201}, nil
}

func setScheduled(p *corev1.Pod) {
	now := metav1.Now()
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodScheduled {
			p.Status.Conditions[i].Status = corev1.ConditionTrue
			p.Status.Conditions[i].LastTransitionTime = now
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now,
	})
}
