package main

import (
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idplane/idplane/bench/internal/loadphase"
)

// Phases of a level: the recorder files every request under the phase it completed in.
const (
	phaseSetup   = "setup"
	phaseStartup = "startup"
	phaseSteady  = "steady"
	phaseDone    = "done"
)

// kindWatchSuffix marks the kinds of watch requests: their time is the time to the response
// headers, and they never count towards the latency verdict.
const kindWatchSuffix = " watch"

// classify names the kind of a request from its method and URL, the way the figures group them.
// Only the paths a node agent uses get names of their own.
func classify(method string, u *url.URL) string {
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	// Core resources live under /api/v1, grouped ones under /apis/<group>/<version>.
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return "other " + strings.ToLower(method)
	}
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) > 2 {
		parts = parts[2:]
	}
	resource, name, sub := "", "", ""
	switch len(parts) {
	case 1:
		resource = parts[0]
	case 2:
		resource, name = parts[0], parts[1]
	case 3:
		resource, name, sub = parts[0], parts[1], parts[2]
	default:
		return "other " + strings.ToLower(method)
	}
	singular := map[string]string{
		"nodes": "node", "pods": "pod", "secrets": "secret", "configmaps": "configmap",
		"leases": "lease", "serviceaccounts": "serviceaccount", "events": "event",
		"podcertificaterequests": "podcertificaterequest", "nodereadables": "nodereadable",
	}[resource]
	if singular == "" {
		return "other " + strings.ToLower(method)
	}
	q := u.Query()
	switch {
	case name == "" && method == http.MethodGet && (q.Get("watch") == "true" || q.Get("watch") == "1"):
		return singular + kindWatchSuffix
	case name == "" && method == http.MethodGet:
		return singular + " list"
	case name == "" && method == http.MethodPost:
		return singular + " create"
	case resource == "serviceaccounts" && sub == "token" && method == http.MethodPost:
		return "token request"
	case sub == "status" && (method == http.MethodPatch || method == http.MethodPut):
		return singular + " status"
	case sub != "":
		return "other " + strings.ToLower(method)
	case method == http.MethodGet:
		return singular + " get"
	case method == http.MethodPut:
		return singular + " update"
	case method == http.MethodPatch:
		return singular + " patch"
	case method == http.MethodDelete:
		return singular + " delete"
	}
	return "other " + strings.ToLower(method)
}

// recorder keeps the latency of every request the simulated nodes make, by phase and kind.
type recorder struct {
	mu      sync.Mutex
	phase   string
	byPhase map[string]map[string]*kindSamples
	// firstErrors are the first few distinct errors, whatever their phase, with their counts.
	firstErrors []errorCount
	// openWatches counts the watches whose response arrived and whose body is not closed yet.
	openWatches atomic.Int64
}

type kindSamples struct {
	latencies []time.Duration
	// ended holds when each request ended, in the order of latencies.
	ended    []time.Time
	errors   int
	firstErr string
}

type errorCount struct {
	Message string `json:"message"`
	Count   int    `json:"count"`
}

const maxDistinctErrors = 8

func newRecorder() *recorder {
	return &recorder{phase: phaseSetup, byPhase: map[string]map[string]*kindSamples{}}
}

func (r *recorder) setPhase(p string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.phase = p
}

// failure says why a request counts as an error; the zero value is a success.
type failure struct {
	kind, text string
	// example is the request, named only in the kind's first error: the distinct errors are
	// told apart by kind and text alone.
	example string
}

// expectedAnswers are the error statuses the agent's own flow meets now and then and handles:
// its first read of its Lease is a 404 (the Lease is then created), and a node registering again
// meets its Node already there (409, then it reads it). They are not counted as errors.
var expectedAnswers = map[string]int{
	"lease get":   http.StatusNotFound,
	"node create": http.StatusConflict,
}

func (r *recorder) observe(kind string, d time.Duration, failed failure) {
	r.mu.Lock()
	defer r.mu.Unlock()
	kinds := r.byPhase[r.phase]
	if kinds == nil {
		kinds = map[string]*kindSamples{}
		r.byPhase[r.phase] = kinds
	}
	s := kinds[kind]
	if s == nil {
		s = &kindSamples{}
		kinds[kind] = s
	}
	s.latencies = append(s.latencies, d)
	s.ended = append(s.ended, time.Now())
	if failed.text != "" {
		s.errors++
		if s.firstErr == "" {
			s.firstErr = failed.text + ": " + failed.example
		}
		r.noteLocked(failed.kind + ": " + failed.text)
	}
}

// noteError records an error a simulated node saw that is not one request's (a watch that ended
// with an error event, a token without expiry).
func (r *recorder) noteError(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.noteLocked(err.Error())
}

func (r *recorder) noteLocked(msg string) {
	for i := range r.firstErrors {
		if r.firstErrors[i].Message == msg {
			r.firstErrors[i].Count++
			return
		}
	}
	if len(r.firstErrors) < maxDistinctErrors {
		r.firstErrors = append(r.firstErrors, errorCount{Message: msg, Count: 1})
	}
}

func (r *recorder) errorsSeen() []errorCount {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.firstErrors)
}

// slowSecond counts the requests, watches aside, slower than a threshold that ended in one second
// of a phase: stalls that hit many requests at once show up as a few crowded seconds.
type slowSecond struct {
	// Second is the offset from the start of the phase.
	Second   int `json:"second"`
	Requests int `json:"requests"`
	// Kinds counts them by kind.
	Kinds map[string]int `json:"kinds"`
}

// slow groups the requests of phase that took threshold or longer by the second they ended in,
// counted from begin.
func (r *recorder) slow(phase string, begin time.Time, threshold time.Duration) []slowSecond {
	r.mu.Lock()
	defer r.mu.Unlock()
	bySecond := map[int]*slowSecond{}
	for kind, s := range r.byPhase[phase] {
		if strings.HasSuffix(kind, kindWatchSuffix) {
			continue
		}
		for i, d := range s.latencies {
			if d < threshold {
				continue
			}
			sec := int(s.ended[i].Sub(begin) / time.Second)
			b := bySecond[sec]
			if b == nil {
				b = &slowSecond{Second: sec, Kinds: map[string]int{}}
				bySecond[sec] = b
			}
			b.Requests++
			b.Kinds[kind]++
		}
	}
	var out []slowSecond
	for _, b := range bySecond {
		out = append(out, *b)
	}
	slices.SortFunc(out, func(a, b slowSecond) int { return a.Second - b.Second })
	return out
}

// kindFigures summarises one kind of request in one phase.
type kindFigures struct {
	Kind     string  `json:"kind"`
	Requests int     `json:"requests"`
	Errors   int     `json:"errors"`
	RPS      float64 `json:"rps"`
	P50Ms    float64 `json:"p50Ms"`
	P99Ms    float64 `json:"p99Ms"`
	MaxMs    float64 `json:"maxMs"`
	// Watch kinds are timed to the response headers and never count towards the verdict.
	Watch    bool   `json:"watch,omitempty"`
	FirstErr string `json:"firstError,omitempty"`
}

// summary returns the figures of every kind seen in phase, sorted by kind, and the figures of all
// requests but watches together (kind "all").
func (r *recorder) summary(phase string, elapsed time.Duration) (all kindFigures, kinds []kindFigures) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var everything []time.Duration
	all.Kind = "all"
	for kind, s := range r.byPhase[phase] {
		lat := slices.Clone(s.latencies)
		slices.Sort(lat)
		f := figures(kind, lat, s.errors, elapsed)
		f.FirstErr = s.firstErr
		f.Watch = strings.HasSuffix(kind, kindWatchSuffix)
		kinds = append(kinds, f)
		if !f.Watch {
			everything = append(everything, lat...)
			all.Errors += s.errors
			if all.FirstErr == "" {
				all.FirstErr = s.firstErr
			}
		}
	}
	slices.SortFunc(kinds, func(a, b kindFigures) int { return strings.Compare(a.Kind, b.Kind) })
	slices.Sort(everything)
	errs, first := all.Errors, all.FirstErr
	all = figures("all", everything, errs, elapsed)
	all.FirstErr = first
	return all, kinds
}

func figures(kind string, sorted []time.Duration, errors int, elapsed time.Duration) kindFigures {
	f := kindFigures{Kind: kind, Requests: len(sorted), Errors: errors,
		P50Ms: ms(loadphase.Percentile(sorted, 50)), P99Ms: ms(loadphase.Percentile(sorted, 99))}
	if len(sorted) > 0 {
		f.MaxMs = ms(sorted[len(sorted)-1])
	}
	if elapsed > 0 {
		f.RPS = float64(len(sorted)) / elapsed.Seconds()
	}
	return f
}

// transport times every request of a simulated node at the HTTP layer, below client-go's rate
// limiter: the figures are the server's answer time plus the client's share of the machine, never
// the node's own throttling. A request is timed to the end of its body (client-go reads it
// whole), a watch to its response headers.
type transport struct {
	next http.RoundTripper
	rec  *recorder
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	kind := classify(req.Method, req.URL)
	start := time.Now()
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		// A request the node itself gave up (its context ended) is no failure of the server.
		if req.Context().Err() == nil {
			t.rec.observe(kind, time.Since(start), failure{kind: kind, text: err.Error(), example: req.Method + " " + req.URL.Path})
		}
		return nil, err
	}
	var failed failure
	if resp.StatusCode >= 400 && resp.StatusCode != expectedAnswers[kind] {
		failed = failure{kind: kind, text: "HTTP " + resp.Status, example: req.Method + " " + req.URL.Path}
	}
	if strings.HasSuffix(kind, kindWatchSuffix) {
		t.rec.observe(kind, time.Since(start), failed)
		if resp.StatusCode == http.StatusOK {
			t.rec.openWatches.Add(1)
			resp.Body = &timedBody{ReadCloser: resp.Body, done: func() { t.rec.openWatches.Add(-1) }}
		}
		return resp, nil
	}
	resp.Body = &timedBody{ReadCloser: resp.Body, done: func() { t.rec.observe(kind, time.Since(start), failed) }}
	return resp, nil
}

// timedBody calls done once, at the end of the body or when it is closed, whichever is first.
type timedBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.once.Do(b.done)
	}
	return n, err
}

func (b *timedBody) Close() error {
	b.once.Do(b.done)
	return b.ReadCloser.Close()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
