// Package namespace empties terminating namespaces: it deletes every namespaced object in a
// namespace marked for deletion and then removes the "kubernetes" finalizer, which lets the
// namespace itself go.
package namespace

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/idplane/idplane/internal/controller/keyworker"
)

// Controller finalizes terminating namespaces.
type Controller struct {
	client  kubernetes.Interface
	dynamic dynamic.Interface
	lister  corelisters.NamespaceLister
	synced  cache.InformerSynced
	queue   workqueue.TypedRateLimitingInterface[string]
}

// New returns a controller fed by the namespace informer.
func New(client kubernetes.Interface, dyn dynamic.Interface, namespaces coreinformers.NamespaceInformer) (*Controller, error) {
	c := &Controller{
		client:  client,
		dynamic: dyn,
		lister:  namespaces.Lister(),
		synced:  namespaces.Informer().HasSynced,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, 30*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "namespace"}),
	}
	enqueue := func(obj any) {
		if ns, ok := obj.(*corev1.Namespace); ok && ns.DeletionTimestamp != nil {
			c.queue.Add(ns.Name)
		}
	}
	_, err := namespaces.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("watching namespaces: %w", err)
	}
	return c, nil
}

// Run processes namespaces until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	keyworker.Run(ctx, c.queue, c.synced, workers, "Finalizing namespace", c.sync)
}

func (c *Controller) sync(ctx context.Context, name string) error {
	ns, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns.DeletionTimestamp == nil || !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		return nil
	}
	if err := c.deleteContent(ctx, name); err != nil {
		return err
	}
	return c.finalize(ctx, name)
}

// deleteContent deletes every object of every namespaced resource the server lists in the
// namespace and reports what is still there (objects with grace periods or finalizers).
func (c *Controller) deleteContent(ctx context.Context, namespace string) error {
	resources, err := discovery.ServerPreferredNamespacedResources(c.client.Discovery())
	if err != nil && len(resources) == 0 {
		return fmt.Errorf("discovering namespaced resources: %w", err)
	}
	var remaining []string
	for _, list := range resources {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			return fmt.Errorf("parsing group version %q: %w", list.GroupVersion, err)
		}
		for _, r := range list.APIResources {
			if !slices.Contains(r.Verbs, "deletecollection") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			client := c.dynamic.Resource(gv.WithResource(r.Name)).Namespace(namespace)
			if err := client.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting %s in namespace %q: %w", r.Name, namespace, err)
			}
			left, err := client.List(ctx, metav1.ListOptions{Limit: 1})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("listing %s in namespace %q: %w", r.Name, namespace, err)
			}
			if left != nil && len(left.Items) > 0 {
				remaining = append(remaining, r.Name)
			}
		}
	}
	if len(remaining) > 0 {
		// Objects with grace periods or finalizers go in their own time; the namespace waits.
		return keyworker.Wait(fmt.Errorf("objects remain in %v", remaining))
	}
	return nil
}

func (c *Controller) finalize(ctx context.Context, name string) error {
	ns, err := c.client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	ns.Spec.Finalizers = slices.DeleteFunc(ns.Spec.Finalizers, func(f corev1.FinalizerName) bool {
		return f == corev1.FinalizerKubernetes
	})
	_, err = c.client.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("finalizing namespace %q: %w", name, err)
	}
	return nil
}
