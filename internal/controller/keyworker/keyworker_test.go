package keyworker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// logged is a log entry as the tests compare it.
type logged struct {
	typ       ktesting.LogType
	verbosity int
	message   string
}

func newLogger(t *testing.T) (klog.Logger, func() []logged) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(4), ktesting.BufferLogs(true)))
	entries := func() []logged {
		var out []logged
		for _, e := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
			out = append(out, logged{e.Type, e.Verbosity, e.Message})
		}
		return out
	}
	return logger, entries
}

func TestLogRetry(t *testing.T) {
	failed := errors.New("boom")
	cases := []struct {
		name    string
		err     error
		stopped bool
		want    []logged
	}{
		{name: "a failure is an error", err: failed, want: []logged{{ktesting.LogError, 0, "Syncing"}}},
		{name: "a wait is said at verbosity 4", err: Wait(failed), want: []logged{{ktesting.LogInfo, 4, "Syncing: waiting"}}},
		{name: "a wrapped wait is still a wait", err: fmt.Errorf("context: %w", Wait(failed)), want: []logged{{ktesting.LogInfo, 4, "Syncing: waiting"}}},
		{name: "a failure after the stop is not logged", err: failed, stopped: true},
		{name: "a wait after the stop is not logged", err: Wait(failed), stopped: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			logger, entries := newLogger(t)
			ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
			defer cancel()
			if tc.stopped {
				cancel()
			}
			logRetry(ctx, "Syncing", "k", tc.err)
			if got := entries(); !slices.Equal(got, tc.want) {
				t.Errorf("logged %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWaitKeepsTheError(t *testing.T) {
	failed := errors.New("boom")
	err := Wait(failed)
	if !errors.Is(err, failed) || err.Error() != "boom" {
		t.Errorf("Wait(%v) = %v, which does not unwrap to it or says otherwise", failed, err)
	}
}

// TestRunRetries runs one worker over one key whose sync fails, then waits, then succeeds: the
// key comes back after each error and the two errors are logged as what they are.
func TestRunRetries(t *testing.T) {
	logger, entries := newLogger(t)
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	defer cancel()
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, time.Millisecond))
	queue.Add("k")
	results := []error{errors.New("boom"), Wait(errors.New("not yet")), nil}
	var keys []string
	var loggedBeforeSuccess []logged
	done := make(chan struct{})
	sync := func(_ context.Context, key string) error {
		keys = append(keys, key)
		err := results[len(keys)-1]
		if err == nil {
			loggedBeforeSuccess = entries()
			close(done)
		}
		return err
	}
	stopped := make(chan struct{})
	go func() {
		Run(ctx, queue, func() bool { return true }, 1, "Syncing", sync)
		close(stopped)
	}()
	<-done
	cancel()
	<-stopped
	if want := []string{"k", "k", "k"}; !slices.Equal(keys, want) {
		t.Errorf("synced %v, want %v", keys, want)
	}
	want := []logged{{ktesting.LogError, 0, "Syncing"}, {ktesting.LogInfo, 4, "Syncing: waiting"}}
	if !slices.Equal(loggedBeforeSuccess, want) {
		t.Errorf("logged %v, want %v", loggedBeforeSuccess, want)
	}
	if !queue.ShuttingDown() {
		t.Error("the queue is not shut down after the stop")
	}
}
