package clockwait

import (
	"context"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

func TestSleep(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	done := make(chan bool)
	go func() { done <- Sleep(t.Context(), clk, time.Minute) }()
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(time.Minute)
	if !<-done {
		t.Error("Sleep returned false after the clock passed the wait")
	}
	if !Sleep(t.Context(), clk, 0) {
		t.Error("a zero wait returned false")
	}

	ctx, cancel := context.WithCancel(t.Context())
	go func() { done <- Sleep(ctx, clk, time.Hour) }()
	cancel()
	if <-done {
		t.Error("Sleep returned true though its context ended first")
	}
	if Sleep(ctx, clk, 0) {
		t.Error("Sleep with an ended context returned true")
	}
}
