// Command apiload measures a baseline for an idplane API server: how long it takes from process
// start to /readyz, how much memory it holds when idle, and how fast it serves secret CREATE, GET
// and LIST requests from a client-go client authenticated with the admin client certificate.
//
// It either launches a fresh server from a built binary (-idplane) or loads a server that is
// already running (-kubeconfig). Every phase is bounded by a count or a time, only loopback
// targets are accepted, and a launched server is always stopped before the tool exits.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/idplane/idplane/bench/internal/loadphase"
	"github.com/idplane/idplane/bench/internal/procstat"
	"github.com/idplane/idplane/bench/internal/toolmain"
)

type config struct {
	idplane      string
	kubeconfig   string
	secrets      int
	concurrency  int
	duration     time.Duration
	requests     int
	pageSize     int64
	secretBytes  int
	protobuf     bool
	runs         int
	idle         time.Duration
	startTimeout time.Duration
	phaseTimeout time.Duration
	jsonFile     string
}

// runResult holds the figures of one measurement. Server is nil when the tool did not launch the
// server itself, since then it has neither the start time nor the process to inspect.
type runResult struct {
	Server *serverFigures `json:"server,omitempty"`
	Phases []phaseResult  `json:"phases"`
}

type serverFigures struct {
	StartToReadyMs    float64 `json:"startToReadyMs"`
	IdleRSSBeforeMiB  float64 `json:"idleRSSBeforeLoadMiB"`
	IdleRSSAfterMiB   float64 `json:"idleRSSAfterLoadMiB"`
	PeakRSSMiB        float64 `json:"peakRSSMiB"`
	StopAfterSIGTERMs float64 `json:"stopAfterSIGTERMMs"`
}

type phaseResult struct {
	Name     string  `json:"name"`
	Requests int     `json:"requests"`
	Errors   int     `json:"errors"`
	Seconds  float64 `json:"seconds"`
	RPS      float64 `json:"rps"`
	P50Ms    float64 `json:"p50Ms"`
	P90Ms    float64 `json:"p90Ms"`
	P99Ms    float64 `json:"p99Ms"`
	// ServerCPUSeconds is user+system CPU the server process spent during the phase; zero when
	// the server was not launched by the tool.
	ServerCPUSeconds float64 `json:"serverCPUSeconds,omitempty"`
	// ClientCPUSeconds is the CPU this tool spent, which on a small machine competes with the
	// server for the same cores.
	ClientCPUSeconds float64 `json:"clientCPUSeconds"`
	TimedOut         bool    `json:"timedOut,omitempty"`
	FirstError       string  `json:"firstError,omitempty"`
}

type report struct {
	Target      string      `json:"target"`
	Secrets     int         `json:"secrets"`
	Concurrency int         `json:"concurrency"`
	Runs        []runResult `json:"runs"`
	Median      runResult   `json:"median"`
}

func main() { toolmain.Main("apiload", parseFlags, run) }

func run(ctx context.Context, cfg config) error {
	runs, med, err := toolmain.Repeat(ctx, "apiload", cfg.runs, os.Stdout,
		func(ctx context.Context) (runResult, error) { return measure(ctx, cfg) }, medianRun, printRun)
	if err != nil {
		return err
	}
	if cfg.jsonFile != "" {
		target := cfg.kubeconfig
		if cfg.idplane != "" {
			target = cfg.idplane
		}
		rep := report{Target: target, Secrets: cfg.secrets, Concurrency: cfg.concurrency, Runs: runs, Median: med}
		if err := toolmain.WriteJSON(cfg.jsonFile, rep); err != nil {
			return err
		}
	}
	var errs []error
	for _, r := range runs {
		for _, p := range r.Phases {
			if p.Errors > 0 || p.TimedOut {
				errs = append(errs, fmt.Errorf("phase %s had %d errors (timed out: %t); first: %s", p.Name, p.Errors, p.TimedOut, p.FirstError))
			}
		}
	}
	return errors.Join(errs...)
}

func parseFlags(args []string) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("apiload", flag.ContinueOnError)
	fs.StringVar(&cfg.idplane, "idplane", "", "idplane binary to launch, fresh in a temporary data directory for every run")
	fs.StringVar(&cfg.kubeconfig, "kubeconfig", "", "kubeconfig of an already running server on 127.0.0.1 (instead of -idplane)")
	fs.IntVar(&cfg.secrets, "n", 1000, "secrets created in the CREATE phase; the LIST phases list all of them")
	fs.IntVar(&cfg.concurrency, "concurrency", 8, "concurrent workers in every phase")
	fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "length of the GET and LIST phases")
	fs.IntVar(&cfg.requests, "requests", 0, "when > 0, the GET and LIST phases stop after this many requests instead of after -duration")
	fs.Int64Var(&cfg.pageSize, "page-size", 100, "limit of the paginated LIST phase; 0 skips that phase")
	fs.IntVar(&cfg.secretBytes, "secret-bytes", 256, "payload size of each secret")
	fs.BoolVar(&cfg.protobuf, "protobuf", false, "talk protobuf instead of client-go's default JSON")
	fs.IntVar(&cfg.runs, "runs", 1, "repeat the whole measurement this many times and report the median of each figure")
	fs.DurationVar(&cfg.idle, "idle", 3*time.Second, "idle time before each RSS reading of a launched server")
	fs.DurationVar(&cfg.startTimeout, "start-timeout", time.Minute, "give up when a launched server is not ready by then")
	fs.DurationVar(&cfg.phaseTimeout, "phase-timeout", 2*time.Minute, "hard limit of every phase, also of count-bounded ones")
	fs.StringVar(&cfg.jsonFile, "json", "", "also write all runs and the medians as JSON to this file")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	var errs []error
	if fs.NArg() > 0 {
		errs = append(errs, fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	if (cfg.idplane == "") == (cfg.kubeconfig == "") {
		errs = append(errs, errors.New("exactly one of -idplane and -kubeconfig is required"))
	}
	if cfg.secrets < 1 {
		errs = append(errs, errors.New("-n must be at least 1"))
	}
	if cfg.concurrency < 1 {
		errs = append(errs, errors.New("-concurrency must be at least 1"))
	}
	if cfg.runs < 1 {
		errs = append(errs, errors.New("-runs must be at least 1"))
	}
	if cfg.duration <= 0 || cfg.phaseTimeout <= 0 || cfg.startTimeout <= 0 {
		errs = append(errs, errors.New("-duration, -phase-timeout and -start-timeout must be positive"))
	}
	if cfg.requests < 0 || cfg.pageSize < 0 || cfg.secretBytes < 0 || cfg.idle < 0 {
		errs = append(errs, errors.New("-requests, -page-size, -secret-bytes and -idle must not be negative"))
	}
	return cfg, errors.Join(errs...)
}

// measure runs one complete measurement, launching and stopping a server when asked to.
func measure(ctx context.Context, cfg config) (runResult, error) {
	if cfg.kubeconfig != "" {
		c, err := newClient(cfg.kubeconfig, cfg.protobuf)
		if err != nil {
			return runResult{}, err
		}
		if err := c.checkReady(ctx); err != nil {
			return runResult{}, err
		}
		phases, err := runLoad(ctx, cfg, c, nil)
		return runResult{Phases: phases}, err
	}

	srv, err := launchServer(ctx, cfg.idplane, cfg.startTimeout)
	if err != nil {
		return runResult{}, err
	}
	res, err := measureLaunched(ctx, cfg, srv)
	stopped, stopErr := srv.stop()
	if err != nil {
		return runResult{}, err
	}
	if stopErr != nil {
		return runResult{}, stopErr
	}
	res.Server.StopAfterSIGTERMs = ms(stopped)
	return res, nil
}

func measureLaunched(ctx context.Context, cfg config, srv *server) (runResult, error) {
	c, err := newClient(srv.Kubeconfig, cfg.protobuf)
	if err != nil {
		return runResult{}, err
	}
	figures := &serverFigures{StartToReadyMs: ms(srv.StartToReady)}
	if figures.IdleRSSBeforeMiB, err = srv.idleRSS(ctx, cfg.idle); err != nil {
		return runResult{}, err
	}
	phases, err := runLoad(ctx, cfg, c, srv)
	if err != nil {
		return runResult{}, err
	}
	if figures.IdleRSSAfterMiB, err = srv.idleRSS(ctx, cfg.idle); err != nil {
		return runResult{}, err
	}
	mem, err := procstat.ReadMemory(srv.PID())
	if err != nil {
		return runResult{}, err
	}
	figures.PeakRSSMiB = procstat.MiB(mem.HWM)
	return runResult{Server: figures, Phases: phases}, nil
}

// medianRun takes every figure's median across runs. Phases line up by position: every run
// executes the same phases in the same order.
func medianRun(runs []runResult) runResult {
	if len(runs) == 1 {
		return runs[0]
	}
	of := func(f func(runResult) float64) float64 {
		xs := make([]float64, len(runs))
		for i, r := range runs {
			xs[i] = f(r)
		}
		return loadphase.Median(xs)
	}
	var out runResult
	if runs[0].Server != nil {
		out.Server = &serverFigures{
			StartToReadyMs:    of(func(r runResult) float64 { return r.Server.StartToReadyMs }),
			IdleRSSBeforeMiB:  of(func(r runResult) float64 { return r.Server.IdleRSSBeforeMiB }),
			IdleRSSAfterMiB:   of(func(r runResult) float64 { return r.Server.IdleRSSAfterMiB }),
			PeakRSSMiB:        of(func(r runResult) float64 { return r.Server.PeakRSSMiB }),
			StopAfterSIGTERMs: of(func(r runResult) float64 { return r.Server.StopAfterSIGTERMs }),
		}
	}
	for i, p := range runs[0].Phases {
		phase := func(f func(phaseResult) float64) float64 {
			return of(func(r runResult) float64 { return f(r.Phases[i]) })
		}
		m := phaseResult{
			Name:             p.Name,
			Requests:         int(math.Round(phase(func(p phaseResult) float64 { return float64(p.Requests) }))),
			Errors:           int(math.Round(phase(func(p phaseResult) float64 { return float64(p.Errors) }))),
			Seconds:          phase(func(p phaseResult) float64 { return p.Seconds }),
			RPS:              phase(func(p phaseResult) float64 { return p.RPS }),
			P50Ms:            phase(func(p phaseResult) float64 { return p.P50Ms }),
			P90Ms:            phase(func(p phaseResult) float64 { return p.P90Ms }),
			P99Ms:            phase(func(p phaseResult) float64 { return p.P99Ms }),
			ServerCPUSeconds: phase(func(p phaseResult) float64 { return p.ServerCPUSeconds }),
			ClientCPUSeconds: phase(func(p phaseResult) float64 { return p.ClientCPUSeconds }),
		}
		for _, r := range runs {
			m.TimedOut = m.TimedOut || r.Phases[i].TimedOut
		}
		out.Phases = append(out.Phases, m)
	}
	return out
}

func printRun(w io.Writer, r runResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if s := r.Server; s != nil {
		fmt.Fprintf(tw, "start-to-ready\tidle RSS before load\tidle RSS after load\tpeak RSS\tstop after SIGTERM\t\n")
		fmt.Fprintf(tw, "%.0f ms\t%.1f MiB\t%.1f MiB\t%.1f MiB\t%.0f ms\t\n",
			s.StartToReadyMs, s.IdleRSSBeforeMiB, s.IdleRSSAfterMiB, s.PeakRSSMiB, s.StopAfterSIGTERMs)
		fmt.Fprintln(tw)
	}
	fmt.Fprintf(tw, "phase\trequests\terrors\tseconds\trps\tp50 ms\tp90 ms\tp99 ms\tserver cpu s\tclient cpu s\t\n")
	for _, p := range r.Phases {
		serverCPU := "-"
		if r.Server != nil {
			serverCPU = fmt.Sprintf("%.2f", p.ServerCPUSeconds)
		}
		name := p.Name
		if p.TimedOut {
			name += " (timed out)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.2f\t%.0f\t%.2f\t%.2f\t%.2f\t%s\t%.2f\t\n",
			name, p.Requests, p.Errors, p.Seconds, p.RPS, p.P50Ms, p.P90Ms, p.P99Ms, serverCPU, p.ClientCPUSeconds)
	}
	tw.Flush()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// firstLine keeps error texts in the one-line table and JSON fields readable.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
