package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/idplane/idplane/bench/internal/procstat"
)

// rssSampleEvery is how often process memory is read during the steady window.
const rssSampleEvery = 2 * time.Second

// levelResult holds what one level measured.
type levelResult struct {
	// Target is "started" for servers the tool started, else the foreign server's URL.
	Target   string `json:"target"`
	Replicas int    `json:"replicas"`
	Nodes    int    `json:"nodes"`
	Pods     int    `json:"pods"`
	// Watches is how many watches the nodes' agents held open at the end of the level (at the
	// end of the start-up when the level did not get further).
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
	Etcd []procFigures `json:"etcd,omitempty"`
	// ServerRSSPerNodeKiB and ServerRSSPerWatchKiB are the servers' RSS growth from the objects
	// alone to the end of the window, per node and per open watch; null when the server's RSS
	// is unknown (a foreign server whose /metrics the admin may not read).
	ServerRSSPerNodeKiB  *float64 `json:"serverRSSPerNodeKiB"`
	ServerRSSPerWatchKiB *float64 `json:"serverRSSPerWatchKiB"`
	// MemoryNote says where the servers' memory was read, or why it was not.
	MemoryNote string `json:"memoryNote"`
	// Held is the servers' live memory the nodes' connections and watches held, measured by
	// stopping the nodes at the end of the window; null when a server would not tell (HeldNote
	// says why) or the level ended before its window.
	Held             *heldFigures `json:"held"`
	HeldNote         string       `json:"heldNote,omitempty"`
	ClientCPUPercent float64      `json:"clientCPUPercent"`
	ClientRSSMiB     float64      `json:"clientRSSMiB"`
	// ClientIdleRSSMiB is the tool's RSS before any node starts; ClientRSSPerNodeKiB its growth
	// from then to the end of the window per node, and ClientGoroutines its goroutines at that
	// end: what one simulated node costs the machine that runs the fleet.
	ClientIdleRSSMiB    float64      `json:"clientIdleRSSMiB"`
	ClientRSSPerNodeKiB *float64     `json:"clientRSSPerNodeKiB"`
	ClientGoroutines    int          `json:"clientGoroutines"`
	Errors              []errorCount `json:"errors,omitempty"`
	// SlowSeconds are the seconds of the steady window in which requests took the threshold or
	// longer, with how many did.
	SlowSeconds []slowSecond `json:"slowSeconds,omitempty"`
	// LoadAverage is the machine's one-minute load average at the start and at the end of the
	// steady window: other work on the machine shows up here.
	LoadAverage [2]float64 `json:"loadAverage"`
	// PodCertificates are the figures of the pods' certificates, with -pod-certificate.
	PodCertificates *podCertFigures `json:"podCertificates,omitempty"`
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
	// CPUPercent is the share of one core the process used during the steady window; null when
	// the process is not the tool's to read (a foreign server).
	CPUPercent *float64 `json:"cpuPercent"`
}

func runLevel(ctx context.Context, cfg config, nodes int) (levelResult, error) {
	p := cfg.plan(nodes)
	res := levelResult{Target: "started", Replicas: cfg.replicas, Nodes: nodes, Pods: p.pods()}
	dir, err := os.MkdirTemp("", "nodesim-")
	if err != nil {
		return res, fmt.Errorf("creating a temporary directory: %w", err)
	}
	if cfg.keepLogs {
		res.LogDir = dir
	} else {
		defer os.RemoveAll(dir)
	}
	scratch := filepath.Join(dir, "nodes")
	if cfg.scratchRoot != "" {
		scratch = filepath.Join(cfg.scratchRoot, fmt.Sprintf("level-%d", nodes))
	} else if cfg.keepLogs {
		defer os.RemoveAll(scratch)
	}
	var c *cluster
	if cfg.kubeconfig != "" {
		if c, err = connectCluster(cfg.kubeconfig, cfg.clientCACert, cfg.clientCAKey); err != nil {
			return res, err
		}
		res.Target, res.Replicas = c.bases[0].Host, 0
		// The names of a level outlive it on a server the tool did not start.
		p.prefix = fmt.Sprintf("nodesim-%s", randomSuffix())
		defer cleanUp(c.admin, p)
	} else if c, err = startCluster(ctx, cfg.idplane, cfg.replicas, dir, cfg.startTimeout); err != nil {
		return res, err
	}
	res, err = measureLevel(ctx, cfg, p, c, scratch, res)
	if cfg.keepLogs && !c.foreign {
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

// memory reads the servers' and etcd members' RSS: from /proc for processes the tool started,
// from the server's /metrics otherwise.
type memory struct {
	servers, etcd []int
	admin         kubernetes.Interface
	foreign       bool
}

func (m memory) read(ctx context.Context) ([]int64, error) {
	if !m.foreign {
		return readRSS(append(append([]int(nil), m.servers...), m.etcd...))
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := scrapeRSS(ctx, m.admin)
	if err != nil {
		return nil, err
	}
	return []int64{v}, nil
}

func measureLevel(ctx context.Context, cfg config, p plan, c *cluster, scratch string, res levelResult) (levelResult, error) {
	var err error
	if res.Setup, err = createObjects(ctx, c.admin, p, cfg.payload, cfg.setupTimeout); err != nil {
		return res, err
	}
	fmt.Fprintf(os.Stderr, "nodesim: created %d objects in %.1f s\n", res.Setup.Objects, res.Setup.Seconds)
	mem := memory{admin: c.admin, foreign: c.foreign}
	if !c.foreign {
		if mem.servers, mem.etcd, err = c.processes(); err != nil {
			return res, err
		}
	}
	idle, err := mem.read(ctx)
	switch {
	case err == nil && c.foreign:
		res.MemoryNote = "the server's " + residentMemoryMetric + " from /metrics"
	case err == nil:
		res.MemoryNote = "the processes' RSS from /proc"
	case c.foreign:
		// A server may refuse /metrics to the admin, or not export the gauge: memory is then
		// unknown, and the level still measures requests.
		res.MemoryNote = fmt.Sprintf("n/a: %v", err)
		fmt.Fprintf(os.Stderr, "nodesim: server memory n/a: %v\n", err)
	default:
		return res, err
	}
	haveMemory := err == nil
	clientIdle, clientIdleErr := procstat.ReadMemory(os.Getpid())
	if clientIdleErr == nil {
		res.ClientIdleRSSMiB = procstat.MiB(clientIdle.RSS)
	}

	// The servers' own watches, before the tool's and the nodes' open: the count the nodes'
	// watches must fall back to once they stop.
	baseline, baselineErr := baselineWatches(ctx, c.metrics)

	rec := newRecorder()
	rec.setPhase(phaseStartup)
	readyCtx, stopReadiness := context.WithCancel(ctx)
	defer stopReadiness()
	tracker, err := watchReadiness(readyCtx, c.admin, p)
	if err != nil {
		return res, err
	}
	sims, err := buildNodes(c, p, cfg, scratch, rec)
	if err != nil {
		return res, err
	}
	nodeCtx, stopNodes := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		stopNodes()
		wg.Wait()
	}()
	begin := time.Now()
	for i, n := range sims {
		startAt := begin.Add(time.Duration(int64(cfg.ramp) * int64(i) / int64(len(sims))))
		wg.Go(func() {
			if pause(nodeCtx, time.Until(startAt)) {
				tracker.nodeStarting(n.name)
				n.run(nodeCtx, rec)
			}
		})
	}
	select {
	case <-tracker.allReady:
	case <-time.After(cfg.readyTimeout):
	case <-ctx.Done():
		return res, ctx.Err()
	}
	res.StartupSeconds = time.Since(begin).Seconds()
	res.Ready = tracker.readyNodes()
	res.Startup.Seconds = res.StartupSeconds
	startupEnded := time.Since(begin)
	res.Watches = int(rec.openWatches.Load())
	fmt.Fprintf(os.Stderr, "nodesim: %d of %d nodes ready after %.1f s\n", res.Ready, len(sims), res.StartupSeconds)
	if res.Ready < len(sims) {
		res.Startup.All, res.Startup.Kinds = rec.summary(phaseStartup, startupEnded)
		res.Errors = rec.errorsSeen()
		res.Verdict = fmt.Sprintf("only %d of %d nodes ready within %s", res.Ready, len(sims), cfg.readyTimeout)
		res.PodCertificates = podCertificates(cfg, p, rec, tracker, res.StartupSeconds)
		return res, nil
	}

	if !pause(ctx, cfg.settle) {
		return res, ctx.Err()
	}
	rec.setPhase(phaseSteady)
	// Taken after the settle: the admin may see a pod's condition before its node has read the
	// answer to the patch that wrote it, and the start-up's last requests are counted in it.
	res.Startup.All, res.Startup.Kinds = rec.summary(phaseStartup, startupEnded)
	var cpu0 []time.Duration
	pids := append(append([]int(nil), mem.servers...), mem.etcd...)
	if cpu0, err = readCPU(pids); err != nil {
		return res, err
	}
	client0 := procstat.SelfCPU()
	res.LoadAverage[0] = loadAverage()
	windowBegin := time.Now()
	peaks := make([]int64, len(idle))
	last := make([]int64, len(idle))
	tick := time.NewTicker(rssSampleEvery)
	end := time.NewTimer(cfg.duration)
	defer tick.Stop()
	defer end.Stop()
	sample := func() error {
		if !haveMemory {
			return nil
		}
		now, err := mem.read(ctx)
		if err != nil {
			return fmt.Errorf("reading the servers' memory: %w", err)
		}
		for i, v := range now {
			last[i] = v
			peaks[i] = max(peaks[i], v)
		}
		return nil
	}
sampling:
	for {
		select {
		case <-tick.C:
		case <-end.C:
			break sampling
		case <-ctx.Done():
			return res, ctx.Err()
		}
		if err := sample(); err != nil {
			return res, err
		}
	}
	if err := sample(); err != nil {
		return res, err
	}
	rec.setPhase(phaseDone)
	window := time.Since(windowBegin)
	res.Watches = int(rec.openWatches.Load())
	res.LoadAverage[1] = loadAverage()
	cpu1, err := readCPU(pids)
	if err != nil {
		return res, err
	}
	res.ClientCPUPercent = 100 * (procstat.SelfCPU() - client0).Seconds() / window.Seconds()
	if self, err := procstat.ReadMemory(os.Getpid()); err == nil {
		res.ClientRSSMiB = procstat.MiB(self.RSS)
		if clientIdleErr == nil {
			res.ClientRSSPerNodeKiB = perNodeKiB(self.RSS-clientIdle.RSS, res.Nodes)
		}
	}
	res.ClientGoroutines = runtime.NumGoroutine()
	procs := make([]procFigures, len(idle))
	for i := range idle {
		procs[i] = procFigures{IdleRSSMiB: procstat.MiB(idle[i]), RSSMiB: procstat.MiB(last[i]), PeakRSSMiB: procstat.MiB(peaks[i])}
		if i < len(cpu1) {
			procs[i].CPUPercent = ptr.To(100 * (cpu1[i] - cpu0[i]).Seconds() / window.Seconds())
		}
	}
	servers := max(len(mem.servers), min(len(procs), 1))
	res.Servers, res.Etcd = procs[:servers], procs[servers:]
	if haveMemory {
		var growth int64
		for i := range servers {
			growth += last[i] - idle[i]
		}
		kib := float64(growth) / 1024
		res.ServerRSSPerNodeKiB = ptr.To(kib / float64(res.Nodes))
		if res.Watches > 0 {
			res.ServerRSSPerWatchKiB = ptr.To(kib / float64(res.Watches))
		}
	}
	res.Steady.Seconds = window.Seconds()
	res.Steady.All, res.Steady.Kinds = rec.summary(phaseSteady, window)
	res.Errors = rec.errorsSeen()
	res.SlowSeconds = rec.slow(phaseSteady, windowBegin, cfg.threshold)
	res.Pass, res.Verdict = verdict(res.Steady, cfg.threshold)
	res.PodCertificates = podCertificates(cfg, p, rec, tracker, res.StartupSeconds)
	res.Held, res.HeldNote = held(ctx, c.metrics, baseline, baselineErr, res.Nodes, res.Watches, func() {
		stopNodes()
		wg.Wait()
		for _, n := range sims {
			n.closeConnections()
		}
		stopReadiness()
	})
	return res, nil
}

// held measures the live memory the nodes hold on the servers (measureHeld), stopping them; a
// server that refuses /metrics or /debug/pprof gives "n/a" and the reason, never a failed level.
func held(ctx context.Context, servers []rest.Interface, baseline []float64, baselineErr error, nodes, watches int, stop func()) (*heldFigures, string) {
	if baselineErr != nil {
		return nil, fmt.Sprintf("n/a: before the nodes started: %v", baselineErr)
	}
	f, note, err := measureHeld(ctx, servers, baseline, nodes, watches, stop)
	if err != nil {
		fmt.Fprintf(os.Stderr, "nodesim: live memory per node n/a: %v\n", err)
		return nil, fmt.Sprintf("n/a: %v", err)
	}
	return f, note
}

// perNodeKiB is a memory growth in bytes per node, in KiB; nil without nodes.
func perNodeKiB(growth int64, nodes int) *float64 {
	if nodes <= 0 {
		return nil
	}
	return ptr.To(float64(growth) / 1024 / float64(nodes))
}

// buildNodes issues every node its certificate and client, spread over the servers round-robin.
func buildNodes(c *cluster, p plan, cfg config, scratch string, rec *recorder) ([]*simNode, error) {
	now := time.Now()
	sims := make([]*simNode, p.nodes)
	for i := range p.nodes {
		name := p.nodeName(i)
		certPEM, keyPEM, err := nodeCertificate(c.ca, name, now)
		if err != nil {
			return nil, err
		}
		if sims[i], err = newSimNode(i, name, c.bases[i%len(c.bases)], certPEM, keyPEM, scratch, cfg, rec); err != nil {
			return nil, err
		}
	}
	return sims, nil
}

// cleanUp deletes, from a server the tool did not start, what a level created: its namespaces
// (and with them its pods and objects), its Nodes and their Leases. Failures are reported, not
// fatal: the level's figures are already taken.
func cleanUp(admin kubernetes.Interface, p plan) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var failed int
	// The agents are gone, so nothing would confirm a graceful deletion of their pods and the
	// namespaces would stay Terminating: the pods go at once.
	now := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
	for i := range p.namespaces {
		if err := admin.CoreV1().Pods(p.namespace(i)).DeleteCollection(ctx, now, metav1.ListOptions{LabelSelector: podLabel + "=" + podLabelValue}); err != nil && !apierrors.IsNotFound(err) {
			failed++
		}
		if err := admin.CoreV1().Namespaces().Delete(ctx, p.namespace(i), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			failed++
		}
	}
	for i := range p.nodes {
		if err := admin.CoreV1().Nodes().Delete(ctx, p.nodeName(i), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			failed++
		}
		if err := admin.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(ctx, p.nodeName(i), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			failed++
		}
	}
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "nodesim: %d deletions of the level's namespaces, Nodes and Leases (prefix %s) failed\n", failed, p.prefix)
	}
}

func randomSuffix() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// pause waits d; false when ctx ended first.
func pause(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
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
