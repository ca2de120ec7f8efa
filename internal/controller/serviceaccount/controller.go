// Package serviceaccount gives every active namespace a ServiceAccount named "default": pods that
// name no service account run as it, so it has to exist wherever pods may be created.
package serviceaccount

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/idplane/idplane/internal/controller/keyworker"
)

// DefaultName is the ServiceAccount every active namespace gets.
const DefaultName = "default"

// Controller creates the default ServiceAccount in namespaces that lack it.
type Controller struct {
	client     kubernetes.Interface
	namespaces corelisters.NamespaceLister
	accounts   corelisters.ServiceAccountLister
	synced     cache.InformerSynced
	queue      workqueue.TypedRateLimitingInterface[string]
}

// New returns a controller keyed by namespace name: a namespace added or updated (resyncs
// included) is checked, and so is one whose default ServiceAccount was deleted.
func New(client kubernetes.Interface, namespaces coreinformers.NamespaceInformer, accounts coreinformers.ServiceAccountInformer) (*Controller, error) {
	c := &Controller{
		client:     client,
		namespaces: namespaces.Lister(),
		accounts:   accounts.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "serviceaccount"}),
	}
	nsHandler, err := namespaces.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.namespaceChanged,
		UpdateFunc: func(_, obj any) { c.namespaceChanged(obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("watching namespaces: %w", err)
	}
	saHandler, err := accounts.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: c.accountDeleted,
	})
	if err != nil {
		return nil, fmt.Errorf("watching serviceaccounts: %w", err)
	}
	// The handlers' own HasSynced: the initial namespaces must have been queued, not only listed.
	c.synced = func() bool { return nsHandler.HasSynced() && saHandler.HasSynced() }
	return c, nil
}

func (c *Controller) namespaceChanged(obj any) {
	if ns, ok := obj.(*corev1.Namespace); ok {
		c.queue.Add(ns.Name)
	}
}

func (c *Controller) accountDeleted(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	sa, ok := obj.(*corev1.ServiceAccount)
	if !ok {
		utilruntime.HandleError(fmt.Errorf("serviceaccount informer deleted an unexpected %T", obj))
		return
	}
	if sa.Name == DefaultName {
		c.queue.Add(sa.Namespace)
	}
}

// Run ensures the default ServiceAccounts until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	keyworker.Run(ctx, c.queue, c.synced, workers, "Ensuring the default service account", c.sync)
}

func (c *Controller) sync(ctx context.Context, namespace string) error {
	ns, err := c.namespaces.Get(namespace)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading namespace %q from the cache: %w", namespace, err)
	}
	// A terminating namespace is being emptied; NamespaceLifecycle would refuse the create anyway.
	if ns.Status.Phase != corev1.NamespaceActive {
		return nil
	}
	_, err = c.accounts.ServiceAccounts(namespace).Get(DefaultName)
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading serviceaccount %s/%s from the cache: %w", namespace, DefaultName, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: DefaultName, Namespace: namespace}}
	_, err = c.client.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{})
	switch {
	case err == nil, apierrors.IsAlreadyExists(err):
		return nil
	case namespaceGone(err):
		// The cache had not yet seen the namespace go; its next event, if any, says what to do.
		return nil
	default:
		return fmt.Errorf("creating serviceaccount %s/%s: %w", namespace, DefaultName, err)
	}
}

// namespaceGone reports NamespaceLifecycle's refusal to create in a namespace that no longer
// exists or is terminating. Its other refusals (e.g. not ready yet) are worth retrying.
func namespaceGone(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
}
