// Package rootcacertpublisher publishes, in every active namespace, the ConfigMap kube-root-ca.crt
// holding the CA that verifies the API server, so that workloads (and projected service-account
// token volumes) can trust the server without being handed the CA out of band.
package rootcacertpublisher

import (
	"context"
	"fmt"
	"maps"

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

// The names and the description are Kubernetes': clients look for them.
const (
	ConfigMapName         = "kube-root-ca.crt"
	DataKey               = "ca.crt"
	DescriptionAnnotation = "kubernetes.io/description"
	Description           = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
		"No other usage is guaranteed across distributions of Kubernetes clusters."
)

// Publisher keeps kube-root-ca.crt present and current in every active namespace.
type Publisher struct {
	client     kubernetes.Interface
	caPEM      string
	namespaces corelisters.NamespaceLister
	configMaps corelisters.ConfigMapLister
	synced     cache.InformerSynced
	queue      workqueue.TypedRateLimitingInterface[string]
}

// New returns a publisher of caPEM keyed by namespace name: a namespace added or updated to
// active is checked, and so is one whose kube-root-ca.crt was created, changed or deleted.
func New(client kubernetes.Interface, namespaces coreinformers.NamespaceInformer, configMaps coreinformers.ConfigMapInformer, caPEM []byte) (*Publisher, error) {
	p := &Publisher{
		client:     client,
		caPEM:      string(caPEM),
		namespaces: namespaces.Lister(),
		configMaps: configMaps.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "root_ca_cert_publisher"}),
	}
	nsHandler, err := namespaces.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: p.namespaceChanged,
		UpdateFunc: func(_, obj any) {
			// Updates of a terminating namespace (its finalizers going) need nothing published.
			if ns, ok := obj.(*corev1.Namespace); ok && ns.Status.Phase == corev1.NamespaceActive {
				p.namespaceChanged(obj)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("watching namespaces: %w", err)
	}
	cmHandler, err := configMaps.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    p.configMapChanged,
		UpdateFunc: func(_, obj any) { p.configMapChanged(obj) },
		DeleteFunc: p.configMapChanged,
	})
	if err != nil {
		return nil, fmt.Errorf("watching configmaps: %w", err)
	}
	p.synced = func() bool { return nsHandler.HasSynced() && cmHandler.HasSynced() }
	return p, nil
}

func (p *Publisher) namespaceChanged(obj any) {
	if ns, ok := obj.(*corev1.Namespace); ok {
		p.queue.Add(ns.Name)
	}
}

func (p *Publisher) configMapChanged(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		utilruntime.HandleError(fmt.Errorf("configmap informer reported an unexpected %T", obj))
		return
	}
	if cm.Name == ConfigMapName {
		p.queue.Add(cm.Namespace)
	}
}

// Run publishes until ctx ends.
func (p *Publisher) Run(ctx context.Context, workers int) {
	keyworker.Run(ctx, p.queue, p.synced, workers, "Publishing the root CA configmap", p.sync)
}

func (p *Publisher) sync(ctx context.Context, namespace string) error {
	ns, err := p.namespaces.Get(namespace)
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
	want := map[string]string{DataKey: p.caPEM}
	cm, err := p.configMaps.ConfigMaps(namespace).Get(ConfigMapName)
	if apierrors.IsNotFound(err) {
		_, err = p.client.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name: ConfigMapName, Namespace: namespace,
				Annotations: map[string]string{DescriptionAnnotation: Description},
			},
			Data: want,
		}, metav1.CreateOptions{})
		switch {
		case err == nil:
			return nil
		case apierrors.IsAlreadyExists(err):
			// The cache is behind; the configmap's add event brings the namespace back to compare
			// the contents.
			return nil
		case namespaceGone(err):
			// The cache had not yet seen the namespace go; its next event, if any, says what to do.
			return nil
		default:
			return fmt.Errorf("creating configmap %s/%s: %w", namespace, ConfigMapName, err)
		}
	}
	if err != nil {
		return fmt.Errorf("reading configmap %s/%s from the cache: %w", namespace, ConfigMapName, err)
	}
	// As upstream: the data must be exactly the CA and some description must be there. A restore
	// rewrites both and keeps every other label and annotation.
	if maps.Equal(cm.Data, want) && cm.Annotations[DescriptionAnnotation] != "" {
		return nil
	}
	cm = cm.DeepCopy()
	cm.Data = want
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[DescriptionAnnotation] = Description
	if _, err := p.client.CoreV1().ConfigMaps(namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("restoring configmap %s/%s: %w", namespace, ConfigMapName, err)
	}
	return nil
}

// namespaceGone reports NamespaceLifecycle's refusal to create in a namespace that no longer
// exists or is terminating. Its other refusals (e.g. not ready yet) are worth retrying.
func namespaceGone(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
}
