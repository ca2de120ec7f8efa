package main

import (
	"context"
	"fmt"
	mathrand "math/rand/v2"
	"regexp"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// Watch timeouts as client-go's reflector draws them: between 5 and 10 minutes.
const (
	minWatchTimeout = 5 * time.Minute
	watchRetryDelay = time.Second
)

var digits = regexp.MustCompile(`[0-9]+`)

// watchLoop keeps one watch open the way client-go's reflector does with WatchListClient on (the
// default since client-go 1.35, so what the agent's informers do): a watch with
// sendInitialEvents=true streams the current objects and a bookmark marks the end of them; later
// watches resume from the last resource version; an expired version starts over. If the server
// refuses the streaming form, it falls back to a list and a watch, as the reflector does. It
// reports every event to handle and closes synced once the initial state is in. Only the
// simulated node's context ends it; failures are noted and retried.
func watchLoop(ctx context.Context, lw *cache.ListWatch, rec *recorder, synced chan<- struct{}, handle func(watch.Event)) {
	rv := ""
	streaming := true
	initial := true
	markSynced := func() {
		if initial {
			initial = false
			close(synced)
		}
	}
	for ctx.Err() == nil {
		opts := metav1.ListOptions{
			ResourceVersion:     rv,
			AllowWatchBookmarks: true,
			TimeoutSeconds:      ptr.To(int64((minWatchTimeout + time.Duration(mathrand.Int64N(int64(minWatchTimeout)))).Seconds())),
		}
		if rv == "" {
			if !streaming {
				got, err := lw.ListWithContext(ctx, metav1.ListOptions{ResourceVersion: "0"})
				if err != nil {
					if !pause(ctx, watchRetryDelay) {
						return
					}
					continue
				}
				l, err := meta.ListAccessor(got)
				if err != nil {
					rec.noteError(fmt.Errorf("reading a list's resource version: %w", err))
					return
				}
				items, _ := meta.ExtractList(got)
				for _, item := range items {
					handle(watch.Event{Type: watch.Added, Object: item})
				}
				rv = l.GetResourceVersion()
				opts.ResourceVersion = rv
				markSynced()
			} else {
				opts.SendInitialEvents = ptr.To(true)
				opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
			}
		}
		wi, err := lw.WatchWithContext(ctx, opts)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if opts.SendInitialEvents != nil && !apierrors.IsTooManyRequests(err) && !apierrors.IsServerTimeout(err) {
				streaming = false
				continue
			}
			if !pause(ctx, watchRetryDelay) {
				return
			}
			continue
		}
		opened := time.Now()
		rv = consume(ctx, wi, rv, rec, markSynced, handle)
		// A watch the server ends at once is not reopened in a tight loop.
		if time.Since(opened) < watchRetryDelay && !pause(ctx, watchRetryDelay) {
			return
		}
	}
}

// consume reads one watch until it ends and returns the resource version to resume from: the
// last one seen, or "" when the server says it is too old.
func consume(ctx context.Context, wi watch.Interface, rv string, rec *recorder, markSynced func(), handle func(watch.Event)) string {
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return rv
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return rv
			}
			if ev.Type == watch.Error {
				err := apierrors.FromObject(ev.Object)
				if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					return ""
				}
				// Messages name resource versions; without the numbers alike errors group together.
				rec.noteError(fmt.Errorf("watch error event: %s", digits.ReplaceAllString(err.Error(), "N")))
				return rv
			}
			m, err := meta.Accessor(ev.Object)
			if err != nil {
				rec.noteError(fmt.Errorf("watch event without metadata: %w", err))
				continue
			}
			rv = m.GetResourceVersion()
			if ev.Type == watch.Bookmark {
				if m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
					markSynced()
				}
				continue
			}
			handle(ev)
		}
	}
}

// pause waits d; false when ctx ended first.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
