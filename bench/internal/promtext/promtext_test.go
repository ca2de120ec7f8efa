package promtext

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/idplane/idplane/bench/internal/promtext/promtexttest"
)

// body is an exposition as a server writes it: unlabelled gauges, a labelled gauge, a counter,
// an untyped sample, and a summary and a histogram whose _sum, _count and _bucket lines share a
// prefix with the names asked for.
const body = `# HELP process_resident_memory_bytes Resident memory size in bytes.
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes 1.48135936e+08
process_resident_memory_bytes_max 1
# TYPE go_memstats_next_gc_bytes gauge
go_memstats_next_gc_bytes 1.019e+09
# TYPE apiserver_longrunning_requests gauge
apiserver_longrunning_requests{resource="pods",scope="cluster",verb="WATCH"} 4
apiserver_longrunning_requests{resource="secrets",scope="namespace",verb="WATCH"} 3
apiserver_longrunning_requests{resource="pods",scope="namespace",subresource="exec",verb="CONNECT"} 5
# TYPE go_gc_cycles_forced_gc_cycles_total counter
go_gc_cycles_forced_gc_cycles_total 12
go_goroutines 42
# TYPE go_gc_duration_seconds summary
go_gc_duration_seconds{quantile="0.5"} 0.001
go_gc_duration_seconds_sum 0.5
go_gc_duration_seconds_count 40
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{verb="GET",le="0.1"} 9
apiserver_request_duration_seconds_bucket{verb="GET",le="+Inf"} 10
apiserver_request_duration_seconds_sum{verb="GET"} 0.3
apiserver_request_duration_seconds_count{verb="GET"} 10
# TYPE labelled_only gauge
labelled_only{x="y"} 1
`

func TestValue(t *testing.T) {
	tests := []struct {
		name    string
		want    float64
		wantErr string
	}{
		{name: "process_resident_memory_bytes", want: 148135936},
		{name: "go_memstats_next_gc_bytes", want: 1019000000},
		{name: "go_gc_cycles_forced_gc_cycles_total", want: 12},
		{name: "go_goroutines", want: 42},
		{name: "go_memstats_heap_inuse_bytes", wantErr: "/metrics has no go_memstats_heap_inuse_bytes"},
		{name: "labelled_only", wantErr: "/metrics has no labelled_only without labels"},
		{name: "go_gc_duration_seconds", wantErr: "/metrics has go_gc_duration_seconds of type summary, not a gauge, counter or untyped metric"},
		{name: "apiserver_request_duration_seconds", wantErr: "of type histogram, not a gauge"},
		// A summary's and a histogram's lines are parts of it, not series of their own.
		{name: "go_gc_duration_seconds_count", wantErr: "/metrics has no go_gc_duration_seconds_count"},
		{name: "apiserver_request_duration_seconds_bucket", wantErr: "/metrics has no apiserver_request_duration_seconds_bucket"},
	}
	m, err := Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := m.Value(tt.name)
			check(t, got, err, tt.want, tt.wantErr)
		})
	}
}

func TestSum(t *testing.T) {
	tests := []struct {
		name, metric string
		match        map[string]string
		want         float64
		wantErr      string
	}{
		{name: "by label", metric: "apiserver_longrunning_requests", match: map[string]string{"verb": "WATCH"}, want: 7},
		{name: "by two labels", metric: "apiserver_longrunning_requests", match: map[string]string{"verb": "WATCH", "resource": "pods"}, want: 4},
		{name: "all samples", metric: "apiserver_longrunning_requests", want: 12},
		{name: "no sample matches", metric: "apiserver_longrunning_requests", match: map[string]string{"verb": "LIST"}, want: 0},
		{name: "an absent label is empty", metric: "apiserver_longrunning_requests", match: map[string]string{"subresource": ""}, want: 7},
		{name: "unlabelled", metric: "go_goroutines", want: 42},
		{name: "missing", metric: "apiserver_registered_watchers", match: map[string]string{"verb": "WATCH"}, wantErr: "/metrics has no apiserver_registered_watchers"},
		{name: "summary", metric: "go_gc_duration_seconds", wantErr: "of type summary, not a gauge"},
	}
	m, err := Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := m.Sum(tt.metric, tt.match)
			check(t, got, err, tt.want, tt.wantErr)
		})
	}
}

func TestSummaryCount(t *testing.T) {
	tests := []struct {
		name    string
		want    uint64
		wantErr string
	}{
		{name: "go_gc_duration_seconds", want: 40},
		{name: "go_goroutines", wantErr: "/metrics has go_goroutines of type untyped, not a summary"},
		{name: "apiserver_request_duration_seconds", wantErr: "of type histogram, not a summary"},
		{name: "rest_client_request_duration_seconds", wantErr: "/metrics has no rest_client_request_duration_seconds"},
	}
	m, err := Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := m.SummaryCount(tt.name)
			check(t, float64(got), err, float64(tt.want), tt.wantErr)
		})
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name, body string
		wantErr    string // "": the body parses
	}{
		{name: "exposition", body: body},
		{name: "empty", body: ""},
		{name: "timestamps", body: "go_goroutines 42 1700000000000\n"},
		{name: "unparsable value", body: strings.ReplaceAll(body, "1.019e+09", "lots"),
			wantErr: `parsing go_memstats_next_gc_bytes in /metrics (line 6): expected float as value, got "lots"`},
		{name: "unparsable labelled value", body: "a 1\nb{x=\"y\"} lots\n",
			wantErr: `parsing b in /metrics (line 2): expected float as value, got "lots"`},
		{name: "unknown type", body: "# TYPE a bogus\na 1\n", wantErr: `parsing a in /metrics (line 1): unknown metric type "bogus"`},
		{name: "cut short", body: "a 1\nb 2", wantErr: "parsing b in /metrics (line 2): unexpected end of input stream"},
		{name: "HTML", body: "<html>\n<body>forbidden</body>\n</html>\n", wantErr: "parsing /metrics (line 1): invalid metric name"},
		{name: "a JSON Status", body: `{"kind":"Status","apiVersion":"v1","status":"Failure"}` + "\n", wantErr: "parsing /metrics (line 1): "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.body))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestScrape(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		want    float64
		wantErr string
	}{
		{name: "read", status: http.StatusOK, body: body, want: 42},
		{name: "refused", status: http.StatusForbidden, body: "forbidden\n", wantErr: "reading /metrics: "},
		{name: "not metrics", status: http.StatusOK, body: "<html>\n", wantErr: "parsing /metrics (line 1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Scrape(context.Background(), promtexttest.Client(t, tt.status, tt.body).CoreV1().RESTClient())
			if err != nil {
				check(t, 0, err, tt.want, tt.wantErr)
				return
			}
			got, err := m.Value("go_goroutines")
			check(t, got, err, tt.want, tt.wantErr)
		})
	}
}

func check(t *testing.T, got float64, err error, want float64, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error %v, want one containing %q", err, wantErr)
		}
		return
	}
	if err != nil || got != want {
		t.Fatalf("got %v, %v; want %v", got, err, want)
	}
}
