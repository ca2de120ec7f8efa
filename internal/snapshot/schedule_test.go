package snapshot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/component-base/metrics/testutil"
	testingclock "k8s.io/utils/clock/testing"
)

func TestParseSchedule(t *testing.T) {
	from := time.Date(2026, 11, 27, 0, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		schedule string
		next     time.Time
		err      string
	}{
		{schedule: "6h", next: from.Add(6 * time.Hour)},
		{schedule: "90m", next: from.Add(90 * time.Minute)},
		{schedule: "0 */6 * * *", next: time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)},
		{schedule: "@daily", next: time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)},
		{schedule: "@every 2h", next: from.Add(2 * time.Hour)},
		{schedule: "15 3 * * 0", next: time.Date(2026, 11, 29, 3, 15, 0, 0, time.UTC)},
		{schedule: "500ms", err: "shorter than 1s"},
		{schedule: "-1h", err: "shorter than"},
		{schedule: "every day", err: "neither a duration nor a cron expression"},
		{schedule: "* * * *", err: "neither a duration nor a cron expression"},
		{schedule: "61 * * * *", err: "neither a duration nor a cron expression"},
		{schedule: "CRON_TZ=Europe/Paris 0 3 * * *", err: "time zone is not supported"},
	} {
		t.Run(tc.schedule, func(t *testing.T) {
			s, err := ParseSchedule(tc.schedule)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseSchedule(%q) = %v, want error %q", tc.schedule, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Next(from); !got.Equal(tc.next) {
				t.Errorf("next after %v = %v, want %v", from, got, tc.next)
			}
		})
	}
}

func TestScheduleOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		o    ScheduleOptions
		want []string
	}{
		{NewScheduleOptions(), nil},
		{ScheduleOptions{Schedule: "@hourly", Retention: 1}, nil},
		{ScheduleOptions{Schedule: "@hourly", Retention: 0}, []string{"--snapshot-retention 0 must be at least 1"}},
		{ScheduleOptions{Schedule: "soon", Retention: 3}, []string{"--snapshot-schedule: \"soon\" is neither"}},
	} {
		errs := tc.o.Validate()
		if len(errs) != len(tc.want) {
			t.Errorf("%+v: %v, want %v", tc.o, errs, tc.want)
			continue
		}
		for i, err := range errs {
			if !strings.Contains(err.Error(), tc.want[i]) {
				t.Errorf("%+v: %v, want %q", tc.o, err, tc.want[i])
			}
		}
	}
}

// TestSchedulerRunsPrunesAndSurvivesFailures drives the scheduler with a fake clock: each tick
// takes one snapshot, a failure is counted and the next tick still runs, only the newest
// Retention archives stay, and temporaries of an interrupted snapshot are removed at start.
func TestSchedulerRunsPrunesAndSurvivesFailures(t *testing.T) {
	RegisterMetrics()
	dir := t.TempDir()
	stale := filepath.Join(dir, ".idplane-snapshot-20260101T000000Z.tar.tmp123")
	other := filepath.Join(dir, "keep-me.tar")
	for _, p := range []string{stale, other} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC))
	sched, err := ParseSchedule("1h")
	if err != nil {
		t.Fatal(err)
	}
	saved := make(chan string)
	fail := make(chan bool, 1)
	s := &Scheduler{
		Schedule: sched, Dir: dir, Retention: 2, Clock: clk,
		Save: func(_ context.Context, path string) error {
			defer func() { saved <- path }()
			select {
			case <-fail:
				return errors.New("etcd is away")
			default:
			}
			return os.WriteFile(path, []byte("archive"), 0o600)
		},
	}
	failuresBefore, _ := testutil.GetCounterMetricValue(snapshotsTotal.WithLabelValues("failure"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	defer func() { cancel(); <-done }()

	tick := func(failing bool) string {
		t.Helper()
		if failing {
			fail <- true
		}
		deadline := time.Now().Add(30 * time.Second)
		for !clk.HasWaiters() {
			if time.Now().After(deadline) {
				t.Fatal("the scheduler never waited for its next time")
			}
			time.Sleep(time.Millisecond)
		}
		clk.Step(time.Hour)
		return <-saved
	}
	var paths []string
	for i := range 4 {
		paths = append(paths, tick(i == 1))
	}
	// The fifth tick's wait proves the fourth snapshot's pruning has finished.
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the interrupted snapshot's temporary is still there: %v", err)
	}
	names, err := Archives(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Base(paths[2]), filepath.Base(paths[3])}
	if !slices.Equal(names, want) {
		t.Errorf("archives kept %v, want the newest two %v", names, want)
	}
	if paths[0] != filepath.Join(dir, "idplane-snapshot-20261127T010000Z.tar") {
		t.Errorf("first archive at %s", paths[0])
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("a file the scheduler did not write was removed: %v", err)
	}
	failures, _ := testutil.GetCounterMetricValue(snapshotsTotal.WithLabelValues("failure"))
	if failures-failuresBefore != 1 {
		t.Errorf("failures counted %v, want 1", failures-failuresBefore)
	}
}
