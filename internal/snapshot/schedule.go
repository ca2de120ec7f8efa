package snapshot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// ScheduleOptions are the server's scheduled-snapshot flags.
type ScheduleOptions struct {
	// Schedule is a cron expression (five fields, or a descriptor such as @daily) or a Go
	// duration; empty takes no scheduled snapshots.
	Schedule string
	// Dir holds the archives; empty means <data-dir>/snapshots.
	Dir string
	// Retention is how many archives are kept; older ones are deleted after each snapshot.
	Retention int
}

// NewScheduleOptions returns the defaults: no schedule, five archives kept.
func NewScheduleOptions() ScheduleOptions { return ScheduleOptions{Retention: 5} }

// AddFlags registers the flags.
func (o *ScheduleOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Schedule, "snapshot-schedule", o.Schedule, "When the leader takes a snapshot of etcd and the pki/ keys (as `idplane snapshot save`): a cron expression in UTC (\"0 */6 * * *\", \"@daily\") or an interval (\"6h\"). Empty: no scheduled snapshots. The archives hold every key of the control plane: keep them as secret as ca.key.")
	fs.StringVar(&o.Dir, "snapshot-dir", o.Dir, "Directory of the scheduled snapshots, created mode 0700 (default <data-dir>/snapshots). Put it on another disk, and copy the archives off the machine.")
	fs.IntVar(&o.Retention, "snapshot-retention", o.Retention, "How many scheduled snapshots to keep; older ones are deleted after each new one.")
}

// Validate reports every invalid setting.
func (o *ScheduleOptions) Validate() []error {
	var errs []error
	if o.Schedule != "" {
		if _, err := ParseSchedule(o.Schedule); err != nil {
			errs = append(errs, fmt.Errorf("--snapshot-schedule: %w", err))
		}
	}
	if o.Retention < 1 {
		errs = append(errs, fmt.Errorf("--snapshot-retention %d must be at least 1", o.Retention))
	}
	return errs
}

// minInterval is the shortest interval: snapshots never overlap (the next waits for the last to
// end), so a short one costs etcd reads, not a pile-up.
const minInterval = time.Second

// ParseSchedule reads a Go duration as a fixed interval, anything else as a standard cron
// expression (the parser Kubernetes' CronJob uses), evaluated in UTC.
func ParseSchedule(s string) (cron.Schedule, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < minInterval {
			return nil, fmt.Errorf("interval %v is shorter than %v", d, minInterval)
		}
		return cron.Every(d), nil
	}
	if strings.HasPrefix(s, "TZ=") || strings.HasPrefix(s, "CRON_TZ=") {
		return nil, fmt.Errorf("%q: a time zone is not supported, the schedule is in UTC", s)
	}
	sched, err := cron.ParseStandard(s)
	if err != nil {
		return nil, fmt.Errorf("%q is neither a duration nor a cron expression: %w", s, err)
	}
	return sched, nil
}

// archivePrefix and archiveSuffix name the scheduled archives, which sort by time.
const (
	archivePrefix = "idplane-snapshot-"
	archiveSuffix = ".tar"
	timeLayout    = "20060102T150405Z"
)

// Scheduler takes snapshots on a schedule into a directory and keeps the newest few.
type Scheduler struct {
	Schedule  cron.Schedule
	Dir       string
	Retention int
	// Save writes one archive to path.
	Save  func(ctx context.Context, path string) error
	Clock clock.Clock
}

// Run takes snapshots until ctx ends. A failed snapshot is logged and counted and the next one
// is taken at its time: nothing here stops the server.
func (s *Scheduler) Run(ctx context.Context) {
	RegisterMetrics()
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		klog.ErrorS(err, "Creating the snapshot directory; scheduled snapshots will fail until it exists", "dir", s.Dir)
	}
	s.removeTemporaries()
	for {
		now := s.Clock.Now().UTC()
		next := s.Schedule.Next(now)
		t := s.Clock.NewTimer(next.Sub(now))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		s.RunOnce(ctx)
	}
}

// RunOnce takes one snapshot now and prunes old ones after a success.
func (s *Scheduler) RunOnce(ctx context.Context) {
	start := s.Clock.Now()
	path := filepath.Join(s.Dir, archivePrefix+start.UTC().Format(timeLayout)+archiveSuffix)
	err := s.Save(ctx, path)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		snapshotsTotal.WithLabelValues("failure").Inc()
		klog.ErrorS(err, "Scheduled snapshot failed", "path", path)
		return
	}
	took := s.Clock.Since(start)
	snapshotsTotal.WithLabelValues("success").Inc()
	snapshotDuration.Observe(took.Seconds())
	lastSuccess.Set(float64(s.Clock.Now().Unix()))
	klog.InfoS("Scheduled snapshot saved", "path", path, "took", took)
	if err := s.prune(); err != nil {
		klog.ErrorS(err, "Removing old snapshots", "dir", s.Dir)
	}
}

// Archives lists the scheduled archives in dir, oldest first.
func Archives(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if e.Type().IsRegular() && strings.HasPrefix(n, archivePrefix) && strings.HasSuffix(n, archiveSuffix) {
			if _, err := time.Parse(timeLayout, strings.TrimSuffix(strings.TrimPrefix(n, archivePrefix), archiveSuffix)); err == nil {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return names, nil
}

// prune deletes all but the newest Retention archives; only files named as this scheduler names
// them are touched.
func (s *Scheduler) prune() error {
	names, err := Archives(s.Dir)
	if err != nil {
		return err
	}
	var errs []error
	for len(names) > s.Retention {
		if err := os.Remove(filepath.Join(s.Dir, names[0])); err != nil {
			errs = append(errs, err)
		}
		names = names[1:]
	}
	return errors.Join(errs...)
}

// removeTemporaries deletes what a snapshot killed mid-way (the process killed, the machine
// down) left beside the archives: they are never under an archive's name, but they hold keys.
func (s *Scheduler) removeTemporaries() {
	matches, err := filepath.Glob(filepath.Join(s.Dir, "."+archivePrefix+"*"+archiveSuffix+".tmp*"))
	if err != nil {
		return
	}
	for _, m := range matches {
		if err := os.Remove(m); err != nil {
			klog.ErrorS(err, "Removing an interrupted snapshot's temporary file", "path", m)
		}
	}
}
