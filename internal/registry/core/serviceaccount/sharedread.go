package serviceaccount

import (
	"context"
	"sync"
	"time"
)

// sharedReads lets concurrent TokenRequests for one service account share a live read of it.
// A request never uses a read that was already running when it arrived: that read may have seen
// the store before the account was deleted or replaced. It waits for the next read, which starts
// when the running one ends and serves every request that arrived meanwhile. So each request's
// answer comes from a read that started after the request did, as if it had read alone, and a
// burst of requests for one account costs at most two reads at a time instead of one each.
type sharedReads[K comparable, T any] struct {
	// read reads key from the store. Its context is none of the waiting requests' (any of them
	// may go away), only bounded by timeout.
	read    func(ctx context.Context, key K) (T, error)
	timeout time.Duration

	mu    sync.Mutex
	byKey map[K]*readQueue[T]
}

// readQueue is the read running for one key and the one queued behind it.
type readQueue[T any] struct {
	running, next *sharedRead[T]
}

type sharedRead[T any] struct {
	done chan struct{}
	val  T
	err  error
}

func newSharedReads[K comparable, T any](read func(context.Context, K) (T, error), timeout time.Duration) *sharedReads[K, T] {
	return &sharedReads[K, T]{read: read, timeout: timeout, byKey: map[K]*readQueue[T]{}}
}

// get returns key as a read started after this call read it. The value is shared with other
// callers and must not be modified. A call that finds no read running performs one itself, on its
// own goroutine; the others wait.
func (s *sharedReads[K, T]) get(ctx context.Context, key K) (T, error) {
	r, lead := s.join(key)
	if lead {
		s.perform(key, r)
		return r.val, r.err
	}
	select {
	case <-r.done:
		return r.val, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// join returns the read a call arriving now may use: a new one, which the caller is to perform
// (lead), if none runs for key, else the one queued behind the running read.
func (s *sharedReads[K, T]) join(key K) (r *sharedRead[T], lead bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.byKey[key]
	if q == nil {
		r := &sharedRead[T]{done: make(chan struct{})}
		s.byKey[key] = &readQueue[T]{running: r}
		return r, true
	}
	if q.next == nil {
		q.next = &sharedRead[T]{done: make(chan struct{})}
	}
	return q.next, false
}

// perform runs r, the running read of key, then starts the read queued meanwhile, if any, on a
// goroutine of its own: its callers are waiting, the caller of r need not.
func (s *sharedReads[K, T]) perform(key K, r *sharedRead[T]) {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	r.val, r.err = s.read(ctx, key)
	cancel()
	close(r.done)
	s.mu.Lock()
	q := s.byKey[key]
	next := q.next
	q.running, q.next = next, nil
	if next == nil {
		delete(s.byKey, key)
	}
	s.mu.Unlock()
	if next != nil {
		go s.perform(key, next)
	}
}
