// Package tokencleaner deletes bootstrap token secrets (type bootstrap.kubernetes.io/token in
// kube-system) once they expire, and looks again at those not yet expired when they do. It also
// deletes single-use tokens once they have served (singleuse.go).
package tokencleaner

import (
	"context"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certinformers "k8s.io/client-go/informers/certificates/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	bootstrapsecret "k8s.io/cluster-bootstrap/util/secrets"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/idplane/idplane/internal/controller/keyworker"
)

// Cleaner deletes expired and used-up bootstrap token secrets.
type Cleaner struct {
	client kubernetes.Interface
	lister corelisters.SecretNamespaceLister
	// csrs are indexed by issuedByTokenIndex.
	csrs   cache.Indexer
	synced []cache.InformerSynced
	clock  clock.PassiveClock
	queue  workqueue.TypedRateLimitingInterface[string]
}

// New returns the cleaner over the shared secrets and CSR informers. clk tells the time and
// paces the looks at secrets that expire later.
func New(client kubernetes.Interface, secrets coreinformers.SecretInformer, csrs certinformers.CertificateSigningRequestInformer, clk clock.WithTicker) (*Cleaner, error) {
	if err := csrs.Informer().AddIndexers(cache.Indexers{issuedByTokenIndex: indexIssuedByToken}); err != nil {
		return nil, fmt.Errorf("indexing certificatesigningrequests: %w", err)
	}
	c := &Cleaner{
		client: client,
		lister: secrets.Lister().Secrets(metav1.NamespaceSystem),
		csrs:   csrs.Informer().GetIndexer(),
		synced: []cache.InformerSynced{secrets.Informer().HasSynced, csrs.Informer().HasSynced},
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
	// A certificate issued with a token may use it up.
	issued := func(obj any) {
		if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok {
			if id := issuedTokenID(csr); id != "" {
				c.queue.Add(bootstraputil.BootstrapTokenSecretName(id))
			}
		}
	}
	_, err = csrs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    issued,
		UpdateFunc: func(_, obj any) { issued(obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("watching certificatesigningrequests: %w", err)
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
	synced := func() bool {
		for _, s := range c.synced {
			if !s() {
				return false
			}
		}
		return true
	}
	keyworker.Run(ctx, c.queue, synced, workers, "Cleaning bootstrap token secret", c.sync)
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
	now := c.clock.Now()
	remaining, expired := bootstrapsecret.GetExpiration(secret, now)
	why := "expired"
	if !expired {
		grace, used, err := c.usedUp(secret, now)
		if err != nil {
			return err
		}
		if !used || grace > 0 {
			// Look again at whichever comes first, the expiration or the end of the grace.
			if used && (remaining <= 0 || grace < remaining) {
				remaining = grace
			}
			if remaining > 0 {
				c.queue.AddAfter(name, remaining)
			}
			return nil
		}
		why = "used"
	}
	// The UID precondition keeps a secret recreated under the same name since the cache saw
	// this one from being deleted in its place.
	err = c.client.CoreV1().Secrets(metav1.NamespaceSystem).Delete(ctx, name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &secret.UID},
	})
	switch {
	case err == nil:
		klog.V(2).InfoS("Deleted bootstrap token", "secret", klog.KObj(secret), "reason", why)
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
	default:
		return fmt.Errorf("deleting %s bootstrap token secret %q: %w", why, name, err)
	}
	return nil
}
