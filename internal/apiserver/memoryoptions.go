package apiserver

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
)

// MemoryOptions steer the Go runtime's garbage collector for the server process.
type MemoryOptions struct {
	// Limit is a soft memory limit (a quantity such as 900Mi); empty leaves the runtime's own
	// (GOMEMLIMIT, else none).
	Limit string
}

// minMemoryLimit refuses limits below what an idle server already holds, which would only make
// the collector run without end.
const minMemoryLimit = 256 << 20

const memoryLimitHelp = "Soft memory limit of the server process (a quantity: 900Mi, 2Gi), the Go runtime's " +
	"GOMEMLIMIT. Without it the collector lets the heap grow to twice what is live, so about half of the " +
	"resident memory is garbage waiting to be collected; with it the collector runs more often as the " +
	"heap nears the limit and keeps the process under it while what is live fits. The cost is CPU: " +
	"near the limit garbage collection may take up to half of it, and requests slow down; above it, " +
	"when more is live than the limit, the process still grows (it is not killed). " +
	"Set it well above the heap the server needs (go_memstats_heap_inuse_bytes on /metrics once quiet). " +
	"Empty: the GOMEMLIMIT environment variable, else no limit."

// AddFlags registers the flags.
func (o *MemoryOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Limit, "memory-limit", o.Limit, memoryLimitHelp)
}

// limitBytes parses Limit; 0 when it is empty.
func (o *MemoryOptions) limitBytes() (int64, error) {
	if o.Limit == "" {
		return 0, nil
	}
	q, err := resource.ParseQuantity(o.Limit)
	if err != nil {
		return 0, fmt.Errorf("--memory-limit %q: %w", o.Limit, err)
	}
	if b, ok := q.AsInt64(); !ok || b < minMemoryLimit {
		return 0, fmt.Errorf("--memory-limit %q: must be at least 256Mi", o.Limit)
	}
	return q.Value(), nil
}

// Validate reports every invalid setting.
func (o *MemoryOptions) Validate() []error {
	if _, err := o.limitBytes(); err != nil {
		return []error{err}
	}
	return nil
}

// apply sets the runtime's soft memory limit when one is given. It is process-wide: servers
// sharing a process (tests) share it.
func (o *MemoryOptions) apply() error {
	limit, err := o.limitBytes()
	if err != nil || limit == 0 {
		return err
	}
	debug.SetMemoryLimit(limit)
	klog.InfoS("Soft memory limit set", "bytes", limit)
	return nil
}
