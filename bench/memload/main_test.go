package main

import (
	"strings"
	"testing"
)

func TestGauges(t *testing.T) {
	const body = `# HELP go_memstats_heap_inuse_bytes Number of heap bytes that are in use.
# TYPE go_memstats_heap_inuse_bytes gauge
go_memstats_heap_inuse_bytes 8.6245376e+08
go_memstats_next_gc_bytes 1.019e+09
go_memstats_heap_inuse_bytes_other{x="y"} 1
`
	for _, tt := range []struct {
		name    string
		body    string
		want    map[string]int64
		wantErr string
	}{
		{"both", body, map[string]int64{heapInuseMetric: 862453760, heapGoalMetric: 1019000000}, ""},
		{"missing", strings.ReplaceAll(body, "next_gc", "last_gc"), nil, "/metrics has no go_memstats_next_gc_bytes"},
		{"unparsable", strings.ReplaceAll(body, "1.019e+09", "lots"), nil, `parsing go_memstats_next_gc_bytes "lots"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := gauges([]byte(tt.body), heapInuseMetric, heapGoalMetric)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || len(got) != len(tt.want) {
				t.Fatalf("gauges = %v, %v; want %v", got, err, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %d, want %d", k, got[k], v)
				}
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
		{"-idplane", "x", "-plane", "y"}, {"-plane", "y", "-server-arg=--a"}} {
		if _, err := parse(args); err == nil {
			t.Errorf("parse(%q) accepted", args)
		}
	}
}
