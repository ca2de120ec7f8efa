package procstat

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

// fakeProc is a /proc holding only the given files, by path under it.
func fakeProc(t *testing.T, files map[string]string) procfs.FS {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fs, err := procfs.NewFS(root)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// statTail are the fields of a Linux 6 /proc/<pid>/stat after the CPU times (field 16 on).
var statTail = strings.Repeat(" 0", 37)

func TestCPU(t *testing.T) {
	tests := []struct {
		name    string
		stat    string
		want    time.Duration
		wantErr bool
	}{
		{
			name: "plain",
			stat: "22033 (cat) R 22029 22029 18444 0 -1 4194304 99 0 0 0 250 75" + statTail,
			want: 3250 * time.Millisecond,
		},
		{
			name: "command with spaces and parentheses",
			stat: "7 (a) b (c)) S 1 7 7 0 -1 0 0 0 0 0 1 2" + statTail,
			want: 30 * time.Millisecond,
		},
		{name: "no command", stat: "7 S 1 7", wantErr: true},
		{name: "short", stat: "7 (x) S 1 7 7 0 -1 0 0 0 0 0 1", wantErr: true},
		{name: "not a number", stat: "7 (x) S 1 7 7 0 -1 0 0 0 0 0 one 2" + statTail, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cpu(fakeProc(t, map[string]string{"7/stat": tt.stat}), 7)
			if (err != nil) != tt.wantErr {
				t.Fatalf("cpu error %v, want error %t", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("cpu = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestReadMemory(t *testing.T) {
	tests := []struct {
		name    string
		status  string
		want    Memory
		wantErr bool
	}{
		{
			name: "both",
			status: "Name:\tidplane\nVmPeak:\t  900 kB\nVmHWM:\t    4096 kB\nVmRSS:\t    2048 kB\n" +
				"RssAnon:\t    1536 kB\nRssFile:\t     512 kB\nRssShmem:\t       0 kB\nThreads:\t9\n",
			want: Memory{RSS: 2 << 20, HWM: 4 << 20, Anon: 3 << 19, File: 1 << 19},
		},
		{name: "no rss", status: "Name:\tzombie\nThreads:\t1\n", wantErr: true},
		{name: "garbled", status: "VmRSS:\t lots kB\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readMemory(fakeProc(t, map[string]string{"7/status": tt.status}), 7)
			if (err != nil) != tt.wantErr {
				t.Fatalf("readMemory error %v, want error %t", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("readMemory = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestNoSuchProcess(t *testing.T) {
	fs := fakeProc(t, nil)
	if _, err := readMemory(fs, 7); err == nil {
		t.Error("readMemory of a missing process: no error")
	}
	if _, err := cpu(fs, 7); err == nil {
		t.Error("cpu of a missing process: no error")
	}
}

// TestSelf reads this test process's own files, the format the library reads.
func TestSelf(t *testing.T) {
	m, err := ReadMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS <= 0 || m.HWM < m.RSS {
		t.Errorf("memory %+v: want 0 < RSS <= HWM", m)
	}
	if _, err := CPU(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadAverage(); err != nil {
		t.Fatal(err)
	}
}

func TestLoadAverage(t *testing.T) {
	fs := fakeProc(t, map[string]string{"loadavg": "1.52 0.98 0.40 3/611 22033\n"})
	if l, err := loadAverage(fs); err != nil || l != 1.52 {
		t.Errorf("loadAverage = %v, %v; want 1.52", l, err)
	}
	if _, err := loadAverage(fakeProc(t, map[string]string{"loadavg": ""})); err == nil {
		t.Error("loadAverage of nothing: no error")
	}
}
