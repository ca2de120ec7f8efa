package pod

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/idplane/idplane/internal/registry/store"
	"github.com/idplane/idplane/internal/validation"
)

// evictionREST serves pods/eviction. idplane serves no PodDisruptionBudgets, so no budget can
// refuse an eviction: an admitted eviction deletes the pod with the eviction's delete options.
type evictionREST struct {
	pods *store.Store
}

var (
	_ rest.NamedCreater             = &evictionREST{}
	_ rest.SingularNameProvider     = &evictionREST{}
	_ rest.GroupVersionKindProvider = &evictionREST{}
)

// GroupVersionKind says the core group's pods/eviction takes a policy/v1 Eviction.
func (r *evictionREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return policyv1.SchemeGroupVersion.WithKind("Eviction")
}

func (r *evictionREST) New() runtime.Object     { return &policyv1.Eviction{} }
func (r *evictionREST) Destroy()                {}
func (r *evictionREST) NamespaceScoped() bool   { return true }
func (r *evictionREST) GetSingularName() string { return "eviction" }

func (r *evictionREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	eviction, ok := obj.(*policyv1.Eviction)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not an Eviction: %T", obj))
	}
	if eviction.Name != name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("eviction name %q does not match pod name %q", eviction.Name, name))
	}
	if errs := validation.ValidateEviction(eviction); len(errs) > 0 {
		return nil, apierrors.NewInvalid(policyv1.SchemeGroupVersion.WithKind("Eviction").GroupKind(), name, errs)
	}
	if createValidation != nil {
		if err := createValidation(ctx, eviction); err != nil {
			return nil, err
		}
	}
	deleteOptions := eviction.DeleteOptions
	if deleteOptions == nil {
		deleteOptions = &metav1.DeleteOptions{}
	}
	if len(options.DryRun) > 0 {
		deleteOptions = deleteOptions.DeepCopy()
		deleteOptions.DryRun = options.DryRun
	}
	if _, _, err := r.pods.Delete(ctx, name, rest.ValidateAllObjectFunc, deleteOptions); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
		}
		return nil, err
	}
	return &metav1.Status{Status: metav1.StatusSuccess}, nil
}
