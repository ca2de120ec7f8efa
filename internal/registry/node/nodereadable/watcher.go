package nodereadable

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"

	nodev1alpha1 "github.com/idplane/idplane/api/node/v1alpha1"
)

// maxBacklog is how many events a watcher may have queued beyond its initial ones before it is
// closed; its client resumes from the last event it read, which the log replays.
const maxBacklog = 1024

// watcher is one open watch of a node's stream. The Hub queues its events under the Hub's lock;
// one goroutine reads each event's object, hands it to the client, and sends bookmarks when the
// client allows them.
type watcher struct {
	hub             *Hub
	node, namespace string
	bookmarks       bool
	interval        time.Duration
	clock           clock.WithTicker

	result chan watch.Event
	wake   chan struct{}
	// ctx ends with the watch: Stop cancels it, and it bounds the reads of the events' objects.
	ctx    context.Context
	cancel context.CancelFunc

	mu         sync.Mutex
	queue      []logEntry
	limit      int
	overflowed bool
}

var _ watch.Interface = (*watcher)(nil)

func (w *watcher) ResultChan() <-chan watch.Event { return w.result }

// Stop ends the watch; the result channel closes.
func (w *watcher) Stop() {
	w.cancel()
	w.hub.mu.Lock()
	remove(w.hub.watchers, w.node, w)
	w.hub.mu.Unlock()
}

// enqueueLocked queues e; the Hub's lock is held. A watcher whose client does not keep up is
// dropped from the Hub and ends.
func (w *watcher) enqueueLocked(e logEntry) {
	w.mu.Lock()
	if len(w.queue) >= w.limit {
		w.overflowed = true
		w.mu.Unlock()
		remove(w.hub.watchers, w.node, w)
	} else {
		w.queue = append(w.queue, e)
		w.mu.Unlock()
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// next takes the next queued event; more is false when none is queued.
func (w *watcher) next() (e logEntry, more, overflowed bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) == 0 {
		w.queue = nil
		return logEntry{}, false, w.overflowed
	}
	e = w.queue[0]
	w.queue[0] = logEntry{}
	w.queue = w.queue[1:]
	return e, true, w.overflowed
}

// run delivers the queue. A read of an event's object that fails ends the watch: its client
// resumes from the last event it got, and the log replays the rest.
func (w *watcher) run() {
	defer close(w.result)
	defer w.cancel()
	var tick <-chan time.Time
	if w.bookmarks {
		t := w.clock.NewTicker(w.interval)
		defer t.Stop()
		tick = t.C()
	}
	for {
		e, more, overflowed := w.next()
		if overflowed {
			return
		}
		if more {
			ev, ok, err := w.hub.event(w.ctx, e)
			if err != nil {
				utilruntime.HandleError(fmt.Errorf("nodereadables: ending a watch of node %q: %w", w.node, err))
				return
			}
			if !ok {
				continue
			}
			select {
			case w.result <- ev:
			case <-w.ctx.Done():
				return
			}
			continue
		}
		select {
		case <-w.wake:
		case <-w.ctx.Done():
			return
		case <-tick:
			if b, ok := w.bookmark(); ok {
				select {
				case w.result <- b:
				case <-w.ctx.Done():
					return
				}
			}
		}
	}
}

// bookmark is a BOOKMARK at the Hub's current position, when nothing for this watcher is queued:
// every event of its stream up to that position has then been delivered.
func (w *watcher) bookmark() (watch.Event, bool) {
	w.hub.mu.Lock()
	defer w.hub.mu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) > 0 {
		return watch.Event{}, false
	}
	return watch.Event{Type: watch.Bookmark, Object: bookmark(w.hub.position(w.hub.seq), false)}, true
}

func bookmark(position string, initialEventsEnd bool) *nodev1alpha1.NodeReadable {
	it := &nodev1alpha1.NodeReadable{ObjectMeta: metav1.ObjectMeta{ResourceVersion: position}}
	if initialEventsEnd {
		it.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	}
	return it
}
