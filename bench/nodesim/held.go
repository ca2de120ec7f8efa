package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/rest"

	"github.com/idplane/idplane/bench/internal/promtext"
)

// The series a server's /metrics gives for the live-memory measurement. kube-apiserver and
// idplane both export them: the Go collector of component-base's registry (with the runtime's
// metrics) and the library's stable long-running request gauge.
const (
	heapInuseMetric   = "go_memstats_heap_inuse_bytes"
	stackInuseMetric  = "go_memstats_stack_inuse_bytes"
	heapLiveMetric    = "go_memstats_heap_alloc_bytes"
	heapGoalMetric    = "go_memstats_next_gc_bytes"
	forcedGCMetric    = "go_gc_cycles_forced_gc_cycles_total"
	gcCountMetric     = "go_gc_duration_seconds"
	longRunningMetric = "apiserver_longrunning_requests"
)

const (
	// drainPoll is how often the servers' watch count is read while the nodes' watches close.
	drainPoll = 500 * time.Millisecond
	// drainTimeout bounds the wait for the watch count to fall back to its baseline.
	drainTimeout = 2 * time.Minute
)

// liveReading is what one server's /metrics says right after a garbage collection it was made
// to run: what is live, not what the collector has yet to free.
type liveReading struct {
	// HeapInuse and StackInuse are the bytes of heap spans and goroutine stacks in use.
	HeapInuse  float64 `json:"heapInuse"`
	StackInuse float64 `json:"stackInuse"`
	// HeapLive is the heap's allocated bytes, all of them live right after a collection;
	// HeapGoal is the heap size at which the collector will next run.
	HeapLive float64 `json:"heapLive"`
	HeapGoal float64 `json:"heapGoal"`
	// Watches are the server's open watch requests.
	Watches float64 `json:"watches"`
}

// heldFigures is what the nodes' open connections and watches held on the servers: the live
// memory with the nodes running, less the live memory once every node stopped and its watches
// closed, summed over the servers.
type heldFigures struct {
	// HeapMiB and StacksMiB are the difference in heap in use and in stacks in use.
	HeapMiB   float64 `json:"heapMiB"`
	StacksMiB float64 `json:"stacksMiB"`
	// PerNodeKiB and PerWatchKiB are the two together, per node and per open watch of the nodes
	// (as the tool counts them).
	PerNodeKiB  float64  `json:"perNodeKiB"`
	PerWatchKiB *float64 `json:"perWatchKiB"`
	// WatchesPerNode are the nodes' open watches per node; ServerWatches the watches the servers
	// counted above their baseline with the nodes running (a cross-check of the tool's count).
	WatchesPerNode float64 `json:"watchesPerNode"`
	ServerWatches  float64 `json:"serverWatches"`
	// GoalRatio is the collector's heap goal over the live heap with the nodes running (about 2
	// at GOGC=100, more when stacks are large: they count towards the goal too).
	GoalRatio float64 `json:"goalRatio"`
	// RSSPerNodeKiB and RSSPerWatchKiB are the held memory as a resident-memory growth sees it:
	// the difference in the heap goal (the heap grows that far before the next collection) plus
	// the difference in stacks, per node and per watch. Headroom is that over the held memory.
	RSSPerNodeKiB  float64  `json:"rssPerNodeKiB"`
	RSSPerWatchKiB *float64 `json:"rssPerWatchKiB"`
	Headroom       *float64 `json:"headroom"`
	// Loaded and Stopped are the servers' readings, with the nodes running and stopped.
	Loaded  []liveReading `json:"loaded"`
	Stopped []liveReading `json:"stopped"`
}

// heldPerNode works out the figures from the servers' readings with the nodes running (loaded)
// and after they stopped, in server order, and the baseline watch counts before they started.
func heldPerNode(loaded, stopped []liveReading, baseline []float64, nodes, watches int) (heldFigures, error) {
	if len(loaded) == 0 || len(loaded) != len(stopped) || len(loaded) != len(baseline) {
		return heldFigures{}, fmt.Errorf("readings of %d, %d and %d servers do not match", len(loaded), len(stopped), len(baseline))
	}
	if nodes <= 0 {
		return heldFigures{}, errors.New("no nodes")
	}
	var heap, stacks, goal, live, loadedGoal, serverWatches float64
	for i := range loaded {
		heap += loaded[i].HeapInuse - stopped[i].HeapInuse
		stacks += loaded[i].StackInuse - stopped[i].StackInuse
		goal += loaded[i].HeapGoal - stopped[i].HeapGoal
		live += loaded[i].HeapLive
		loadedGoal += loaded[i].HeapGoal
		serverWatches += loaded[i].Watches - baseline[i]
	}
	if live <= 0 || loadedGoal <= 0 {
		return heldFigures{}, fmt.Errorf("%s or %s not positive", heapLiveMetric, heapGoalMetric)
	}
	held := (heap + stacks) / 1024
	rss := (goal + stacks) / 1024
	f := heldFigures{
		HeapMiB: heap / (1 << 20), StacksMiB: stacks / (1 << 20),
		PerNodeKiB:     held / float64(nodes),
		WatchesPerNode: float64(watches) / float64(nodes),
		ServerWatches:  serverWatches,
		GoalRatio:      loadedGoal / live,
		RSSPerNodeKiB:  rss / float64(nodes),
		Loaded:         loaded, Stopped: stopped,
	}
	if held != 0 {
		h := rss / held
		f.Headroom = &h
	}
	if watches > 0 {
		perWatch, rssPerWatch := held/float64(watches), rss/float64(watches)
		f.PerWatchKiB, f.RSSPerWatchKiB = &perWatch, &rssPerWatch
	}
	return f, nil
}

// readLive makes the server collect its garbage (a heap profile with gc=1, as the admin), checks
// from its GC counters that it did, and reads its live memory and open watches.
func readLive(ctx context.Context, c rest.Interface) (liveReading, error) {
	before, err := promtext.Scrape(ctx, c)
	if err != nil {
		return liveReading{}, err
	}
	gcs0, err := gcCount(before)
	if err != nil {
		return liveReading{}, err
	}
	if _, err := c.Get().AbsPath("/debug/pprof/heap").Param("gc", "1").DoRaw(ctx); err != nil {
		return liveReading{}, fmt.Errorf("forcing a garbage collection with /debug/pprof/heap?gc=1: %w", err)
	}
	after, err := promtext.Scrape(ctx, c)
	if err != nil {
		return liveReading{}, err
	}
	gcs1, err := gcCount(after)
	if err != nil {
		return liveReading{}, err
	}
	if gcs1 <= gcs0 {
		return liveReading{}, errors.New("/debug/pprof/heap?gc=1 answered but the server ran no garbage collection")
	}
	return reading(after)
}

// gcCount is the server's count of forced collections, or of all collections when it does not
// export the forced ones (a collection that ran is then taken as the one asked for).
func gcCount(m promtext.Metrics) (float64, error) {
	if v, err := m.Value(forcedGCMetric); err == nil {
		return v, nil
	}
	n, err := m.SummaryCount(gcCountMetric)
	if err != nil {
		return 0, fmt.Errorf("/metrics has neither %s nor %s: cannot tell that a collection ran", forcedGCMetric, gcCountMetric)
	}
	return float64(n), nil
}

func reading(m promtext.Metrics) (liveReading, error) {
	var r liveReading
	for _, g := range []struct {
		name string
		dst  *float64
	}{{heapInuseMetric, &r.HeapInuse}, {stackInuseMetric, &r.StackInuse}, {heapLiveMetric, &r.HeapLive}, {heapGoalMetric, &r.HeapGoal}} {
		v, err := m.Value(g.name)
		if err != nil {
			return r, err
		}
		*g.dst = v
	}
	var err error
	r.Watches, err = watchesIn(m)
	return r, err
}

// watchCount reads the server's open watch requests.
func watchCount(ctx context.Context, c rest.Interface) (float64, error) {
	m, err := promtext.Scrape(ctx, c)
	if err != nil {
		return 0, err
	}
	return watchesIn(m)
}

func watchesIn(m promtext.Metrics) (float64, error) {
	return m.Sum(longRunningMetric, map[string]string{"verb": "WATCH"})
}

// waitForWatches returns once the servers' open watches, together, are no more than target:
// the nodes' watches have closed. It fails when ctx ends first, saying how many were left.
func waitForWatches(ctx context.Context, servers []rest.Interface, target float64, poll time.Duration) error {
	t := time.NewTicker(poll)
	defer t.Stop()
	left := "an unknown number of"
	for {
		n, err := totalWatches(ctx, servers)
		if ctx.Err() != nil {
			// The deadline may end a read: the last count read says how far the wait got.
			return fmt.Errorf("%s watches open, waiting for %.0f: %w", left, target, ctx.Err())
		}
		if err != nil {
			return err
		}
		if n <= target {
			return nil
		}
		left = fmt.Sprintf("%.0f", n)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}

func totalWatches(ctx context.Context, servers []rest.Interface) (float64, error) {
	var total float64
	for i, s := range servers {
		n, err := watchCount(ctx, s)
		if err != nil {
			return 0, fmt.Errorf("server %d: %w", i, err)
		}
		total += n
	}
	return total, nil
}

// baselineWatches reads every server's open watches before the nodes start; nil with the reason
// when a server will not say.
func baselineWatches(ctx context.Context, servers []rest.Interface) ([]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out := make([]float64, len(servers))
	for i, s := range servers {
		n, err := watchCount(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("server %d: %w", i, err)
		}
		out[i] = n
	}
	return out, nil
}

// measureHeld measures what the nodes' connections and watches hold on the servers: their live
// memory with the nodes running, then stop (which must stop every node and close its
// connections), a wait for the servers' watch count to fall by the nodes' watches, and their live
// memory again. It never fails the level: without figures it says why.
//
// The count waited for is the one before the nodes started, or, when the servers opened watches
// of their own since (a controller that started late), the count with the nodes running less the
// nodes' watches.
func measureHeld(ctx context.Context, servers []rest.Interface, baseline []float64, nodes, watches int, stop func()) (*heldFigures, string, error) {
	loaded, err := readAll(ctx, servers)
	if err != nil {
		return nil, "", fmt.Errorf("with the nodes running: %w", err)
	}
	var before, running float64
	for i := range servers {
		before += baseline[i]
		running += loaded[i].Watches
	}
	target := max(before, running-float64(watches))
	stop()
	begin := time.Now()
	drainCtx, cancel := context.WithTimeout(ctx, drainTimeout)
	defer cancel()
	if err := waitForWatches(drainCtx, servers, target, drainPoll); err != nil {
		return nil, "", fmt.Errorf("waiting for the nodes' watches to close: %w", err)
	}
	drained := time.Since(begin)
	stopped, err := readAll(ctx, servers)
	if err != nil {
		return nil, "", fmt.Errorf("with the nodes stopped: %w", err)
	}
	f, err := heldPerNode(loaded, stopped, baseline, nodes, watches)
	if err != nil {
		return nil, "", err
	}
	return &f, fmt.Sprintf("the servers' watches down to %.0f (%.0f before the nodes started) %.1f s after the nodes stopped", target, before, drained.Seconds()), nil
}

func readAll(ctx context.Context, servers []rest.Interface) ([]liveReading, error) {
	out := make([]liveReading, len(servers))
	for i, s := range servers {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		r, err := readLive(ctx, s)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("server %d: %w", i, err)
		}
		out[i] = r
	}
	return out, nil
}
