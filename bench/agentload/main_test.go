package main

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// event is one audit line as the server's log backend writes it.
func event(id, stage, user, verb, uri, objectRef string, code int, received string) string {
	status := ""
	if code != 0 {
		status = `,"responseStatus":{"metadata":{},"code":` + strconv.Itoa(code) + `}`
	}
	ref := ""
	if objectRef != "" {
		ref = `,"objectRef":` + objectRef
	}
	return `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"` + id +
		`","stage":"` + stage + `","requestURI":"` + uri + `","verb":"` + verb +
		`","user":{"username":"` + user + `","groups":["system:nodes","system:authenticated"]}` +
		`,"sourceIPs":["127.0.0.1"]` + ref + status +
		`,"requestReceivedTimestamp":"` + received + `","stageTimestamp":"` + received + `"}` + "\n"
}

const node = "system:node:bench-node"

func TestParseAudit(t *testing.T) {
	log := event("a1", "ResponseComplete", node, "create", "/api/v1/namespaces/ns/serviceaccounts/load/token",
		`{"resource":"serviceaccounts","namespace":"ns","name":"load","apiVersion":"v1","subresource":"token"}`, 201, "2026-11-25T03:00:10.000000Z") +
		// A watch: started before the window, still open; then a second one started inside it.
		event("w1", "ResponseStarted", node, "watch", "/api/v1/pods?fieldSelector=spec.nodeName%3Dbench-node&watch=true",
			`{"resource":"pods","apiVersion":"v1"}`, 200, "2026-11-25T02:59:00.000000Z") +
		event("w2", "ResponseStarted", node, "watch", "/api/v1/pods?watch=true", `{"resource":"pods","apiVersion":"v1"}`, 200, "2026-11-25T03:00:20.000000Z") +
		event("w2", "ResponseComplete", node, "watch", "/api/v1/pods?watch=true", `{"resource":"pods","apiVersion":"v1"}`, 200, "2026-11-25T03:00:20.000000Z") +
		event("l1", "ResponseComplete", node, "update", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/bench-node",
			`{"resource":"leases","namespace":"kube-node-lease","name":"bench-node","apiGroup":"coordination.k8s.io","apiVersion":"v1"}`, 200, "2026-11-25T03:00:30.000000Z") +
		event("f1", "ResponseComplete", node, "get", "/api/v1/namespaces/ns/secrets/other",
			`{"resource":"secrets","namespace":"ns","name":"other","apiVersion":"v1"}`, 403, "2026-11-25T03:00:40.000000Z") +
		event("d1", "ResponseComplete", node, "get", "/api?timeout=32s", "", 200, "2026-11-25T03:00:50.000000Z") +
		event("x1", "ResponseComplete", "admin", "create", "/api/v1/namespaces/ns/pods", `{"resource":"pods","apiVersion":"v1"}`, 201, "2026-11-25T03:00:50.000000Z") +
		event("late", "ResponseComplete", node, "patch", "/api/v1/nodes/bench-node/status",
			`{"resource":"nodes","name":"bench-node","apiVersion":"v1","subresource":"status"}`, 200, "2026-11-25T03:01:00.000000Z") +
		// An event still being written: no newline yet.
		`{"kind":"Event","auditID":"half"`

	reqs, err := parseAudit(strings.NewReader(log), node)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 7 {
		t.Fatalf("parsed %d requests, want 7 (one per audit ID of the node, none of admin's): %+v", len(reqs), reqs)
	}
	from := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	got := countWindow(reqs, from, from.Add(time.Minute))
	want := map[string]int{
		"create serviceaccounts/token":      1,
		"watch pods":                        1,
		"update leases.coordination.k8s.io": 1,
		"get secrets":                       1,
		"get /api":                          1,
	}
	if got.Total != 5 || got.Failed != 1 {
		t.Errorf("window counts total %d failed %d, want 5 and 1", got.Total, got.Failed)
	}
	if len(got.ByKind) != len(want) {
		t.Errorf("kinds %v, want %v", got.ByKind, want)
	}
	for k, n := range want {
		if got.ByKind[k] != n {
			t.Errorf("kind %q: %d, want %d (all: %v)", k, got.ByKind[k], n, got.ByKind)
		}
	}
}

func TestParseAuditRefusesGarbage(t *testing.T) {
	for name, log := range map[string]string{
		"not JSON":    "hello\n",
		"no audit ID": `{"kind":"Event","user":{"username":"` + node + `"},"requestReceivedTimestamp":"2026-11-25T03:00:00.000000Z"}` + "\n",
	} {
		if _, err := parseAudit(strings.NewReader(log), node); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestAuditPolicyNamesTheNode(t *testing.T) {
	p := auditPolicy(node)
	for _, want := range []string{"kind: Policy", "omitStages: [RequestReceived]", `users: ["system:node:bench-node"]`, "level: None"} {
		if !strings.Contains(p, want) {
			t.Errorf("policy lacks %q:\n%s", want, p)
		}
	}
}

func TestRampFigures(t *testing.T) {
	r := rampResult{elapsed: 20 * time.Second, errors: 2, firstError: errors.New("no token file")}
	for i := 1; i <= 998; i++ {
		r.latencies = append(r.latencies, time.Duration(i)*time.Millisecond)
	}
	f := r.figures()
	if f.Pods != 1000 || f.Errors != 2 || f.PodsPerSecond != 50 || f.FirstError != "no token file" {
		t.Errorf("figures %+v: want 1000 pods, 2 errors, 50 pods/s and the first error", f)
	}
	// Nearest rank over the 998 files that appeared.
	if f.P50Ms != 499 || f.P90Ms != 899 || f.P99Ms != 989 || f.MaxMs != 998 {
		t.Errorf("p50/p90/p99/max = %v/%v/%v/%v ms, want 499/899/989/998", f.P50Ms, f.P90Ms, f.P99Ms, f.MaxMs)
	}
	if empty := (rampResult{}).figures(); empty.P50Ms != 0 || empty.PodsPerSecond != 0 {
		t.Errorf("empty ramp figures %+v, want zeros", empty)
	}
}

func TestExpectedRefreshes(t *testing.T) {
	tests := []struct {
		tokenSeconds int
		want         float64
	}{
		{3600, 1000 / 48.0},
		{600, 1000 / 8.0},
		{0, 1000 / (0.8 * 3607 / 60)},
	}
	for _, tt := range tests {
		c := config{pods: 1000, tokenSeconds: tt.tokenSeconds}
		if got := c.expectedRefreshesPerMinute(); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("token seconds %d: %v refreshes/min, want %v", tt.tokenSeconds, got, tt.want)
		}
	}
}

func TestMedianRunCountsMissingKindsAsZero(t *testing.T) {
	run := func(rss float64, kinds map[string]float64) runResult {
		return runResult{Steady: steadyFigures{AgentRSSMiB: rss, ByKindPerMinute: kinds}}
	}
	m := medianRun([]runResult{
		run(40, map[string]float64{"update leases.coordination.k8s.io": 6, "watch pods": 0.2}),
		run(60, map[string]float64{"update leases.coordination.k8s.io": 6}),
		run(50, map[string]float64{"update leases.coordination.k8s.io": 6.2, "watch pods": 0.4}),
	})
	if m.Steady.AgentRSSMiB != 50 {
		t.Errorf("median RSS %v, want 50", m.Steady.AgentRSSMiB)
	}
	if got := m.Steady.ByKindPerMinute; got["update leases.coordination.k8s.io"] != 6 || got["watch pods"] != 0.2 {
		t.Errorf("median kinds %v, want leases 6 and watch pods 0.2", got)
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{args: nil},
		{args: []string{"-token-seconds", "0"}},
		{args: []string{"-token-seconds", "599"}, wantErr: "at least 600"},
		{args: []string{"-rate", "0"}, wantErr: "-rate"},
		{args: []string{"-pods", "0"}, wantErr: "-pods"},
		{args: []string{"-idplane", ""}, wantErr: "-idplane"},
		{args: []string{"extra"}, wantErr: "unexpected"},
	}
	for _, tt := range tests {
		_, err := parseFlags(tt.args)
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("parseFlags(%q) = %v, want error containing %q", tt.args, err, tt.wantErr)
		}
	}
}
