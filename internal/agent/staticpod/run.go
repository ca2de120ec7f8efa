package staticpod

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"k8s.io/apimachinery/pkg/util/wait"
)

const (
	// DefaultResync is how often Run syncs when nothing changed. The directory is watched, so the
	// resync only catches what a watch cannot see (a symlink's target changing, a mirror pod
	// deleted by someone else); each sync costs one list of the node's own pods.
	DefaultResync = 5 * time.Minute
	// defaultSettle lets a burst of writes to the directory end before it is read.
	defaultSettle = 200 * time.Millisecond
	// firstRetry is the wait after a failed sync; it doubles on each failure, up to the resync.
	firstRetry = time.Second
)

// Run calls Sync at start, whenever the directory changes and every resync period (DefaultResync
// when resync is not positive) until ctx ends. A failed sync is logged and retried with backoff.
// When the directory cannot be watched (it does not exist yet, or the system is out of watches)
// Run keeps to the resync and retries, and watches the directory once it can.
func (s *Syncer) Run(ctx context.Context, resync time.Duration) {
	if resync <= 0 {
		resync = DefaultResync
	}
	w := s.newWatch()
	defer w.close()
	backoff := wait.Backoff{Duration: firstRetry, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: resync}
	retry := backoff
	for {
		w.ensure()
		next := resync
		if err := s.Sync(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			next = retry.Step()
			s.log.Error(err, "Syncing static pods failed", "retryIn", next)
		} else {
			retry = backoff
		}
		if !s.waitForChange(ctx, w, next) {
			return
		}
	}
}

// waitForChange waits until the directory changes (and then settles), the wait d is over, or ctx
// ends; it reports whether to sync again.
func (s *Syncer) waitForChange(ctx context.Context, w *dirWatch, d time.Duration) bool {
	timer := s.clock.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C():
		return true
	case <-w.changed():
	}
	if s.settle <= 0 {
		return true
	}
	settle := s.clock.NewTimer(s.settle)
	defer settle.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-settle.C():
			return true
		case <-w.changed():
		}
	}
}

// dirWatch watches the manifest directory. Its zero parts stand for no watch: changes are then
// only seen at the next resync.
type dirWatch struct {
	s        *Syncer
	dir      string
	watcher  *fsnotify.Watcher
	watching atomic.Bool
	// failed is the last reason the directory could not be watched, logged once.
	failed string
	// signal carries one change at a time from the watcher's events.
	signal chan struct{}
	done   chan struct{}
}

func (s *Syncer) newWatch() *dirWatch {
	w := &dirWatch{s: s, dir: filepath.Clean(s.cfg.Dir), signal: make(chan struct{}, 1), done: make(chan struct{})}
	watcher, err := fsnotify.NewWatcher()
	if err != nil {
		s.log.Error(err, "Cannot watch the pod manifest directory; changes are seen at each resync", "dir", s.cfg.Dir)
		return w
	}
	w.watcher = watcher
	go w.forward()
	return w
}

// ensure starts watching the directory if it is not watched yet.
func (w *dirWatch) ensure() {
	if w.watcher == nil || w.watching.Load() {
		return
	}
	if err := w.watcher.Add(w.dir); err != nil {
		if msg := err.Error(); msg != w.failed {
			w.failed = msg
			w.s.log.Error(err, "Cannot watch the pod manifest directory yet; changes are seen at each resync", "dir", w.dir)
		}
		return
	}
	w.watching.Store(true)
	w.failed = ""
}

// forward turns the watcher's events on manifests, and its errors (an overflow loses events),
// into one pending signal. The directory itself going away ends the watch, which ensure starts
// again once the directory is back.
func (w *dirWatch) forward() {
	for {
		select {
		case <-w.done:
			return
		case ev, ok := <-w.watcher.Events:
			if !ok {
				return
			}
			if filepath.Clean(ev.Name) == w.dir {
				if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
					w.lost()
				}
			} else if !affectsManifests(filepath.Base(ev.Name)) {
				continue
			}
			w.notify()
		case err, ok := <-w.watcher.Errors:
			if !ok {
				return
			}
			if !errors.Is(err, fsnotify.ErrEventOverflow) {
				w.s.log.Error(err, "Watching the pod manifest directory", "dir", w.dir)
			}
			w.notify()
		}
	}
}

// lost forgets a watch whose directory was removed or moved away. Removing the watch of a
// directory that was moved keeps it from following the directory elsewhere.
func (w *dirWatch) lost() {
	_ = w.watcher.Remove(w.dir)
	w.watching.Store(false)
}

// affectsManifests reports whether a change to the named entry may change what Load reads: a
// manifest, or the "..data" link through which files written atomically (as Kubernetes writes
// projected volumes) point at their current version. Other hidden files, such as editors' swap
// files, change often and are never read.
func affectsManifests(name string) bool {
	return isManifestName(name) || strings.HasPrefix(name, "..")
}

func (w *dirWatch) notify() {
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

func (w *dirWatch) changed() <-chan struct{} {
	if w.watcher == nil {
		return nil
	}
	return w.signal
}

func (w *dirWatch) close() {
	if w.watcher == nil {
		return
	}
	close(w.done)
	_ = w.watcher.Close()
}
