// Package clockwait waits on an injected clock, so that the agent's retries and renewals can be
// driven by a fake clock in tests.
package clockwait

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// Sleep waits d on c; false when ctx ended first.
func Sleep(ctx context.Context, c clock.Clock, d time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	if d <= 0 {
		return true
	}
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}
