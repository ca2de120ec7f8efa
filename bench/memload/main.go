// Command memload measures what `idplane server` holds after the standard populate (by default
// 47,100 objects, see bench/internal/standardpopulate): its resident set size and Go heap, idle
// before the populate and once the server has settled after it. Every run launches a fresh
// server in a temporary directory and stops it at the end, so runs do not share state. With
// -plane it measures another plane the same way (upstream's, side by side: bench/upstream).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/idplane/idplane/bench/internal/loadclient"
	"github.com/idplane/idplane/bench/internal/loadphase"
	"github.com/idplane/idplane/bench/internal/procstat"
	"github.com/idplane/idplane/bench/internal/promtext"
	"github.com/idplane/idplane/bench/internal/standardpopulate"
	"github.com/idplane/idplane/bench/internal/toolmain"
)

const tool = "memload"

type config struct {
	idplane      string
	planeCmd     string
	serverArgs   []string
	populate     standardpopulate.Config
	settle       time.Duration
	runs         int
	startTimeout time.Duration
	jsonFile     string
}

func parse(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet(tool, flag.ContinueOnError)
	fs.StringVar(&c.idplane, "idplane", "", "idplane binary to launch (this or -plane)")
	fs.StringVar(&c.planeCmd, "plane", "", "instead of idplane, a command (split on spaces) that starts a fresh plane per run and prints kubeconfig=<path> and pids=<pid>,... once it is ready (bench/upstream/plane.sh); SIGTERM stops it. Its processes' memory is summed")
	fs.Func("server-arg", "a flag added to `idplane server` (repeatable), e.g. -server-arg=--memory-limit=1GiB", func(s string) error {
		c.serverArgs = append(c.serverArgs, s)
		return nil
	})
	c.populate.AddFlags(fs)
	fs.DurationVar(&c.settle, "settle", 30*time.Second, "idle time after the populate before memory is read, for informers and controllers to catch up")
	fs.IntVar(&c.runs, "runs", 3, "servers to launch and populate; medians are reported")
	fs.DurationVar(&c.startTimeout, "start-timeout", time.Minute, "give up if the server is not ready by then")
	fs.StringVar(&c.jsonFile, "json", "", "also write the figures to this file")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.planeCmd = strings.TrimSpace(c.planeCmd)
	if (c.idplane == "") == (c.planeCmd == "") {
		return c, errors.New("give one of -idplane and -plane")
	}
	if c.planeCmd != "" && len(c.serverArgs) > 0 {
		return c, errors.New("-server-arg is for -idplane; give a -plane command its own arguments")
	}
	if c.runs < 1 {
		return c, errors.New("-runs must be positive")
	}
	return c, c.populate.Validate()
}

func main() { toolmain.Main(tool, parse, run) }

// figures are what one run measured; memory in MiB.
type figures struct {
	Objects         int     `json:"objects"`
	PopulateSeconds float64 `json:"populateSeconds"`
	PopulateErrors  int     `json:"populateErrors"`
	IdleRSS         float64 `json:"idleRSSMiB"`
	RSS             float64 `json:"rssMiB"`
	RSSAnon         float64 `json:"rssAnonMiB"`
	PeakRSS         float64 `json:"peakRSSMiB"`
	HeapInuse       float64 `json:"heapInuseMiB"`
	HeapGoal        float64 `json:"heapGoalMiB"`
	// ServerCPU is the CPU time the server used from the start of the populate to the reading:
	// what a tighter garbage collector costs shows here.
	ServerCPU   float64 `json:"serverCPUSeconds"`
	LoadAverage float64 `json:"loadAverage"`
}

type report struct {
	ServerArgs []string  `json:"serverArgs,omitempty"`
	Plane      string    `json:"plane,omitempty"`
	Runs       []figures `json:"runs"`
	Median     figures   `json:"median"`
}

func run(ctx context.Context, c config) error {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "run\tobjects\tpopulate s\terrors\tidle RSS\tRSS\tRSS anon\tpeak RSS\theap in use\theap goal\tserver CPU s\tload avg\t")
	rep := report{ServerArgs: c.serverArgs, Plane: c.planeCmd}
	for i := range c.runs {
		f, err := measure(ctx, c)
		if err != nil {
			return fmt.Errorf("run %d: %w", i+1, err)
		}
		rep.Runs = append(rep.Runs, f)
		printRow(w, fmt.Sprint(i+1), f)
		fmt.Fprintf(os.Stderr, "%s: run %d/%d: RSS %.0f MiB, heap in use %.0f MiB, load %.1f\n", tool, i+1, c.runs, f.RSS, f.HeapInuse, f.LoadAverage)
	}
	rep.Median = median(rep.Runs)
	printRow(w, "median", rep.Median)
	w.Flush()
	fmt.Println("(memory in MiB, summed over the plane's processes; heap from the API server's /metrics, not after a forced GC)")
	if c.jsonFile != "" {
		return toolmain.WriteJSON(c.jsonFile, rep)
	}
	return nil
}

func printRow(w io.Writer, name string, f figures) {
	fmt.Fprintf(w, "%s\t%d\t%.1f\t%d\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.1f\t%.1f\t\n", name, f.Objects, f.PopulateSeconds, f.PopulateErrors,
		f.IdleRSS, f.RSS, f.RSSAnon, f.PeakRSS, f.HeapInuse, f.HeapGoal, f.ServerCPU, f.LoadAverage)
}

// measure launches a fresh plane, reads its idle memory, populates it, lets it settle and reads
// its memory again.
func measure(ctx context.Context, c config) (figures, error) {
	var f figures
	dir, err := os.MkdirTemp("", "memload-")
	if err != nil {
		return f, err
	}
	defer os.RemoveAll(dir)
	pl, err := startPlane(ctx, c, dir)
	if err != nil {
		return f, err
	}
	defer pl.stop()
	cfg, err := loadclient.RESTConfig(pl.kubeconfig, tool)
	if err != nil {
		return f, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return f, err
	}
	if err := sleep(ctx, 5*time.Second); err != nil {
		return f, err
	}
	idle, err := planeMemory(pl.pids)
	if err != nil {
		return f, err
	}
	f.IdleRSS = procstat.MiB(idle.RSS)
	cpuBefore, err := planeCPU(pl.pids)
	if err != nil {
		return f, err
	}
	begin := time.Now()
	if f.Objects, f.PopulateErrors, err = standardpopulate.Run(ctx, cs, c.populate, os.Stderr); err != nil {
		return f, err
	}
	f.PopulateSeconds = time.Since(begin).Seconds()
	if err := sleep(ctx, c.settle); err != nil {
		return f, err
	}
	m, err := planeMemory(pl.pids)
	if err != nil {
		return f, err
	}
	f.RSS, f.RSSAnon, f.PeakRSS = procstat.MiB(m.RSS), procstat.MiB(m.Anon), procstat.MiB(m.HWM)
	cpuAfter, err := planeCPU(pl.pids)
	if err != nil {
		return f, err
	}
	f.ServerCPU = (cpuAfter - cpuBefore).Seconds()
	if f.HeapInuse, f.HeapGoal, err = readHeap(ctx, cs.CoreV1().RESTClient()); err != nil {
		return f, err
	}
	f.LoadAverage, _ = procstat.LoadAverage()
	return f, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// The Go collector's gauges: the bytes of heap spans in use, and the heap size at which the
// next collection starts (what GOGC or a memory limit steer).
const (
	heapInuseMetric = "go_memstats_heap_inuse_bytes"
	heapGoalMetric  = "go_memstats_next_gc_bytes"
)

// readHeap reads the API server's heap in use and heap goal, in MiB, from its /metrics.
func readHeap(ctx context.Context, c rest.Interface) (inuse, goal float64, err error) {
	m, err := promtext.Scrape(ctx, c)
	if err != nil {
		return 0, 0, err
	}
	if inuse, err = m.Value(heapInuseMetric); err != nil {
		return 0, 0, err
	}
	if goal, err = m.Value(heapGoalMetric); err != nil {
		return 0, 0, err
	}
	return procstat.MiB(int64(inuse)), procstat.MiB(int64(goal)), nil
}

func median(runs []figures) figures {
	pick := func(get func(figures) float64) float64 {
		xs := make([]float64, len(runs))
		for i, r := range runs {
			xs[i] = get(r)
		}
		return loadphase.Median(xs)
	}
	return figures{
		Objects:         int(pick(func(f figures) float64 { return float64(f.Objects) })),
		PopulateSeconds: pick(func(f figures) float64 { return f.PopulateSeconds }),
		PopulateErrors:  int(pick(func(f figures) float64 { return float64(f.PopulateErrors) })),
		IdleRSS:         pick(func(f figures) float64 { return f.IdleRSS }),
		RSS:             pick(func(f figures) float64 { return f.RSS }),
		RSSAnon:         pick(func(f figures) float64 { return f.RSSAnon }),
		PeakRSS:         pick(func(f figures) float64 { return f.PeakRSS }),
		HeapInuse:       pick(func(f figures) float64 { return f.HeapInuse }),
		HeapGoal:        pick(func(f figures) float64 { return f.HeapGoal }),
		ServerCPU:       pick(func(f figures) float64 { return f.ServerCPU }),
		LoadAverage:     pick(func(f figures) float64 { return f.LoadAverage }),
	}
}
