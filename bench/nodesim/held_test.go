package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func TestHeldPerNode(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name             string
		loaded, stopped  []liveReading
		baseline         []float64
		nodes, watches   int
		want             heldFigures
		wantPerWatch     float64 // 0: none
		wantRSSPerWatch  float64
		wantHeadroom     float64 // 0: none
		wantErrSubstring string
	}{{
		name: "one server",
		// 20 MiB of heap and 5 MiB of stacks held by 100 nodes with 200 watches; the heap goal
		// falls by 45 MiB when they stop.
		loaded:   []liveReading{{HeapInuse: 520 * mib, StackInuse: 15 * mib, HeapLive: 400 * mib, HeapGoal: 800 * mib, Watches: 230}},
		stopped:  []liveReading{{HeapInuse: 500 * mib, StackInuse: 10 * mib, HeapLive: 380 * mib, HeapGoal: 755 * mib, Watches: 30}},
		baseline: []float64{30},
		nodes:    100, watches: 200,
		want: heldFigures{HeapMiB: 20, StacksMiB: 5, PerNodeKiB: 256, WatchesPerNode: 2, ServerWatches: 200,
			GoalRatio: 2, RSSPerNodeKiB: 512},
		wantPerWatch: 128, wantRSSPerWatch: 256, wantHeadroom: 2,
	}, {
		name: "replicas are summed",
		loaded: []liveReading{
			{HeapInuse: 110 * mib, StackInuse: 2 * mib, HeapLive: 100 * mib, HeapGoal: 150 * mib, Watches: 60},
			{HeapInuse: 210 * mib, StackInuse: 4 * mib, HeapLive: 200 * mib, HeapGoal: 300 * mib, Watches: 70},
		},
		stopped: []liveReading{
			{HeapInuse: 100 * mib, StackInuse: 1 * mib, HeapLive: 95 * mib, HeapGoal: 130 * mib, Watches: 10},
			{HeapInuse: 200 * mib, StackInuse: 1 * mib, HeapLive: 190 * mib, HeapGoal: 276 * mib, Watches: 20},
		},
		baseline: []float64{10, 20},
		nodes:    24, watches: 96,
		// 20 MiB heap and 4 MiB stacks: 24,576 KiB over 24 nodes, over 96 watches; the goals fall
		// by 44 MiB, so 48 MiB as RSS sees it.
		want: heldFigures{HeapMiB: 20, StacksMiB: 4, PerNodeKiB: 1024, WatchesPerNode: 4, ServerWatches: 100,
			GoalRatio: 1.5, RSSPerNodeKiB: 2048},
		wantPerWatch: 256, wantRSSPerWatch: 512, wantHeadroom: 2,
	}, {
		name:         "no watches: no per-watch figure",
		loaded:       []liveReading{{HeapInuse: 2 * mib, HeapLive: mib, HeapGoal: 2 * mib}},
		stopped:      []liveReading{{HeapInuse: mib, HeapLive: mib, HeapGoal: mib}},
		baseline:     []float64{0},
		nodes:        1,
		want:         heldFigures{HeapMiB: 1, PerNodeKiB: 1024, GoalRatio: 2, RSSPerNodeKiB: 1024},
		wantHeadroom: 1,
	}, {
		name:     "nothing held: no headroom",
		loaded:   []liveReading{{HeapInuse: mib, HeapLive: mib, HeapGoal: 2 * mib}},
		stopped:  []liveReading{{HeapInuse: mib, HeapLive: mib, HeapGoal: 2 * mib}},
		baseline: []float64{0},
		nodes:    1, watches: 1,
		want:         heldFigures{PerNodeKiB: 0, WatchesPerNode: 1, GoalRatio: 2},
		wantPerWatch: 0, wantRSSPerWatch: 0,
	}, {
		name:     "a difference below zero is reported as measured",
		loaded:   []liveReading{{HeapInuse: mib, HeapLive: mib, HeapGoal: 2 * mib}},
		stopped:  []liveReading{{HeapInuse: 2 * mib, HeapLive: mib, HeapGoal: 4 * mib}},
		baseline: []float64{0},
		nodes:    2, watches: 4,
		want:         heldFigures{HeapMiB: -1, PerNodeKiB: -512, WatchesPerNode: 2, GoalRatio: 2, RSSPerNodeKiB: -1024},
		wantPerWatch: -256, wantRSSPerWatch: -512, wantHeadroom: 2,
	}, {
		name:   "no nodes",
		loaded: []liveReading{{HeapLive: 1, HeapGoal: 2}}, stopped: []liveReading{{}}, baseline: []float64{0},
		wantErrSubstring: "no nodes",
	}, {
		name:   "readings of different servers",
		loaded: []liveReading{{HeapLive: 1, HeapGoal: 2}}, stopped: []liveReading{{}, {}}, baseline: []float64{0},
		nodes: 1, wantErrSubstring: "do not match",
	}, {
		name:   "no live heap",
		loaded: []liveReading{{HeapGoal: 2}}, stopped: []liveReading{{}}, baseline: []float64{0},
		nodes: 1, wantErrSubstring: "not positive",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := heldPerNode(tt.loaded, tt.stopped, tt.baseline, tt.nodes, tt.watches)
			if tt.wantErrSubstring != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErrSubstring) {
					t.Fatalf("error %v, want one with %q", err, tt.wantErrSubstring)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Loaded) != len(tt.loaded) || len(got.Stopped) != len(tt.stopped) {
				t.Errorf("readings kept: %d loaded, %d stopped; want %d, %d", len(got.Loaded), len(got.Stopped), len(tt.loaded), len(tt.stopped))
			}
			perWatch, rssPerWatch, headroom := got.PerWatchKiB, got.RSSPerWatchKiB, got.Headroom
			got.PerWatchKiB, got.RSSPerWatchKiB, got.Headroom, got.Loaded, got.Stopped = nil, nil, nil, nil, nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
			switch {
			case tt.watches == 0 && (perWatch != nil || rssPerWatch != nil):
				t.Errorf("per-watch figures %v, %v without watches", perWatch, rssPerWatch)
			case tt.watches > 0 && (perWatch == nil || rssPerWatch == nil):
				t.Errorf("no per-watch figures with %d watches", tt.watches)
			case tt.watches > 0 && (math.Abs(*perWatch-tt.wantPerWatch) > 1e-9 || math.Abs(*rssPerWatch-tt.wantRSSPerWatch) > 1e-9):
				t.Errorf("per watch %v KiB, as RSS %v KiB; want %v, %v", *perWatch, *rssPerWatch, tt.wantPerWatch, tt.wantRSSPerWatch)
			}
			switch {
			case tt.wantHeadroom == 0 && headroom != nil:
				t.Errorf("headroom %v with nothing held", *headroom)
			case tt.wantHeadroom != 0 && (headroom == nil || math.Abs(*headroom-tt.wantHeadroom) > 1e-9):
				t.Errorf("headroom %v, want %v", headroom, tt.wantHeadroom)
			}
		})
	}
}

// metricsServer serves /metrics and /debug/pprof/heap the way an API server does, with the
// behaviour each test asks for.
type metricsServer struct {
	mu sync.Mutex
	// refuse answers this status to every request when set.
	refuse int
	// collects: a heap profile with gc=1 counts a forced collection. noForcedSeries exports only
	// go_gc_duration_seconds, the older count of every collection.
	collects, noForcedSeries bool
	gcs                      int
	// running is whether the nodes run: their heap, stacks and watches are then in the figures.
	running bool
	// closing counts the nodes' watches still open after they stopped; each /metrics read sees
	// two fewer, as the server notices the closed connections one by one.
	closing int
	// omit leaves one series out.
	omit    string
	scrapes int
}

const (
	fakeBaseWatches = 7
	fakeNodeWatches = 6
)

func (s *metricsServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refuse != 0 {
		http.Error(w, "refused", s.refuse)
		return
	}
	switch r.URL.Path {
	case "/debug/pprof/heap":
		if s.collects && r.URL.Query().Get("gc") == "1" {
			s.gcs++
		}
		_, _ = w.Write([]byte("profile"))
	case "/metrics":
		s.scrapes++
		heap, stacks, watches := 100<<20, 1<<20, fakeBaseWatches
		if s.running {
			heap, stacks, watches = heap+3<<20, stacks+1<<20, watches+fakeNodeWatches
		} else if s.closing > 0 {
			watches += s.closing
			s.closing = max(s.closing-2, 0)
		}
		series := map[string]string{
			heapInuseMetric:  fmt.Sprintf("%s %d\n", heapInuseMetric, heap),
			stackInuseMetric: fmt.Sprintf("%s %d\n", stackInuseMetric, stacks),
			heapLiveMetric:   fmt.Sprintf("%s %d\n", heapLiveMetric, heap-10<<20),
			heapGoalMetric:   fmt.Sprintf("%s %d\n", heapGoalMetric, 2*(heap-10<<20)),
			// Watches of two resources, and a long-running request that is no watch.
			longRunningMetric: fmt.Sprintf("# TYPE %[1]s gauge\n%[1]s{resource=\"pods\",verb=\"WATCH\"} %[2]d\n%[1]s{resource=\"secrets\",verb=\"WATCH\"} %[3]d\n%[1]s{resource=\"pods\",subresource=\"exec\",verb=\"CONNECT\"} 5\n",
				longRunningMetric, watches-3, 3),
		}
		if s.noForcedSeries {
			series[gcCountMetric] = fmt.Sprintf("# TYPE %[1]s summary\n%[1]s{quantile=\"0.5\"} 0.001\n%[1]s_sum 0.5\n%[1]s_count %d\n", gcCountMetric, 40+s.gcs)
		} else {
			series[forcedGCMetric] = fmt.Sprintf("# TYPE %[1]s counter\n%[1]s %d\n", forcedGCMetric, s.gcs)
		}
		delete(series, s.omit)
		for _, v := range series {
			_, _ = w.Write([]byte(v))
		}
	default:
		http.NotFound(w, r)
	}
}

func (s *metricsServer) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running, s.closing = false, fakeNodeWatches
}

func (s *metricsServer) client(t *testing.T) rest.Interface {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	return cs.CoreV1().RESTClient()
}

func TestReadLive(t *testing.T) {
	tests := []struct {
		name    string
		server  *metricsServer
		want    liveReading
		wantErr string
	}{{
		name:   "forced collection counted",
		server: &metricsServer{collects: true, running: true},
		want:   liveReading{HeapInuse: 103 << 20, StackInuse: 2 << 20, HeapLive: 93 << 20, HeapGoal: 186 << 20, Watches: fakeBaseWatches + fakeNodeWatches},
	}, {
		name:   "collections counted without the forced series",
		server: &metricsServer{collects: true, noForcedSeries: true},
		want:   liveReading{HeapInuse: 100 << 20, StackInuse: 1 << 20, HeapLive: 90 << 20, HeapGoal: 180 << 20, Watches: fakeBaseWatches},
	}, {
		name:    "profile answered, no collection",
		server:  &metricsServer{},
		wantErr: "ran no garbage collection",
	}, {
		name:    "metrics refused",
		server:  &metricsServer{collects: true, refuse: http.StatusForbidden},
		wantErr: "reading /metrics",
	}, {
		name:    "no collection counter",
		server:  &metricsServer{collects: true, omit: forcedGCMetric},
		wantErr: "cannot tell that a collection ran",
	}, {
		name:    "no heap goal",
		server:  &metricsServer{collects: true, omit: heapGoalMetric},
		wantErr: "no " + heapGoalMetric,
	}, {
		name:    "no watch gauge",
		server:  &metricsServer{collects: true, omit: longRunningMetric},
		wantErr: "no " + longRunningMetric,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readLive(context.Background(), tt.server.client(t))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// A profile the server refuses (profiling off, or not for this user) is an error, not a reading
// taken without a collection.
func TestReadLiveProfileRefused(t *testing.T) {
	s := &metricsServer{collects: true}
	mux := http.NewServeMux()
	mux.Handle("/metrics", s)
	mux.HandleFunc("/debug/pprof/", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "forbidden", http.StatusForbidden) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readLive(context.Background(), cs.CoreV1().RESTClient()); err == nil || !strings.Contains(err.Error(), "/debug/pprof/heap?gc=1") {
		t.Fatalf("error %v, want the refused profile named", err)
	}
}

func TestWaitForWatches(t *testing.T) {
	tests := []struct {
		name     string
		closing  int
		baseline float64
		// wantScrapes: the wait returns on the read that sees the baseline, not later.
		wantScrapes int
		wantErr     bool
	}{
		{name: "already at baseline", closing: 0, baseline: fakeBaseWatches, wantScrapes: 1},
		{name: "falls to baseline", closing: fakeNodeWatches, baseline: fakeBaseWatches, wantScrapes: 4},
		{name: "falls under a higher baseline", closing: fakeNodeWatches, baseline: fakeBaseWatches + 2, wantScrapes: 3},
		{name: "never falls", closing: fakeNodeWatches, baseline: fakeBaseWatches - 1, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &metricsServer{closing: tt.closing}
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			err := waitForWatches(ctx, []rest.Interface{s.client(t)}, tt.baseline, time.Millisecond)
			if tt.wantErr {
				// The last count read: the fake's count stops at its base.
				if want := fmt.Sprintf("%d watches open, waiting for %.0f", fakeBaseWatches, tt.baseline); err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("error %v, want the watches left named", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.scrapes != tt.wantScrapes {
				t.Errorf("%d reads of /metrics, want %d", s.scrapes, tt.wantScrapes)
			}
		})
	}
}

// measureHeld reads with the nodes running, stops them, waits for the watches to close, and
// reads again: the difference is the nodes' heap and stacks.
func TestMeasureHeld(t *testing.T) {
	tests := []struct {
		name     string
		baseline float64
		wantNote string
	}{
		{name: "baseline before the nodes", baseline: fakeBaseWatches, wantNote: "watches down to 7 (7 before the nodes started)"},
		// The server opened two watches of its own after the baseline: the wait is for the nodes'
		// watches to close, not for the server's.
		{name: "the server opened watches since", baseline: fakeBaseWatches - 2, wantNote: "watches down to 7 (5 before the nodes started)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &metricsServer{collects: true, running: true}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			stopped := false
			f, note, err := measureHeld(ctx, []rest.Interface{s.client(t)}, []float64{tt.baseline}, 2, fakeNodeWatches, func() {
				stopped = true
				s.stop()
			})
			if err != nil {
				t.Fatal(err)
			}
			if !stopped || s.closing != 0 {
				t.Fatalf("stopped %v, %d watches still closing: the nodes were not stopped or their watches not waited for", stopped, s.closing)
			}
			// 3 MiB heap and 1 MiB stacks over 2 nodes and 6 watches; a heap goal twice the live
			// heap falls by 6 MiB, so 7 MiB as RSS sees it.
			if f.PerNodeKiB != 2048 || f.PerWatchKiB == nil || math.Abs(*f.PerWatchKiB-4096.0/6) > 1e-9 || f.RSSPerNodeKiB != 3584 ||
				f.ServerWatches != fakeBaseWatches+fakeNodeWatches-tt.baseline {
				t.Errorf("figures %+v", f)
			}
			if !strings.Contains(note, tt.wantNote) {
				t.Errorf("note %q, want %q", note, tt.wantNote)
			}
		})
	}

	// A server that refuses the profile gives no figures and keeps its nodes running.
	s := &metricsServer{running: true, refuse: http.StatusForbidden}
	stopped := false
	if _, _, err := measureHeld(context.Background(), []rest.Interface{s.client(t)}, []float64{0}, 2, 6, func() { stopped = true }); err == nil || stopped {
		t.Errorf("error %v, stopped %v: want an error before stopping the nodes", err, stopped)
	}
}
