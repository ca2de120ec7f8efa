package main

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/idplane/idplane/bench/internal/promtext/promtexttest"
)

// TestReadHeap pins what a user sees of the heap figures; bench/internal/promtext has the
// parser's own table.
func TestReadHeap(t *testing.T) {
	const body = `# HELP go_memstats_heap_inuse_bytes Number of heap bytes that are in use.
# TYPE go_memstats_heap_inuse_bytes gauge
go_memstats_heap_inuse_bytes 8.6245376e+08
go_memstats_next_gc_bytes 1.019e+09
go_memstats_heap_inuse_bytes_other{x="y"} 1
`
	for _, tt := range []struct {
		name                string
		body                string
		status              int
		wantInuse, wantGoal float64
		wantErr             string
	}{
		{name: "both", body: body, wantInuse: 862453760.0 / (1 << 20), wantGoal: 1019000000.0 / (1 << 20)},
		{name: "missing", body: strings.ReplaceAll(body, "next_gc", "last_gc"), wantErr: "/metrics has no go_memstats_next_gc_bytes"},
		{name: "unparsable", body: strings.ReplaceAll(body, "1.019e+09", "lots"), wantErr: `parsing go_memstats_next_gc_bytes in /metrics (line 4): expected float as value, got "lots"`},
		{name: "refused", body: "forbidden\n", status: http.StatusForbidden, wantErr: "reading /metrics"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			inuse, goal, err := readHeap(context.Background(), promtexttest.Client(t, tt.status, tt.body).CoreV1().RESTClient())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || inuse != tt.wantInuse || goal != tt.wantGoal {
				t.Fatalf("readHeap = %v, %v, %v; want %v, %v", inuse, goal, err, tt.wantInuse, tt.wantGoal)
			}
		})
	}
}

func TestParse(t *testing.T) {
	c, err := parse([]string{"-idplane", "/bin/idplane", "-server-arg=--a=1", "-server-arg=--b", "-pods", "10"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.serverArgs, " ") != "--a=1 --b" || c.populate.Pods != 10 || c.populate.Nodes != 1000 {
		t.Errorf("parsed %+v", c)
	}
	if c, err := parse([]string{"-plane", "bench/upstream/plane.sh -k /rsa.key"}); err != nil || c.planeCmd != "bench/upstream/plane.sh -k /rsa.key" {
		t.Errorf("parse -plane: %+v, %v", c, err)
	}
	for _, args := range [][]string{{}, {"-idplane", "x", "-runs", "0"}, {"-idplane", "x", "-nodes", "0"},
		{"-idplane", "x", "-plane", "y"}, {"-plane", "y", "-server-arg=--a"}, {"-plane", "  "}} {
		if _, err := parse(args); err == nil {
			t.Errorf("parse(%q) accepted", args)
		}
	}
}
