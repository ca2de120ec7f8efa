// Command agentload measures `idplane agent` with many pods on one node: how long after a pod is
// created bound to the node its service-account token file is on disk, how many requests the
// agent sends the server once every pod has its files, and the agent's CPU and memory.
//
// Every run launches a fresh `idplane server` with an audit log of the node's requests, joins
// one agent to it with a bootstrap token, creates the pods at a fixed rate and then watches a
// steady window in which nothing changes. Both processes and their files go when the run ends.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/idplane/idplane/bench/internal/loadphase"
	"github.com/idplane/idplane/bench/internal/toolmain"
)

// defaultTokenSeconds is the lifetime of the token in the kube-api-access volume the
// ServiceAccount admission plugin adds.
const defaultTokenSeconds = 3607

// refreshAt is the share of a token's lifetime after which the agent gets a new one.
const refreshAt = 0.8

type config struct {
	idplane      string
	pods         int
	namespaces   int
	rate         float64
	inflight     int
	steady       time.Duration
	tokenSeconds int
	// podCertificate, when set, is the signer of a podCertificate source every pod's own volume
	// also carries; the time measured is then to its credential bundle.
	podCertificate string
	// restartWindow, when set, restarts the agent after the steady window and counts the node's
	// requests for this long after.
	restartWindow time.Duration
	nodeName      string
	fileTimeout   time.Duration
	startTimeout  time.Duration
	runs          int
	jsonFile      string
	keep          bool
}

// lifetime is the pods' token lifetime.
func (c config) lifetime() time.Duration {
	if c.tokenSeconds == 0 {
		return defaultTokenSeconds * time.Second
	}
	return time.Duration(c.tokenSeconds) * time.Second
}

// expectedRefreshesPerMinute is the rate of token requests once the pods' refreshes have spread
// out: each pod asks again after refreshAt of the lifetime.
func (c config) expectedRefreshesPerMinute() float64 {
	return float64(c.pods) / (refreshAt * c.lifetime().Minutes())
}

// runResult holds the figures of one run.
type runResult struct {
	ServerStartMs           float64         `json:"serverStartToReadyMs"`
	AgentStartToNodeReadyMs float64         `json:"agentStartToNodeReadyMs"`
	AgentIdleRSSMiB         float64         `json:"agentIdleRSSBeforePodsMiB"`
	Ramp                    rampFigures     `json:"ramp"`
	Steady                  steadyFigures   `json:"steady"`
	Restart                 *restartFigures `json:"restart,omitempty"`

	rampFrom, rampTo, steadyFrom, steadyTo, restartFrom, restartTo time.Time
}

// rampFigures are those of creating the pods.
type rampFigures struct {
	Pods          int     `json:"pods"`
	Errors        int     `json:"errors"`
	Seconds       float64 `json:"seconds"`
	PodsPerSecond float64 `json:"podsPerSecond"`
	// P50Ms to MaxMs are the time from a create's response to the pod's token file on disk.
	P50Ms           float64 `json:"boundToTokenP50Ms"`
	P90Ms           float64 `json:"boundToTokenP90Ms"`
	P99Ms           float64 `json:"boundToTokenP99Ms"`
	MaxMs           float64 `json:"boundToTokenMaxMs"`
	AgentCPUSeconds float64 `json:"agentCPUSeconds"`
	AgentCPUPercent float64 `json:"agentCPUPercentOfOneCore"`
	// Requests are the node's requests received while the pods were created.
	Requests         int     `json:"nodeRequests"`
	RequestsPerPod   float64 `json:"nodeRequestsPerPod"`
	MachineLoadAvg1m float64 `json:"machineLoadAvg1m"`
	FirstError       string  `json:"firstError,omitempty"`
}

// steadyFigures are those of the window after every pod had its token file.
type steadyFigures struct {
	Seconds  float64       `json:"seconds"`
	Requests requestCounts `json:"nodeRequests"`
	// RequestsPerMinute and ByKindPerMinute are the node's requests received in the window.
	RequestsPerMinute          float64            `json:"nodeRequestsPerMinute"`
	ByKindPerMinute            map[string]float64 `json:"nodeRequestsPerMinuteByKind"`
	ExpectedRefreshesPerMinute float64            `json:"expectedTokenRefreshesPerMinute"`
	AgentCPUPercent            float64            `json:"agentCPUPercentOfOneCore"`
	AgentRSSMiB                float64            `json:"agentRSSMiB"`
	// AgentAnonMiB is the part of the RSS that is heap and stacks rather than the binary's pages.
	AgentAnonMiB     float64 `json:"agentRSSAnonMiB"`
	AgentHWMMiB      float64 `json:"agentPeakRSSMiB"`
	CredentialsReady int     `json:"podsCredentialsReady"`
	MachineLoadAvg1m float64 `json:"machineLoadAvg1m"`
}

// addRequests counts the node's requests in the run's ramp and steady window.
func (r *runResult) addRequests(reqs []request, cfg config) {
	ramp := countWindow(reqs, r.rampFrom, r.rampTo)
	r.Ramp.Requests = ramp.Total
	if r.Ramp.Pods > 0 {
		r.Ramp.RequestsPerPod = float64(ramp.Total) / float64(r.Ramp.Pods)
	}
	s := countWindow(reqs, r.steadyFrom, r.steadyTo)
	minutes := r.steadyTo.Sub(r.steadyFrom).Minutes()
	r.Steady.Requests = s
	r.Steady.RequestsPerMinute = float64(s.Total) / minutes
	r.Steady.ByKindPerMinute = map[string]float64{}
	for k, n := range s.ByKind {
		r.Steady.ByKindPerMinute[k] = float64(n) / minutes
	}
	r.Steady.ExpectedRefreshesPerMinute = cfg.expectedRefreshesPerMinute()
	if r.Restart != nil {
		c := countWindow(reqs, r.restartFrom, r.restartTo)
		r.Restart.Requests = c.Total
		r.Restart.TokenRequests = c.ByKind[kindTokenRequest]
		r.Restart.PodCertificateRequests = c.ByKind[kindPodCertificateRequest]
		r.Restart.ByKind = c.ByKind
	}
}

// The kinds of request a restarted agent should not make for what it already holds.
const (
	kindTokenRequest          = "create serviceaccounts/token"
	kindPodCertificateRequest = "create podcertificaterequests.certificates.k8s.io"
)

// restartFigures are those of the window after the agent was restarted.
type restartFigures struct {
	Seconds                float64        `json:"seconds"`
	Requests               int            `json:"nodeRequests"`
	TokenRequests          int            `json:"tokenRequests"`
	PodCertificateRequests int            `json:"podCertificateRequests"`
	ByKind                 map[string]int `json:"nodeRequestsByKind"`
}

type report struct {
	Binary         string      `json:"binary"`
	Pods           int         `json:"pods"`
	Namespaces     int         `json:"namespaces"`
	Rate           float64     `json:"podsPerSecondAsked"`
	TokenSeconds   int         `json:"tokenSeconds"`
	PodCertificate string      `json:"podCertificateSigner,omitempty"`
	Runs           []runResult `json:"runs"`
	Median         runResult   `json:"median"`
}

func main() { toolmain.Main("agentload", parseFlags, run) }

func run(ctx context.Context, cfg config) error {
	runs, med, err := toolmain.Repeat(ctx, "agentload", cfg.runs, os.Stdout,
		func(ctx context.Context) (runResult, error) { return measure(ctx, cfg) }, medianRun, printRun)
	if err != nil {
		return err
	}
	if cfg.jsonFile != "" {
		rep := report{
			Binary: cfg.idplane, Pods: cfg.pods, Namespaces: cfg.namespaces, Rate: cfg.rate,
			TokenSeconds: int(cfg.lifetime().Seconds()), PodCertificate: cfg.podCertificate, Runs: runs, Median: med,
		}
		if err := toolmain.WriteJSON(cfg.jsonFile, rep); err != nil {
			return err
		}
	}
	var errs []error
	for i, r := range runs {
		if r.Ramp.Errors > 0 {
			errs = append(errs, fmt.Errorf("run %d: %d pods without a token file; first: %s", i+1, r.Ramp.Errors, r.Ramp.FirstError))
		}
	}
	return errors.Join(errs...)
}

func parseFlags(args []string) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("agentload", flag.ContinueOnError)
	fs.StringVar(&cfg.idplane, "idplane", "./idplane", "idplane binary; every run launches its server and agent")
	fs.IntVar(&cfg.pods, "pods", 1000, "pods bound to the agent's node")
	fs.IntVar(&cfg.namespaces, "namespaces", 10, "namespaces the pods are spread over, one service account each")
	fs.Float64Var(&cfg.rate, "rate", 50, "pods created per second")
	fs.IntVar(&cfg.inflight, "inflight", 200, "most pods created and not yet with their token file at once; more wait, lowering the rate")
	fs.DurationVar(&cfg.steady, "steady", 3*time.Minute, "length of the steady window after every pod has its token file")
	fs.DurationVar(&cfg.restartWindow, "restart-window", 0, "restart the agent after the steady window and count the node's requests (tokens, PodCertificateRequests) this long after; 0 skips the restart")
	fs.StringVar(&cfg.podCertificate, "pod-certificate", "", "signer of a podCertificate source (ECDSA P-256 credential bundle) added to every pod's own token volume, e.g. idplane.io/spiffe; the time measured is then create → bundle file")
	fs.IntVar(&cfg.tokenSeconds, "token-seconds", 3600, "expirationSeconds of the pods' own projected token volume; 0 uses the kube-api-access volume the ServiceAccount admission plugin adds (3607 s)")
	fs.StringVar(&cfg.nodeName, "node-name", "bench-node", "name of the agent's node")
	fs.DurationVar(&cfg.fileTimeout, "file-timeout", time.Minute, "a pod whose token file is not there this long after its creation counts as an error")
	fs.DurationVar(&cfg.startTimeout, "start-timeout", 2*time.Minute, "give up when the server is not ready, or the agent's Node not Ready, by then")
	fs.IntVar(&cfg.runs, "runs", 1, "repeat the whole measurement this many times and report the median of each figure")
	fs.BoolVar(&cfg.keep, "keep", false, "keep each run's temporary directory: server and agent logs, audit log, the agent's files")
	fs.StringVar(&cfg.jsonFile, "json", "", "also write all runs and the medians as JSON to this file")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	var errs []error
	if fs.NArg() > 0 {
		errs = append(errs, fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	if cfg.idplane == "" {
		errs = append(errs, errors.New("-idplane is required"))
	}
	if cfg.pods < 1 || cfg.namespaces < 1 || cfg.inflight < 1 || cfg.runs < 1 {
		errs = append(errs, errors.New("-pods, -namespaces, -inflight and -runs must be at least 1"))
	}
	if cfg.rate <= 0 {
		errs = append(errs, errors.New("-rate must be positive"))
	}
	if cfg.steady <= 0 || cfg.fileTimeout <= 0 || cfg.startTimeout <= 0 {
		errs = append(errs, errors.New("-steady, -file-timeout and -start-timeout must be positive"))
	}
	// The API refuses projected tokens shorter than ten minutes.
	if cfg.podCertificate != "" && cfg.tokenSeconds == 0 {
		errs = append(errs, errors.New("-pod-certificate needs the pods' own volume: -token-seconds must not be 0"))
	}
	if cfg.tokenSeconds != 0 && cfg.tokenSeconds < 600 {
		errs = append(errs, errors.New("-token-seconds must be 0 or at least 600"))
	}
	if cfg.nodeName == "" {
		errs = append(errs, errors.New("-node-name must not be empty"))
	}
	return cfg, errors.Join(errs...)
}

// medianRun takes every figure's median across runs; a request kind missing from a run counts
// as zero there.
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
	count := func(f func(runResult) int) int {
		return int(of(func(r runResult) float64 { return float64(f(r)) }) + 0.5)
	}
	m := runResult{
		ServerStartMs:           of(func(r runResult) float64 { return r.ServerStartMs }),
		AgentStartToNodeReadyMs: of(func(r runResult) float64 { return r.AgentStartToNodeReadyMs }),
		AgentIdleRSSMiB:         of(func(r runResult) float64 { return r.AgentIdleRSSMiB }),
		Ramp: rampFigures{
			Pods:             count(func(r runResult) int { return r.Ramp.Pods }),
			Errors:           count(func(r runResult) int { return r.Ramp.Errors }),
			Seconds:          of(func(r runResult) float64 { return r.Ramp.Seconds }),
			PodsPerSecond:    of(func(r runResult) float64 { return r.Ramp.PodsPerSecond }),
			P50Ms:            of(func(r runResult) float64 { return r.Ramp.P50Ms }),
			P90Ms:            of(func(r runResult) float64 { return r.Ramp.P90Ms }),
			P99Ms:            of(func(r runResult) float64 { return r.Ramp.P99Ms }),
			MaxMs:            of(func(r runResult) float64 { return r.Ramp.MaxMs }),
			AgentCPUSeconds:  of(func(r runResult) float64 { return r.Ramp.AgentCPUSeconds }),
			AgentCPUPercent:  of(func(r runResult) float64 { return r.Ramp.AgentCPUPercent }),
			Requests:         count(func(r runResult) int { return r.Ramp.Requests }),
			RequestsPerPod:   of(func(r runResult) float64 { return r.Ramp.RequestsPerPod }),
			MachineLoadAvg1m: of(func(r runResult) float64 { return r.Ramp.MachineLoadAvg1m }),
		},
		Steady: steadyFigures{
			Seconds: of(func(r runResult) float64 { return r.Steady.Seconds }),
			Requests: requestCounts{
				Total:  count(func(r runResult) int { return r.Steady.Requests.Total }),
				Failed: count(func(r runResult) int { return r.Steady.Requests.Failed }),
			},
			RequestsPerMinute:          of(func(r runResult) float64 { return r.Steady.RequestsPerMinute }),
			ByKindPerMinute:            map[string]float64{},
			ExpectedRefreshesPerMinute: runs[0].Steady.ExpectedRefreshesPerMinute,
			AgentCPUPercent:            of(func(r runResult) float64 { return r.Steady.AgentCPUPercent }),
			AgentRSSMiB:                of(func(r runResult) float64 { return r.Steady.AgentRSSMiB }),
			AgentAnonMiB:               of(func(r runResult) float64 { return r.Steady.AgentAnonMiB }),
			AgentHWMMiB:                of(func(r runResult) float64 { return r.Steady.AgentHWMMiB }),
			CredentialsReady:           count(func(r runResult) int { return r.Steady.CredentialsReady }),
			MachineLoadAvg1m:           of(func(r runResult) float64 { return r.Steady.MachineLoadAvg1m }),
		},
	}
	if runs[0].Restart != nil {
		m.Restart = &restartFigures{
			Seconds:                of(func(r runResult) float64 { return r.Restart.Seconds }),
			Requests:               count(func(r runResult) int { return r.Restart.Requests }),
			TokenRequests:          count(func(r runResult) int { return r.Restart.TokenRequests }),
			PodCertificateRequests: count(func(r runResult) int { return r.Restart.PodCertificateRequests }),
		}
	}
	kinds := map[string]bool{}
	for _, r := range runs {
		for k := range r.Steady.ByKindPerMinute {
			kinds[k] = true
		}
	}
	for k := range kinds {
		m.Steady.ByKindPerMinute[k] = of(func(r runResult) float64 { return r.Steady.ByKindPerMinute[k] })
	}
	return m
}

func printRun(w io.Writer, r runResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "server start-to-ready\tagent start-to-Node-Ready\tagent idle RSS\t\n")
	fmt.Fprintf(tw, "%.0f ms\t%.0f ms\t%.1f MiB\t\n", r.ServerStartMs, r.AgentStartToNodeReadyMs, r.AgentIdleRSSMiB)
	fmt.Fprintln(tw)

	p := r.Ramp
	fmt.Fprintf(tw, "pods\terrors\tseconds\tpods/s\tbound→token p50\tp90\tp99\tmax\tagent cpu\tnode requests/pod\tload 1m\t\n")
	fmt.Fprintf(tw, "%d\t%d\t%.1f\t%.1f\t%.1f ms\t%.1f ms\t%.1f ms\t%.1f ms\t%.0f%%\t%.2f\t%.2f\t\n",
		p.Pods, p.Errors, p.Seconds, p.PodsPerSecond, p.P50Ms, p.P90Ms, p.P99Ms, p.MaxMs,
		p.AgentCPUPercent, p.RequestsPerPod, p.MachineLoadAvg1m)
	fmt.Fprintln(tw)

	s := r.Steady
	fmt.Fprintf(tw, "steady window\tnode requests/min\texpected refreshes/min\tfailed\tagent cpu\tagent RSS\tof it anon\tagent peak RSS\tCredentialsReady\tload 1m\t\n")
	fmt.Fprintf(tw, "%.0f s\t%.1f\t%.1f\t%d\t%.2f%%\t%.1f MiB\t%.1f MiB\t%.1f MiB\t%d\t%.2f\t\n",
		s.Seconds, s.RequestsPerMinute, s.ExpectedRefreshesPerMinute, s.Requests.Failed,
		s.AgentCPUPercent, s.AgentRSSMiB, s.AgentAnonMiB, s.AgentHWMMiB, s.CredentialsReady, s.MachineLoadAvg1m)
	if rs := r.Restart; rs != nil {
		fmt.Fprintln(tw)
		fmt.Fprintf(tw, "after a restart\tnode requests\ttoken requests\tPodCertificateRequests\t\n")
		fmt.Fprintf(tw, "%.0f s\t%d\t%d\t%d\t\n", rs.Seconds, rs.Requests, rs.TokenRequests, rs.PodCertificateRequests)
	}
	tw.Flush()
	if rs := r.Restart; rs != nil && len(rs.ByKind) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "node requests after the restart\tcount\n")
		for _, k := range slices.Sorted(maps.Keys(rs.ByKind)) {
			fmt.Fprintf(tw, "%s\t%d\n", k, rs.ByKind[k])
		}
		tw.Flush()
	}

	if len(s.ByKindPerMinute) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "steady node requests\tper min\n")
	kinds := slices.Sorted(maps.Keys(s.ByKindPerMinute))
	slices.SortStableFunc(kinds, func(a, b string) int {
		switch x, y := s.ByKindPerMinute[a], s.ByKindPerMinute[b]; {
		case x > y:
			return -1
		case x < y:
			return 1
		}
		return 0
	})
	for _, k := range kinds {
		fmt.Fprintf(tw, "%s\t%.2f\n", k, s.ByKindPerMinute[k])
	}
	tw.Flush()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
