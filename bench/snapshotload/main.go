// Command snapshotload measures `idplane snapshot save` at scale: it launches a fresh server,
// populates it with the standard populate (by default 47,100 objects: 100 namespaces, 1,000
// nodes, 20,000 secrets, 20,000 pods bound to the nodes and each mounting a secret, 3,000 PVs and
// 3,000 PVCs), keeps a light paced load of secret GETs running, and takes snapshots: how long each
// takes, how large the archive is, and the p50/p99 of the light load before and during each.
//
// Every request goes to a server it launched on the loopback interface, every phase is bounded,
// and the server is stopped before the tool exits.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	mathrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/idplane/idplane/bench/internal/launch"
	"github.com/idplane/idplane/bench/internal/loadclient"
	"github.com/idplane/idplane/bench/internal/loadphase"
	"github.com/idplane/idplane/bench/internal/procstat"
	"github.com/idplane/idplane/bench/internal/standardpopulate"
	"github.com/idplane/idplane/bench/internal/toolmain"
)

const tool = "snapshotload"

type config struct {
	idplane                       string
	populate                      standardpopulate.Config
	rps                           int
	baseline                      time.Duration
	runs                          int
	startTimeout, snapshotTimeout time.Duration
	jsonFile                      string
	// scheduled, when set, measures the server's own scheduled snapshots at this interval
	// instead of `idplane snapshot save`.
	scheduled time.Duration
}

func parse(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet(tool, flag.ContinueOnError)
	fs.StringVar(&c.idplane, "idplane", "", "idplane binary to launch (required)")
	c.populate.AddFlags(fs)
	fs.IntVar(&c.rps, "rps", 50, "rate of the light load: secret GETs per second, paced (not closed-loop)")
	fs.DurationVar(&c.baseline, "baseline", 10*time.Second, "window of the light load without a snapshot, before each snapshot")
	fs.IntVar(&c.runs, "runs", 3, "snapshots to take; medians are reported")
	fs.DurationVar(&c.startTimeout, "start-timeout", time.Minute, "give up if the server is not ready by then")
	fs.DurationVar(&c.snapshotTimeout, "snapshot-timeout", 5*time.Minute, "hard limit of one snapshot")
	fs.StringVar(&c.jsonFile, "json", "", "also write the figures to this file")
	fs.DurationVar(&c.scheduled, "scheduled", 0, "measure the server's scheduled snapshots (--snapshot-schedule at this interval, which must exceed -baseline plus a snapshot) instead of `idplane snapshot save`")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.idplane == "" {
		return c, errors.New("-idplane is required")
	}
	if c.rps < 1 || c.runs < 1 {
		return c, errors.New("-rps and -runs must be positive")
	}
	return c, c.populate.Validate()
}

func main() { toolmain.Main(tool, parse, run) }

// figures are what one snapshot measured.
type figures struct {
	SnapshotSeconds float64 `json:"snapshotSeconds"`
	ArchiveMiB      float64 `json:"archiveMiB"`
	BaselineP50Ms   float64 `json:"baselineP50Ms"`
	BaselineP99Ms   float64 `json:"baselineP99Ms"`
	DuringP50Ms     float64 `json:"duringP50Ms"`
	DuringP99Ms     float64 `json:"duringP99Ms"`
	DuringMaxMs     float64 `json:"duringMaxMs"`
	DuringRequests  int     `json:"duringRequests"`
	Errors          int     `json:"errors"`
	LoadAverage     float64 `json:"loadAverage"`
}

type report struct {
	Objects         int       `json:"objects"`
	PopulateSeconds float64   `json:"populateSeconds"`
	PopulateErrors  int       `json:"populateErrors"`
	Runs            []figures `json:"runs"`
	Median          figures   `json:"median"`
}

func run(ctx context.Context, c config) error {
	dir, err := os.MkdirTemp("", "snapshotload-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var args []string
	if c.scheduled > 0 {
		args = []string{"--snapshot-schedule", c.scheduled.String(), "--snapshot-dir", filepath.Join(dir, "snapshots"), "--snapshot-retention=1"}
	}
	srv, err := launch.LaunchServer(ctx, launch.ServerOptions{Binary: c.idplane, Dir: dir, Timeout: c.startTimeout, Tool: tool, Args: args})
	if err != nil {
		return err
	}
	defer srv.Stop()
	cfg, err := loadclient.RESTConfig(srv.Kubeconfig, tool)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var rep report
	begin := time.Now()
	if rep.Objects, rep.PopulateErrors, err = standardpopulate.Run(ctx, cs, c.populate, os.Stderr); err != nil {
		return err
	}
	rep.PopulateSeconds = time.Since(begin).Seconds()
	fmt.Printf("populated %d objects in %.1f s (%d errors)\n", rep.Objects, rep.PopulateSeconds, rep.PopulateErrors)

	load := startLightLoad(ctx, cs, c)
	defer load.stop()
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "run\tsnapshot s\tarchive MiB\tbaseline p50/p99 ms\tduring p50/p99/max ms\tduring requests\terrors\tload avg\t")
	for i := range c.runs {
		measureOne := measure
		if c.scheduled > 0 {
			measureOne = measureScheduled
		}
		f, err := measureOne(ctx, c, dir, i, load)
		if err != nil {
			return err
		}
		rep.Runs = append(rep.Runs, f)
		printRow(w, fmt.Sprint(i+1), f)
	}
	rep.Median = median(rep.Runs)
	printRow(w, "median", rep.Median)
	w.Flush()
	if c.jsonFile != "" {
		return toolmain.WriteJSON(c.jsonFile, rep)
	}
	return nil
}

func printRow(w io.Writer, name string, f figures) {
	fmt.Fprintf(w, "%s\t%.2f\t%.1f\t%.1f / %.1f\t%.1f / %.1f / %.1f\t%d\t%d\t%.1f\t\n", name, f.SnapshotSeconds, f.ArchiveMiB,
		f.BaselineP50Ms, f.BaselineP99Ms, f.DuringP50Ms, f.DuringP99Ms, f.DuringMaxMs, f.DuringRequests, f.Errors, f.LoadAverage)
}

// measure waits one baseline window, then takes one snapshot with the binary as an operator
// would, and reads the light load's latencies of both windows.
func measure(ctx context.Context, c config, dir string, i int, load *lightLoad) (figures, error) {
	var f figures
	baseStart := time.Now()
	select {
	case <-time.After(c.baseline):
	case <-ctx.Done():
		return f, ctx.Err()
	}
	archive := filepath.Join(dir, fmt.Sprintf("snapshot-%d.tar", i))
	sctx, cancel := context.WithTimeout(ctx, c.snapshotTimeout)
	defer cancel()
	start := time.Now()
	out, err := exec.CommandContext(sctx, c.idplane, "snapshot", "save", archive, "--data-dir", filepath.Join(dir, "data")).CombinedOutput()
	end := time.Now()
	if err != nil {
		return f, fmt.Errorf("snapshot save: %w\n%s", err, out)
	}
	info, err := os.Stat(archive)
	if err != nil {
		return f, err
	}
	// Let requests started during the snapshot finish before they are read.
	time.Sleep(time.Second)
	base, baseErrs := load.window(baseStart, start)
	during, duringErrs := load.window(start, end)
	f = figures{
		SnapshotSeconds: end.Sub(start).Seconds(), ArchiveMiB: procstat.MiB(info.Size()),
		BaselineP50Ms: ms(loadphase.Percentile(base, 50)), BaselineP99Ms: ms(loadphase.Percentile(base, 99)),
		DuringP50Ms: ms(loadphase.Percentile(during, 50)), DuringP99Ms: ms(loadphase.Percentile(during, 99)),
		DuringRequests: len(during), Errors: baseErrs + duringErrs,
	}
	if len(during) > 0 {
		f.DuringMaxMs = ms(during[len(during)-1])
	}
	f.LoadAverage, _ = procstat.LoadAverage()
	return f, os.Remove(archive)
}

// measureScheduled waits for the server's next scheduled snapshot, timing it from its first
// temporary file to the last one's disappearance, and reads the light load's latencies of that
// window and of -baseline before it.
func measureScheduled(ctx context.Context, c config, dir string, _ int, load *lightLoad) (figures, error) {
	var f figures
	snapDir := filepath.Join(dir, "snapshots")
	inProgress := func() bool {
		m, _ := filepath.Glob(filepath.Join(snapDir, ".idplane-snapshot-*.tmp*"))
		return len(m) > 0
	}
	poll := func(cond func() bool, limit time.Duration) error {
		deadline := time.Now().Add(limit)
		for !cond() {
			if time.Now().After(deadline) {
				return fmt.Errorf("no scheduled snapshot change within %v", limit)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(2 * time.Millisecond):
			}
		}
		return nil
	}
	// Begin between two snapshots, so that the baseline before the next one holds none.
	if err := poll(func() bool { return !inProgress() }, c.snapshotTimeout); err != nil {
		return f, err
	}
	if err := poll(inProgress, c.scheduled+c.snapshotTimeout); err != nil {
		return f, err
	}
	start := time.Now()
	if err := poll(func() bool { return !inProgress() }, c.snapshotTimeout); err != nil {
		return f, err
	}
	end := time.Now()
	names, err := filepath.Glob(filepath.Join(snapDir, "idplane-snapshot-*.tar"))
	if err != nil || len(names) == 0 {
		return f, fmt.Errorf("no archive in %s after a scheduled snapshot: %v", snapDir, err)
	}
	slices.Sort(names)
	info, err := os.Stat(names[len(names)-1])
	if err != nil {
		return f, err
	}
	time.Sleep(time.Second)
	base, baseErrs := load.window(start.Add(-c.baseline), start)
	during, duringErrs := load.window(start, end)
	f = figures{
		SnapshotSeconds: end.Sub(start).Seconds(), ArchiveMiB: procstat.MiB(info.Size()),
		BaselineP50Ms: ms(loadphase.Percentile(base, 50)), BaselineP99Ms: ms(loadphase.Percentile(base, 99)),
		DuringP50Ms: ms(loadphase.Percentile(during, 50)), DuringP99Ms: ms(loadphase.Percentile(during, 99)),
		DuringRequests: len(during), Errors: baseErrs + duringErrs,
	}
	if len(during) > 0 {
		f.DuringMaxMs = ms(during[len(during)-1])
	}
	f.LoadAverage, _ = procstat.LoadAverage()
	return f, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(runs []figures) figures {
	pick := func(get func(figures) float64) float64 {
		xs := make([]float64, len(runs))
		for i, r := range runs {
			xs[i] = get(r)
		}
		return loadphase.Median(xs)
	}
	return figures{
		SnapshotSeconds: pick(func(f figures) float64 { return f.SnapshotSeconds }),
		ArchiveMiB:      pick(func(f figures) float64 { return f.ArchiveMiB }),
		BaselineP50Ms:   pick(func(f figures) float64 { return f.BaselineP50Ms }),
		BaselineP99Ms:   pick(func(f figures) float64 { return f.BaselineP99Ms }),
		DuringP50Ms:     pick(func(f figures) float64 { return f.DuringP50Ms }),
		DuringP99Ms:     pick(func(f figures) float64 { return f.DuringP99Ms }),
		DuringMaxMs:     pick(func(f figures) float64 { return f.DuringMaxMs }),
		DuringRequests:  int(pick(func(f figures) float64 { return float64(f.DuringRequests) })),
		Errors:          int(pick(func(f figures) float64 { return float64(f.Errors) })),
		LoadAverage:     pick(func(f figures) float64 { return f.LoadAverage }),
	}
}

// lightLoad GETs random secrets at a fixed rate, each request in its own goroutine, so that a
// slow answer delays no later request (no coordinated omission).
type lightLoad struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	samples []sample
}

type sample struct {
	at      time.Time
	latency time.Duration
	failed  bool
}

func startLightLoad(ctx context.Context, cs kubernetes.Interface, c config) *lightLoad {
	ctx, cancel := context.WithCancel(ctx)
	l := &lightLoad{cancel: cancel}
	l.wg.Go(func() {
		tick := time.NewTicker(time.Second / time.Duration(c.rps))
		defer tick.Stop()
		rng := mathrand.New(mathrand.NewPCG(uint64(time.Now().UnixNano()), 1))
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			i := rng.IntN(max(c.populate.Secrets, 1))
			l.wg.Go(func() {
				start := time.Now()
				_, err := cs.CoreV1().Secrets(c.populate.Namespace(i)).Get(ctx, standardpopulate.SecretName(i), metav1.GetOptions{})
				if ctx.Err() != nil {
					return
				}
				l.mu.Lock()
				l.samples = append(l.samples, sample{at: start, latency: time.Since(start), failed: err != nil})
				l.mu.Unlock()
			})
		}
	})
	return l
}

func (l *lightLoad) stop() {
	l.cancel()
	l.wg.Wait()
}

// window returns the sorted latencies of the requests started in [from, to), and how many failed.
func (l *lightLoad) window(from, to time.Time) ([]time.Duration, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var lat []time.Duration
	failed := 0
	for _, s := range l.samples {
		if !s.at.Before(from) && s.at.Before(to) {
			lat = append(lat, s.latency)
			if s.failed {
				failed++
			}
		}
	}
	slices.Sort(lat)
	return lat, failed
}
