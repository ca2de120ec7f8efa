// Package tokencleaner deletes bootstrap token secrets (type bootstrap.kubernetes.io/token in
// kube-system) once they expire, and looks again at those not yet expired when they do.
package tokencleaner

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstrapsecret "k8s.io/cluster-bootstrap/util/secrets"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/idplane/idplane/internal/controller/keyworker"
)

// Cleaner deletes expired bootstrap token secrets.
type Cleaner struct {
	client kubernetes.Interface
	lister corelisters.SecretNamespaceLister
	synced cache.InformerSynced
	clock  clock.PassiveClock
	queue  workqueue.TypedRateLimitingInterface[string]
}

// New returns the cleaner over the shared secrets informer. clk tells the time and paces the
// looks at secrets that expire later.
func New(client kubernetes.Interface, secrets coreinformers.SecretInformer, clk clock.WithTicker) (*Cleaner, error) {
	c := &Cleaner{
		client: client,
		lister: secrets.Lister().Secrets(metav1.NamespaceSystem),
		synced: secrets.Informer().HasSynced,
		clock:  clk,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 30*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "tokencleaner", Clock: clk}),
	}
	enqueue := func(obj any) {
		if s, ok := obj.(*corev1.Secret); ok && isBootstrapToken(s) {
			c.queue.Add(s.Name)
		}
	}
	_, err := secrets.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("watching secrets: %w", err)
	}
	return c, nil
}

// isBootstrapToken says whether the cleaner looks after the secret; as upstream, its type and
// namespace decide, not its name.
func isBootstrapToken(s *corev1.Secret) bool {
	return s.Namespace == metav1.NamespaceSystem && s.Type == bootstrapapi.SecretTypeBootstrapToken
}

// Run cleans until ctx ends.
func (c *Cleaner) Run(ctx context.Context, workers int) {
	keyworker.Run(ctx, c.queue, c.synced, workers, "Cleaning bootstrap token secret", c.sync)
}

func (c *Cleaner) sync(ctx context.Context, name string) error {
	secret, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !isBootstrapToken(secret) || secret.DeletionTimestamp != nil {
		return nil
	}
	remaining, expired := bootstrapsecret.GetExpiration(secret, c.clock.Now())
	if !expired {
		if remaining > 0 {
			c.queue.AddAfter(name, remaining)
		}
		return nil
	}
	// The UID precondition keeps a secret recreated under the same name since the cache saw
	// this one from being deleted in its place.
	err = c.client.CoreV1().Secrets(metav1.NamespaceSystem).Delete(ctx, name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &secret.UID},
	})
	switch {
	case err == nil:
		klog.V(2).InfoS("Deleted expired bootstrap token", "secret", klog.KObj(secret))
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
	default:
		return fmt.Errorf("deleting expired bootstrap token secret %q: %w", name, err)
	}
	return nil
}
