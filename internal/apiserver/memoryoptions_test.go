package apiserver

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestMemoryOptions(t *testing.T) {
	for _, tc := range []struct {
		limit   string
		want    int64
		wantErr string
	}{
		{"", 0, ""},
		{"900Mi", 900 << 20, ""},
		{"2G", 2_000_000_000, ""},
		{"256Mi", 256 << 20, ""},
		{"255Mi", 0, `--memory-limit "255Mi": must be at least 256Mi`},
		{"-1Gi", 0, "must be at least 256Mi"},
		{"lots", 0, `--memory-limit "lots": quantities must match`},
	} {
		t.Run(tc.limit, func(t *testing.T) {
			o := MemoryOptions{Limit: tc.limit}
			errs := o.Validate()
			if tc.wantErr != "" {
				if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.wantErr) {
					t.Fatalf("Validate() = %v, want an error containing %q", errs, tc.wantErr)
				}
				return
			}
			if len(errs) != 0 {
				t.Fatalf("Validate() = %v", errs)
			}
			if got, _ := o.limitBytes(); got != tc.want {
				t.Errorf("limit = %d, want %d", got, tc.want)
			}
		})
	}
}

// The flag sets the runtime's soft limit; without it the runtime's own stays.
func TestMemoryLimitApplied(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	if err := (&MemoryOptions{}).apply(); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Fatalf("no --memory-limit changed the runtime's limit to %d", got)
	}
	if err := (&MemoryOptions{Limit: "900Mi"}).apply(); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != 900<<20 {
		t.Errorf("runtime memory limit = %d, want %d", got, 900<<20)
	}
}
