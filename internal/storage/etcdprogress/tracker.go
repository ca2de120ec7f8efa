// Package etcdprogress tells how far the store has gone for chosen key prefixes: the revision of
// the last write under each prefix as of the store's current revision. It watches the prefixes
// itself and asks etcd for progress notifications, so a prefix nobody writes to is known to be
// complete at once instead of looking stale until its next write.
package etcdprogress

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/klog/v2"
)

const progressRetry = 20 * time.Millisecond

// Tracker follows writes under named key prefixes.
type Tracker struct {
	client *clientv3.Client
	// watchCtx carries the watches' stream; progress requests must use the same stream.
	watchCtx context.Context

	mu      sync.Mutex
	changed chan struct{} // closed and replaced whenever lastWrite or progress moves
	// lastWrite is, per name, the revision of the latest write (put or delete) seen under it.
	lastWrite map[string]int64
	// progress is, per name, the revision up to which its watch has delivered everything.
	progress map[string]int64
	err      error
}

// Start watches each prefix from the revision after startRev until ctx ends. Writes at or before
// startRev are the caller's to account for (typically: its informers listed after startRev).
func Start(ctx context.Context, client *clientv3.Client, prefixes map[string]string, startRev int64) *Tracker {
	t := &Tracker{
		client:    client,
		watchCtx:  ctx,
		changed:   make(chan struct{}),
		lastWrite: map[string]int64{},
		progress:  map[string]int64{},
	}
	for name, prefix := range prefixes {
		t.progress[name] = startRev
		w := client.Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(startRev+1), clientv3.WithProgressNotify())
		go t.follow(name, w)
	}
	return t
}

// CurrentRevision reads the store's current revision.
func CurrentRevision(ctx context.Context, client *clientv3.Client) (int64, error) {
	resp, err := client.Get(ctx, "/", clientv3.WithCountOnly(), clientv3.WithLimit(1))
	if err != nil {
		return 0, fmt.Errorf("reading the etcd revision: %w", err)
	}
	return resp.Header.Revision, nil
}

func (t *Tracker) follow(name string, w clientv3.WatchChan) {
	for resp := range w {
		if err := resp.Err(); err != nil {
			t.fail(fmt.Errorf("watching %s: %w", name, err))
			return
		}
		t.mu.Lock()
		for _, ev := range resp.Events {
			t.lastWrite[name] = max(t.lastWrite[name], ev.Kv.ModRevision)
			t.progress[name] = max(t.progress[name], ev.Kv.ModRevision)
		}
		// Only a progress notification vouches that nothing is pending up to its revision; the
		// header of an event response may be ahead of events still to come while the watch catches up.
		if resp.IsProgressNotify() {
			t.progress[name] = max(t.progress[name], resp.Header.Revision)
		}
		t.broadcastLocked()
		t.mu.Unlock()
	}
	if t.watchCtx.Err() == nil {
		t.fail(fmt.Errorf("watch of %s closed", name))
	}
}

func (t *Tracker) fail(err error) {
	klog.ErrorS(err, "Store progress tracking stopped")
	t.mu.Lock()
	t.err = err
	t.broadcastLocked()
	t.mu.Unlock()
}

func (t *Tracker) broadcastLocked() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// LatestRevisions reads the store's current revision R, asks etcd to report the watches' progress,
// waits until every watch has delivered everything up to R, and returns the revision of the last
// write under each prefix (0 for none since the start). Callers that wait for their own watches
// to reach these revisions have then seen every write made before the call.
func (t *Tracker) LatestRevisions(ctx context.Context) (map[string]int64, error) {
	current, err := CurrentRevision(ctx, t.client)
	if err != nil {
		return nil, err
	}
	if err := t.client.RequestProgress(t.watchCtx); err != nil {
		return nil, fmt.Errorf("requesting watch progress: %w", err)
	}
	retry := time.NewTicker(progressRetry)
	defer retry.Stop()
	for {
		t.mu.Lock()
		if t.err != nil {
			err := t.err
			t.mu.Unlock()
			return nil, err
		}
		caughtUp := true
		for _, p := range t.progress {
			caughtUp = caughtUp && p >= current
		}
		if caughtUp {
			out := maps.Clone(t.lastWrite)
			t.mu.Unlock()
			return out, nil
		}
		changed := t.changed
		t.mu.Unlock()
		select {
		case <-changed:
		case <-retry.C:
			// etcd answers a progress request only when all of the stream's watches are in sync;
			// one that was busy catching up gets asked again.
			if err := t.client.RequestProgress(t.watchCtx); err != nil {
				return nil, fmt.Errorf("requesting watch progress: %w", err)
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
