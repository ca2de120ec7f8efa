package serverproc

import (
	"strings"
	"testing"
)

func TestParseStatus(t *testing.T) {
	tests := []struct {
		name    string
		status  string
		want    Memory
		wantErr string
	}{
		{name: "both", status: "Name:\tidplane\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\nThreads:\t12\n", want: Memory{RSS: 100 << 20, HWM: 200 << 20}},
		{name: "no RSS", status: "Name:\tzombie\n", wantErr: "no VmRSS"},
		{name: "garbage", status: "VmRSS:\tlots kB\n", wantErr: "parsing VmRSS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatus(1, []byte(tt.status))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseStatus error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("parseStatus = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}
