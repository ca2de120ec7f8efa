// Package keyworker runs a controller's workers over its queue of object keys: each key is synced
// once at a time, retried with the queue's backoff when the sync fails, and forgotten when it
// succeeds.
package keyworker

import (
	"context"
	"errors"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// Run waits for synced, then runs workers calling sync for each queued key until ctx ends, and
// shuts the queue down. what names the work in logs.
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
				logRetry(ctx, what, key, err)
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

// Wait marks err as a state the sync waits out rather than a failure: objects a namespace still
// holds, a write that lost to a concurrent one the cache has not seen yet. The key is retried
// with the queue's backoff all the same; only the log differs.
func Wait(err error) error { return waitError{err} }

type waitError struct{ error }

func (e waitError) Unwrap() error { return e.error }

// logRetry says why key goes back to the queue: a failure as an error, a wait at verbosity 4,
// and a sync cut short by the stop not at all, since the queue is closing.
func logRetry(ctx context.Context, what, key string, err error) {
	logger := klog.FromContext(ctx)
	switch {
	case ctx.Err() != nil:
	case errors.As(err, new(waitError)):
		logger.V(4).Info(what+": waiting", "key", key, "reason", err)
	default:
		logger.Error(err, what, "key", key)
	}
}
