package node

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
)

// RevisionSource reads how far storage is ahead of the graph.
type RevisionSource interface {
	// LatestRevisions returns the store's current revision and, for each resource named in
	// exact ("pods", "persistentvolumes", "volumeattachments"), the highest modification
	// revision among its existing objects (0 for none), or the current revision where that
	// is cheaper to know. Only writes of existing objects can give a node a path; a delete
	// only takes one away. An error says the source cannot tell now, and should come at once
	// rather than late.
	LatestRevisions(ctx context.Context, exact []string) (current int64, latest map[string]int64, err error)
}

// Freshness lets a decision about to fail for lack of a path wait until the graph has
// applied everything storage held when the request arrived, so that a node asking for the
// secret of a pod bound a moment ago is not refused because this server's watch lags.
type Freshness struct {
	src     RevisionSource
	pop     *Populator
	maxWait time.Duration

	// One revision read runs at a time. Waiters arriving while it runs do not join it:
	// it may have read storage before their pod was bound. They share the next read
	// instead, which starts when the running one ends; so a burst of refusals costs at
	// most two reads.
	mu      sync.Mutex
	running *revisionRead
	next    *revisionRead

	// unavailable is set while revision reads fail, so that an outage is logged once.
	unavailable atomic.Bool
}

type revisionRead struct {
	done    chan struct{}
	current int64
	latest  map[string]int64
	err     error
}

// NewFreshness returns the wait on the populator's progress, bounded by maxWait.
func NewFreshness(src RevisionSource, p *Populator, maxWait time.Duration) *Freshness {
	return &Freshness{src: src, pop: p, maxWait: maxWait}
}

// WaitFresh waits until the graph has applied every watched resource up to the revisions
// storage reports now. It returns true if the graph caught up within maxWait, false if
// the time ran out, ctx ended or storage could not be read.
func (f *Freshness) WaitFresh(ctx context.Context) bool {
	start := time.Now()
	r := f.wait(ctx)
	observeWait(r, start)
	return r == waitCaughtUp
}

func (f *Freshness) wait(ctx context.Context) waitResult {
	timer := time.NewTimer(f.maxWait)
	defer timer.Stop()
	read := f.join()
	select {
	case <-read.done:
	case <-timer.C:
		return waitTimeout
	case <-ctx.Done():
		return waitCancelled
	}
	if read.err != nil {
		if f.unavailable.CompareAndSwap(false, true) {
			klog.FromContext(ctx).Info("Node authorizer cannot read the store's progress; refusals are decided from the graph as it is, without waiting", "err", read.err)
		}
		return waitUnavailable
	}
	if f.unavailable.CompareAndSwap(true, false) {
		klog.FromContext(ctx).Info("Node authorizer reads the store's progress again")
	}
	for {
		advanced := f.pop.advanced()
		if f.pop.caughtUp(read.current, read.latest) {
			return waitCaughtUp
		}
		select {
		case <-advanced:
		case <-timer.C:
			return waitTimeout
		case <-ctx.Done():
			return waitCancelled
		}
	}
}

// join returns the read a waiter arriving now may use: a new one started at once if none
// runs, else the one queued behind the running read.
func (f *Freshness) join() *revisionRead {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.running == nil {
		f.running = &revisionRead{done: make(chan struct{})}
		go f.run(f.running)
		return f.running
	}
	if f.next == nil {
		f.next = &revisionRead{done: make(chan struct{})}
	}
	return f.next
}

// run performs read, then each read queued meanwhile, until none is queued. A read is
// bounded by maxWait: no waiter can use a later answer.
func (f *Freshness) run(read *revisionRead) {
	for read != nil {
		ctx, cancel := context.WithTimeout(context.Background(), f.maxWait)
		read.current, read.latest, read.err = f.src.LatestRevisions(ctx, f.pop.smallResources())
		cancel()
		close(read.done)
		f.mu.Lock()
		read, f.next = f.next, nil
		f.running = read
		f.mu.Unlock()
	}
}
