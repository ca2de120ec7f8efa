// Package keyworker runs a controller's workers over its queue of object keys: each key is synced
// once at a time, retried with the queue's backoff when the sync fails, and forgotten when it
// succeeds.
package keyworker

import (
	"context"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// Run waits for synced, then runs workers calling sync for each queued key until ctx ends, and
// shuts the queue down. what names the work in error logs.
func Run(ctx context.Context, queue workqueue.TypedRateLimitingInterface[string], synced cache.InformerSynced, workers int,
	what string, sync func(context.Context, string) error) {
	defer utilruntime.HandleCrash()
	defer queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), synced) {
		return
	}
	work := func(ctx context.Context) {
		for {
			key, quit := queue.Get()
			if quit {
				return
			}
			if err := sync(ctx, key); err != nil {
				// A sync cut short by the stop is no failure worth logging; the queue is closing.
				if ctx.Err() == nil {
					klog.ErrorS(err, what, "key", key)
				}
				queue.AddRateLimited(key)
			} else {
				queue.Forget(key)
			}
			queue.Done(key)
		}
	}
	for range workers {
		go wait.UntilWithContext(ctx, work, time.Second)
	}
	<-ctx.Done()
}
