// Package etcdprogress tells, for chosen key prefixes, the highest modification revision among the
// keys that exist under each prefix now. A reader that has applied everything up to that revision
// has seen the last write of every existing object; deletes do not count, since a reader that
// missed one (an informer that saw it only through a relist, say) is never told its revision.
//
// The tracker lists each prefix (keys only) and then watches it, asking etcd for progress
// notifications, so a prefix nobody writes to is known to be complete at once instead of looking
// stale until its next write. A watch that fails is restarted, after a backoff, by listing again;
// while it is down the tracker answers at once that it cannot tell.
package etcdprogress

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
)

const progressRetry = 20 * time.Millisecond

// ErrUnavailable is returned while a prefix's watch is down and being restarted.
var ErrUnavailable = errors.New("store progress tracking is restarting")

// Store is what the tracker needs of etcd: the client, or a wrapper in tests.
type Store interface {
	Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error)
	Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan
	RequestProgress(ctx context.Context) error
}

// restartBackoff spaces the restarts of a failed watch; a successful listing resets it.
func restartBackoff() wait.Backoff {
	return wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 8, Cap: 10 * time.Second}
}

// Tracker follows the existing keys under named prefixes.
type Tracker struct {
	store Store
	// backoff is each follower's first restart delay and its growth; read only.
	backoff wait.Backoff
	// watchCtx carries the watches' stream; progress requests must use the same stream.
	watchCtx context.Context

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced whenever a prefix's state moves
	prefixes map[string]*prefixState
}

// prefixState is one prefix's existing keys. Guarded by Tracker.mu.
type prefixState struct {
	// up is false until the first listing and while the watch is being restarted.
	up bool
	// progress is the revision up to which the watch has delivered everything.
	progress int64
	// revs holds each existing key's modification revision.
	revs map[string]int64
	// writes lists (revision, key) in increasing revision order, one entry per put; entries
	// whose key was written again or deleted since are stale and skipped. So the highest
	// existing revision is found from the end, and dropping stale entries there keeps that cheap.
	writes []write
}

type write struct {
	rev int64
	key string
}

// Start lists and watches each prefix until ctx ends. LatestRevisions answers once the prefixes
// are listed; until then it reports ErrUnavailable.
func Start(ctx context.Context, store Store, prefixes map[string]string) *Tracker {
	return start(ctx, store, prefixes, restartBackoff())
}

func start(ctx context.Context, store Store, prefixes map[string]string, backoff wait.Backoff) *Tracker {
	t := &Tracker{store: store, backoff: backoff, watchCtx: ctx, changed: make(chan struct{}), prefixes: map[string]*prefixState{}}
	// Every prefix has its state before any follower runs: a follower replaces its entry under
	// mu, which filling the map here does not hold.
	for name := range prefixes {
		t.prefixes[name] = &prefixState{}
	}
	for name, prefix := range prefixes {
		go t.follow(name, prefix)
	}
	return t
}

// follow keeps one prefix's state current: list, watch until the watch fails, back off, again.
func (t *Tracker) follow(name, prefix string) {
	backoff := t.backoff
	for t.watchCtx.Err() == nil {
		err := t.listAndWatch(name, prefix, func() { backoff = t.backoff })
		if t.watchCtx.Err() != nil {
			return
		}
		t.down(name, err)
		select {
		case <-time.After(backoff.Step()):
		case <-t.watchCtx.Done():
			return
		}
	}
}

// listAndWatch lists the prefix, publishes its state, then applies its watch until the watch
// fails. listed is called once the listing succeeded.
func (t *Tracker) listAndWatch(name, prefix string, listed func()) error {
	resp, err := t.store.Get(t.watchCtx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return fmt.Errorf("listing %s: %w", name, err)
	}
	listed()
	st := &prefixState{up: true, progress: resp.Header.Revision, revs: make(map[string]int64, len(resp.Kvs))}
	for _, kv := range resp.Kvs {
		key := string(kv.Key)
		st.revs[key] = kv.ModRevision
		st.writes = append(st.writes, write{kv.ModRevision, key})
	}
	slices.SortFunc(st.writes, func(a, b write) int { return cmp.Compare(a.rev, b.rev) })
	t.mu.Lock()
	t.prefixes[name] = st
	t.broadcastLocked()
	t.mu.Unlock()

	w := t.store.Watch(t.watchCtx, prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1), clientv3.WithProgressNotify())
	for resp := range w {
		if err := resp.Err(); err != nil {
			return fmt.Errorf("watching %s: %w", name, err)
		}
		t.mu.Lock()
		for _, ev := range resp.Events {
			st.apply(ev)
		}
		// Only a progress notification vouches that nothing is pending up to its revision; the
		// header of an event response may be ahead of events still to come while the watch catches up.
		if resp.IsProgressNotify() {
			st.progress = max(st.progress, resp.Header.Revision)
		}
		st.compactLocked()
		t.broadcastLocked()
		t.mu.Unlock()
	}
	return fmt.Errorf("watch of %s closed", name)
}

func (st *prefixState) apply(ev *clientv3.Event) {
	key := string(ev.Kv.Key)
	st.progress = max(st.progress, ev.Kv.ModRevision)
	if ev.Type == clientv3.EventTypeDelete {
		delete(st.revs, key)
		return
	}
	st.revs[key] = ev.Kv.ModRevision
	st.writes = append(st.writes, write{ev.Kv.ModRevision, key})
}

// latest is the highest revision among existing keys, 0 when there are none.
func (st *prefixState) latest() int64 {
	for n := len(st.writes); n > 0; n-- {
		w := st.writes[n-1]
		if st.revs[w.key] == w.rev {
			st.writes = st.writes[:n]
			return w.rev
		}
	}
	st.writes = st.writes[:0]
	return 0
}

// compactLocked drops stale entries once they outnumber the live ones, so memory follows the
// number of existing keys, not the number of writes.
func (st *prefixState) compactLocked() {
	if len(st.writes) <= 2*len(st.revs)+1024 {
		return
	}
	st.writes = slices.DeleteFunc(st.writes, func(w write) bool { return st.revs[w.key] != w.rev })
}

// down marks a prefix's watch as failed; LatestRevisions answers ErrUnavailable until it is back.
func (t *Tracker) down(name string, err error) {
	t.mu.Lock()
	wasUp := t.prefixes[name].up
	t.prefixes[name] = &prefixState{}
	t.broadcastLocked()
	t.mu.Unlock()
	if wasUp {
		klog.ErrorS(err, "Store progress tracking interrupted; restarting", "prefix", name)
	} else {
		klog.V(2).InfoS("Store progress tracking still down", "prefix", name, "err", err)
	}
}

func (t *Tracker) broadcastLocked() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// LatestRevisions reads the store's current revision R, asks etcd to report the watches' progress,
// waits until every watch has delivered everything up to R, and returns the highest revision among
// the existing keys of each prefix (0 for none). Callers that wait for their own watches to reach
// these revisions have then seen the last write of every object that exists. While a prefix's
// watch is down it returns ErrUnavailable at once, without waiting.
func (t *Tracker) LatestRevisions(ctx context.Context) (map[string]int64, error) {
	resp, err := t.store.Get(ctx, "/", clientv3.WithCountOnly(), clientv3.WithLimit(1))
	if err != nil {
		return nil, fmt.Errorf("reading the etcd revision: %w", err)
	}
	current := resp.Header.Revision
	if err := t.store.RequestProgress(t.watchCtx); err != nil {
		return nil, fmt.Errorf("requesting watch progress: %w", err)
	}
	retry := time.NewTicker(progressRetry)
	defer retry.Stop()
	for {
		t.mu.Lock()
		caughtUp := true
		for _, st := range t.prefixes {
			if !st.up {
				t.mu.Unlock()
				return nil, ErrUnavailable
			}
			caughtUp = caughtUp && st.progress >= current
		}
		if caughtUp {
			out := make(map[string]int64, len(t.prefixes))
			for name, st := range t.prefixes {
				out[name] = st.latest()
			}
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
			if err := t.store.RequestProgress(t.watchCtx); err != nil {
				return nil, fmt.Errorf("requesting watch progress: %w", err)
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
