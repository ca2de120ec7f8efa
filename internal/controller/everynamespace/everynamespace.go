// Package everynamespace runs the controllers that keep one named object in every active
// namespace. The work is keyed by namespace name, so that a namespace is looked at again both when
// it appears and when its object is changed or deleted behind the controller's back.
package everynamespace

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/idplane/idplane/internal/controller/keyworker"
)

// Config is what one controller brings: its object and how to make it right.
type Config struct {
	// Queue names the work queue; What names the work in error logs.
	Queue, What string
	// Name is the object's name in every namespace; Objects is the informer of its kind.
	Name    string
	Objects cache.SharedInformer
	// Ensure makes the object right in one active namespace, reading the object from the
	// informer's cache; an error retries the namespace with backoff.
	Ensure func(ctx context.Context, namespace string) error
}

// Loop calls Ensure for a namespace, while it is active, whenever the informer lists, adds or
// updates it and whenever its object is added, updated or deleted. Ensure does nothing when the
// object is right, so reacting to every change of it costs a cache read.
type Loop struct {
	name       string
	what       string
	ensure     func(context.Context, string) error
	namespaces corelisters.NamespaceLister
	synced     cache.InformerSynced
	queue      workqueue.TypedRateLimitingInterface[string]
}

// New registers the loop's handlers on the namespace informer and cfg.Objects.
func New(namespaces coreinformers.NamespaceInformer, cfg Config) (*Loop, error) {
	l := &Loop{
		name:       cfg.Name,
		what:       cfg.What,
		ensure:     cfg.Ensure,
		namespaces: namespaces.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: cfg.Queue}),
	}
	nsHandler, err := namespaces.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    l.namespaceChanged,
		UpdateFunc: func(_, obj any) { l.namespaceChanged(obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("watching namespaces: %w", err)
	}
	objHandler, err := cfg.Objects.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    l.objectChanged,
		UpdateFunc: func(_, obj any) { l.objectChanged(obj) },
		DeleteFunc: l.objectChanged,
	})
	if err != nil {
		return nil, fmt.Errorf("watching the objects named %q: %w", cfg.Name, err)
	}
	// The handlers' own HasSynced: the initial namespaces must have been queued, not only listed.
	l.synced = func() bool { return nsHandler.HasSynced() && objHandler.HasSynced() }
	return l, nil
}

func (l *Loop) namespaceChanged(obj any) {
	// Only an active namespace gets the object, and one that is not active never will be again:
	// the updates of a terminating namespace (its finalizers going) need nothing.
	if ns, ok := obj.(*corev1.Namespace); ok && ns.Status.Phase == corev1.NamespaceActive {
		l.queue.Add(ns.Name)
	}
}

func (l *Loop) objectChanged(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	o, ok := obj.(metav1.Object)
	if !ok {
		utilruntime.HandleError(fmt.Errorf("the informer of the objects named %q reported an unexpected %T", l.name, obj))
		return
	}
	if o.GetName() == l.name {
		l.queue.Add(o.GetNamespace())
	}
}

// Run ensures the object until ctx ends.
func (l *Loop) Run(ctx context.Context, workers int) {
	keyworker.Run(ctx, l.queue, l.synced, workers, l.what, l.sync)
}

func (l *Loop) sync(ctx context.Context, namespace string) error {
	ns, err := l.namespaces.Get(namespace)
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
	return l.ensure(ctx, namespace)
}

// NamespaceGone reports NamespaceLifecycle's refusal to create in a namespace that no longer
// exists or is terminating: the cache had not yet seen the namespace go, and its next event, if
// any, says what to do. Its other refusals (e.g. not ready yet) are worth retrying.
func NamespaceGone(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
}
