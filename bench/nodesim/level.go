package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/idplane/idplane/bench/internal/procstat"
)

// rssSampleEvery is how often process memory is read during the steady window.
const rssSampleEvery = 2 * time.Second

// levelResult holds what one level measured.
type levelResult struct {
	Replicas int `json:"replicas"`
	Nodes    int `json:"nodes"`
	Pods     int `json:"pods"`
	// Watches is how many watches the nodes hold open: their pods, and one per object a node's
	// pods read.
	Watches int          `json:"watches"`
	Setup   setupFigures `json:"setup"`
	// StartupSeconds runs from the first node's start to the last one's readiness; Ready counts
	// the nodes that got there.
	StartupSeconds float64       `json:"startupSeconds"`
	Ready          int           `json:"ready"`
	Startup        phaseFigures  `json:"startup"`
	Steady         phaseFigures  `json:"steady"`
	Servers        []procFigures `json:"servers"`
	// Etcd are the etcd members' processes; empty for a single server, whose etcd is inside it.
	Etcd             []procFigures `json:"etcd,omitempty"`
	ClientCPUPercent float64       `json:"clientCPUPercent"`
	ClientRSSMiB     float64       `json:"clientRSSMiB"`
	Errors           []errorCount  `json:"errors,omitempty"`
	// SlowSeconds are the seconds of the steady window in which requests took the threshold or
	// longer, with how many did.
	SlowSeconds []slowSecond `json:"slowSeconds,omitempty"`
	// LoadAverage is the machine's one-minute load average at the start and at the end of the
	// steady window: other work on the machine shows up here.
	LoadAverage [2]float64 `json:"loadAverage"`
	// LogDir keeps the servers' logs when -keep-logs is set.
	LogDir  string `json:"logDir,omitempty"`
	Pass    bool   `json:"pass"`
	Verdict string `json:"verdict"`
}

type phaseFigures struct {
	Seconds float64       `json:"seconds"`
	All     kindFigures   `json:"all"`
	Kinds   []kindFigures `json:"kinds"`
}

// procFigures are one process's memory and CPU.
type procFigures struct {
	// IdleRSSMiB is read after the setup, before any node starts: the objects alone.
	IdleRSSMiB float64 `json:"idleRSSMiB"`
	// RSSMiB is read at the end of the steady window, PeakRSSMiB is the largest reading in it.
	RSSMiB     float64 `json:"rssMiB"`
	PeakRSSMiB float64 `json:"peakRSSMiB"`
	// CPUPercent is the share of one core the process used during the steady window.
	CPUPercent float64 `json:"cpuPercent"`
}

func runLevel(ctx context.Context, cfg config, nodes int) (levelResult, error) {
	p := cfg.plan(nodes)
	res := levelResult{Replicas: cfg.replicas, Nodes: nodes, Pods: p.pods()}
	dir, err := os.MkdirTemp("", "nodesim-")
	if err != nil {
		return res, fmt.Errorf("creating a temporary directory: %w", err)
	}
	if cfg.keepLogs {
		res.LogDir = dir
	} else {
		defer os.RemoveAll(dir)
	}
	c, err := startCluster(ctx, cfg.idplane, cfg.replicas, dir, cfg.startTimeout)
	if err != nil {
		return res, err
	}
	res, err = measureLevel(ctx, cfg, p, c, res)
	if cfg.keepLogs {
		// The data directories are what fills the disk; the logs are what tells a story.
		for i := range c.servers {
			defer os.RemoveAll(serverDataDir(c.dir, i))
		}
		defer os.RemoveAll(filepath.Join(dir, "etcd", "members"))
	}
	if stopErr := c.stop(); stopErr != nil && err == nil {
		err = fmt.Errorf("stopping the servers: %w", stopErr)
	}
	return res, err
}

func measureLevel(ctx context.Context, cfg config, p plan, c *cluster, res levelResult) (levelResult, error) {
	var err error
	if res.Setup, err = createObjects(ctx, c.admin, p, cfg.payload, cfg.setupTimeout); err != nil {
		return res, err
	}
	fmt.Fprintf(os.Stderr, "nodesim: created %d objects in %.1f s\n", res.Setup.Objects, res.Setup.Seconds)
	serverPIDs, etcdPIDs, err := c.processes()
	if err != nil {
		return res, err
	}
	pids := append(append([]int(nil), serverPIDs...), etcdPIDs...)
	idle, err := readRSS(pids)
	if err != nil {
		return res, err
	}

	rec := newRecorder()
	rec.setPhase(phaseStartup)
	sims, err := buildNodes(c, p, cfg, rec)
	if err != nil {
		return res, err
	}
	nodeCtx, stopNodes := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		stopNodes()
		wg.Wait()
	}()
	var ready atomic.Int64
	allReady := make(chan struct{})
	begin := time.Now()
	for i, n := range sims {
		startAt := begin.Add(time.Duration(int64(cfg.ramp) * int64(i) / int64(len(sims))))
		wg.Go(func() {
			if !pause(nodeCtx, time.Until(startAt)) {
				return
			}
			n.run(nodeCtx, func() {
				if ready.Add(1) == int64(len(sims)) {
					close(allReady)
				}
			})
		})
	}
	select {
	case <-allReady:
	case <-time.After(cfg.readyTimeout):
	case <-ctx.Done():
		return res, ctx.Err()
	}
	res.StartupSeconds = time.Since(begin).Seconds()
	res.Ready = int(ready.Load())
	res.Startup.Seconds = res.StartupSeconds
	res.Startup.All, res.Startup.Kinds = rec.summary(phaseStartup, time.Since(begin))
	for _, n := range sims {
		n.mu.Lock()
		res.Watches += len(n.watches) + 1
		n.mu.Unlock()
	}
	fmt.Fprintf(os.Stderr, "nodesim: %d of %d nodes ready after %.1f s\n", res.Ready, len(sims), res.StartupSeconds)
	if res.Ready < len(sims) {
		res.Errors = rec.errorsSeen()
		res.Verdict = fmt.Sprintf("only %d of %d nodes ready within %s", res.Ready, len(sims), cfg.readyTimeout)
		return res, nil
	}

	if !pause(ctx, cfg.settle) {
		return res, ctx.Err()
	}
	rec.setPhase(phaseSteady)
	cpu0, err := readCPU(pids)
	if err != nil {
		return res, err
	}
	client0 := procstat.SelfCPU()
	res.LoadAverage[0] = loadAverage()
	windowBegin := time.Now()
	peaks := make([]int64, len(pids))
	last := make([]int64, len(pids))
	tick := time.NewTicker(rssSampleEvery)
	end := time.NewTimer(cfg.duration)
	defer tick.Stop()
	defer end.Stop()
sampling:
	for {
		select {
		case <-tick.C:
		case <-end.C:
			break sampling
		case <-ctx.Done():
			return res, ctx.Err()
		}
		if err := sampleRSS(pids, last, peaks); err != nil {
			return res, err
		}
	}
	if err := sampleRSS(pids, last, peaks); err != nil {
		return res, err
	}
	rec.setPhase(phaseDone)
	window := time.Since(windowBegin)
	res.LoadAverage[1] = loadAverage()
	cpu1, err := readCPU(pids)
	if err != nil {
		return res, err
	}
	res.ClientCPUPercent = 100 * (procstat.SelfCPU() - client0).Seconds() / window.Seconds()
	if self, err := procstat.ReadMemory(os.Getpid()); err == nil {
		res.ClientRSSMiB = procstat.MiB(self.RSS)
	}
	procs := make([]procFigures, len(pids))
	for i := range pids {
		procs[i] = procFigures{
			IdleRSSMiB: procstat.MiB(idle[i]), RSSMiB: procstat.MiB(last[i]), PeakRSSMiB: procstat.MiB(peaks[i]),
			CPUPercent: 100 * (cpu1[i] - cpu0[i]).Seconds() / window.Seconds(),
		}
	}
	res.Servers, res.Etcd = procs[:len(serverPIDs)], procs[len(serverPIDs):]
	res.Steady.Seconds = window.Seconds()
	res.Steady.All, res.Steady.Kinds = rec.summary(phaseSteady, window)
	res.Errors = rec.errorsSeen()
	res.SlowSeconds = rec.slow(phaseSteady, windowBegin, cfg.threshold)
	res.Pass, res.Verdict = verdict(res.Steady, cfg.threshold)
	return res, nil
}

// buildNodes issues every node its certificate and client, spread over the servers round-robin.
func buildNodes(c *cluster, p plan, cfg config, rec *recorder) ([]*simNode, error) {
	settings := clientSettings{caPEM: c.caPEM, qps: float32(cfg.qps), burst: cfg.burst, rec: rec}
	now := time.Now()
	sims := make([]*simNode, p.nodes)
	for i := range p.nodes {
		name := p.nodeName(i)
		certPEM, keyPEM, err := nodeCertificate(c.ca, name, now)
		if err != nil {
			return nil, err
		}
		cs, err := kubernetes.NewForConfig(nodeRESTConfig(c.hosts[i%len(c.hosts)], certPEM, keyPEM, settings))
		if err != nil {
			return nil, fmt.Errorf("building the client of node %s: %w", name, err)
		}
		sims[i] = newSimNode(name, cs, cfg.nodeConfig(), rec)
	}
	return sims, nil
}

// verdict says whether a steady window passes: no errors, and the p99 of every kind of request
// but watches under threshold.
func verdict(steady phaseFigures, threshold time.Duration) (bool, string) {
	limit := ms(threshold)
	var reasons []string
	for _, k := range steady.Kinds {
		if k.Errors > 0 {
			reasons = append(reasons, fmt.Sprintf("%d errors in %s", k.Errors, k.Kind))
		}
		if !k.Watch && k.P99Ms >= limit {
			reasons = append(reasons, fmt.Sprintf("%s p99 %.1f ms", k.Kind, k.P99Ms))
		}
	}
	if steady.All.Requests == 0 {
		reasons = append(reasons, "no requests in the steady window")
	}
	if len(reasons) > 0 {
		return false, strings.Join(reasons, "; ")
	}
	return true, fmt.Sprintf("every p99 under %s", threshold)
}

func readRSS(pids []int) ([]int64, error) {
	out := make([]int64, len(pids))
	for i, pid := range pids {
		m, err := procstat.ReadMemory(pid)
		if err != nil {
			return nil, err
		}
		out[i] = m.RSS
	}
	return out, nil
}

func sampleRSS(pids []int, last, peaks []int64) error {
	now, err := readRSS(pids)
	if err != nil {
		return err
	}
	for i, v := range now {
		last[i] = v
		peaks[i] = max(peaks[i], v)
	}
	return nil
}

func readCPU(pids []int) ([]time.Duration, error) {
	out := make([]time.Duration, len(pids))
	for i, pid := range pids {
		d, err := procstat.CPU(pid)
		if err != nil {
			return nil, err
		}
		out[i] = d
	}
	return out, nil
}

// loadAverage is the one-minute load average, or 0 when /proc/loadavg cannot be read.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _, _ := strings.Cut(string(b), " ")
	v, err := strconv.ParseFloat(f, 64)
	if err != nil {
		return 0
	}
	return v
}
