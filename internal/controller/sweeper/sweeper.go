// Package sweeper runs the periodic clean-up of cached objects that outlive their use: every
// interval, each object its rule finds due is deleted, under preconditions that keep an object
// changed or recreated since the cache saw it.
package sweeper

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Sweeper deletes the due objects of one informer's cache.
type Sweeper[T metav1.Object] struct {
	// Kind names the objects in logs and errors, e.g. "certificate signing request".
	Kind   string
	Synced cache.InformerSynced
	Clock  clock.PassiveClock
	// Every spaces the sweeps: an object goes at most this long after it is due.
	Every time.Duration
	// List is the cache's objects.
	List func() ([]T, error)
	// Due says why obj goes at now, or "" when it stays.
	Due func(obj T, now time.Time) string
	// Delete deletes obj under the preconditions given; a NotFound or Conflict answer means
	// someone else deleted or changed it, and it is left.
	Delete func(ctx context.Context, obj T, pre *metav1.Preconditions) error
	// MatchResourceVersion adds the cached resourceVersion to the preconditions, for rules that
	// read more than the object's age: a changed object may no longer be due.
	MatchResourceVersion bool
}

// Run sweeps until ctx ends.
func (s *Sweeper[T]) Run(ctx context.Context) {
	if !cache.WaitForCacheSync(ctx.Done(), s.Synced) {
		return
	}
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := s.Sweep(ctx); err != nil {
			klog.ErrorS(err, "Cleaning "+s.Kind+"s")
		}
	}, s.Every)
}

// Sweep deletes every object that is due now, and goes on past a failed delete.
func (s *Sweeper[T]) Sweep(ctx context.Context) error {
	objs, err := s.List()
	if err != nil {
		return fmt.Errorf("listing %ss: %w", s.Kind, err)
	}
	now := s.Clock.Now()
	var failed []error
	for _, obj := range objs {
		why := s.Due(obj, now)
		if why == "" {
			continue
		}
		uid := obj.GetUID()
		pre := &metav1.Preconditions{UID: &uid}
		if s.MatchResourceVersion {
			rv := obj.GetResourceVersion()
			pre.ResourceVersion = &rv
		}
		err := s.Delete(ctx, obj, pre)
		switch {
		case err == nil:
			klog.V(2).InfoS("Deleted "+s.Kind, "object", klog.KObj(obj), "reason", why)
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		default:
			failed = append(failed, fmt.Errorf("deleting %s %s: %w", s.Kind, klog.KObj(obj), err))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d deletes failed, the first: %w", len(failed), failed[0])
	}
	return nil
}
