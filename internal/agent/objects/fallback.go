package objects

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	nodev1alpha1 "github.com/idplane/idplane/api/node/v1alpha1"
)

// A server can list nodereadables in discovery and still refuse the node's list or watch of
// them: an older idplane, a server behind a proxy that routes the group elsewhere, or a policy
// that denies it. The bulk informer would retry such a refusal for ever while no pod could read
// its secrets, so the cache moves, once and for good, to one watch per object: the reads a stock
// kubelet makes, which the Node authorizer judges object by object. Nothing is read beyond what
// that mode reads.

// refusesBulkWatch says whether err is the server refusing the node's nodereadables for good
// (403, 404, 405), as against failing for the moment (timeouts, 429, 5xx, a lost connection),
// which the informer retries.
func refusesBulkWatch(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err)
}

// bulkWatchError is the bulk informer's watch error handler: a refusal moves the cache to
// per-object watches; anything else is client-go's default handling.
func (c *Cache) bulkWatchError(ctx context.Context, r *cache.Reflector, err error) {
	if !refusesBulkWatch(err) {
		cache.DefaultWatchErrorHandler(ctx, r, err)
		return
	}
	c.fallBack(ctx, err)
}

// fallBack stops the bulk watch and starts a watch of each object some pod uses, then tells
// every pod to read its objects again, now from those watches.
func (c *Cache) fallBack(ctx context.Context, cause error) {
	c.mu.Lock()
	if c.readables == nil {
		c.mu.Unlock()
		return
	}
	c.readables = nil
	c.stopReadables()
	users := sets.New[string]()
	for r, us := range c.users {
		c.startWatchLocked(r)
		users = users.Union(us)
	}
	c.mu.Unlock()
	klog.FromContext(ctx).Info("Watching each secret and configmap on its own: the server refused the node's "+nodev1alpha1.ResourceName, "err", cause)
	if users.Len() > 0 {
		c.changed(users.UnsortedList())
	}
}

// fellBack says whether the cache gave up its bulk watch.
func (c *Cache) fellBack() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readables == nil
}

// waitBulkSynced waits, as waitSynced does, for the bulk informer's first list, and gives up
// early if the cache falls back meanwhile.
func (c *Cache) waitBulkSynced(ctx context.Context, bulk cache.SharedIndexInformer) bool {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(c.readablesCtx, cancel)()
	return c.waitSynced(ctx, bulk)
}
