package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestReadAnnouncement(t *testing.T) {
	for _, tt := range []struct {
		name, out  string
		kubeconfig string
		pids       []int
		wantErr    string
	}{
		{"both, with other lines", "building\nkubeconfig=/d/admin.kubeconfig\nnoise=1\npids=10,11, 12\n", "/d/admin.kubeconfig", []int{10, 11, 12}, ""},
		{"pids first", "pids=7\nkubeconfig=/k\n", "/k", []int{7}, ""},
		{"no pids", "kubeconfig=/k\n", "", nil, "without both kubeconfig= and pids="},
		{"nothing", "", "", nil, "without both"},
		{"a pid that is no number", "kubeconfig=/k\npids=1,x\n", "", nil, `announced pids "1,x"`},
		{"a zero pid", "kubeconfig=/k\npids=0\n", "", nil, `announced pids "0"`},
		{"an empty list", "kubeconfig=/k\npids=\n", "", nil, `announced pids ""`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, err := readAnnouncement(strings.NewReader(tt.out))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || a.kubeconfig != tt.kubeconfig || !slices.Equal(a.pids, tt.pids) {
				t.Fatalf("got %+v, %v; want %s %v", a, err, tt.kubeconfig, tt.pids)
			}
		})
	}
}

// script writes an executable shell script and returns its path.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "plane")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPlaneCommand(t *testing.T) {
	// The script announces itself as the plane, then runs until SIGTERM.
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := script(t, `echo starting
echo $$ > `+pidFile+`
echo kubeconfig=/some/admin.kubeconfig
echo pids=$$
trap 'exit 0' TERM
while :; do sleep 0.05; done
`)
	c := config{planeCmd: cmd, startTimeout: 30 * time.Second}
	pl, err := startPlane(context.Background(), c, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	if pl.kubeconfig != "/some/admin.kubeconfig" || len(pl.pids) != 1 || strings.TrimSpace(string(b)) != strconv.Itoa(pl.pids[0]) {
		t.Fatalf("plane %+v, script pid %s", pl, b)
	}
	m, err := planeMemory(pl.pids)
	if err != nil || m.RSS <= 0 {
		t.Fatalf("memory %+v, %v", m, err)
	}
	if _, err := planeCPU(pl.pids); err != nil {
		t.Fatal(err)
	}
	pl.stop()
	if _, err := planeMemory(pl.pids); err == nil {
		t.Error("the plane's process still runs after stop")
	}
}

func TestPlaneCommandFails(t *testing.T) {
	for _, tt := range []struct {
		name, body, wantErr string
	}{
		{"exits without announcing", "echo plane.sh: kube-apiserver not ready >&2\nexit 1\n", "kube-apiserver not ready"},
		{"announces garbage", "echo kubeconfig=/k\necho pids=abc\nsleep 30\n", `announced pids "abc"`},
		{"announces nothing in time", "sleep 30\n", "announced no plane within"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := config{planeCmd: script(t, tt.body), startTimeout: 2 * time.Second}
			_, err := startPlane(context.Background(), c, t.TempDir())
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
