package procstat

import (
	"os"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name    string
		stat    string
		want    time.Duration
		wantErr bool
	}{
		{
			name: "plain",
			stat: "22033 (cat) R 22029 22029 18444 0 -1 4194304 99 0 0 0 250 75 0 0 20 0 1 0 924166 3133440 383",
			want: 3250 * time.Millisecond,
		},
		{
			name: "command with spaces and parentheses",
			stat: "7 (a) b (c)) S 1 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 1 1 1",
			want: 30 * time.Millisecond,
		},
		{name: "no command", stat: "7 S 1 7", wantErr: true},
		{name: "short", stat: "7 (x) S 1 7 7 0 -1 0 0 0 0 0 1", wantErr: true},
		{name: "not a number", stat: "7 (x) S 1 7 7 0 -1 0 0 0 0 0 one 2 0", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStat([]byte(tt.stat))
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseStat error %v, want error %t", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("ParseStat = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestParseStatus(t *testing.T) {
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
			got, err := ParseStatus([]byte(tt.status))
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseStatus error %v, want error %t", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("ParseStatus = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestSelf reads this test process's own files, the format the parsers were written for.
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
}

func TestParseLoadAverage(t *testing.T) {
	if l, err := ParseLoadAverage([]byte("1.52 0.98 0.40 3/611 22033\n")); err != nil || l != 1.52 {
		t.Errorf("ParseLoadAverage = %v, %v; want 1.52", l, err)
	}
	if _, err := ParseLoadAverage([]byte("")); err == nil {
		t.Error("ParseLoadAverage of nothing: no error")
	}
}
