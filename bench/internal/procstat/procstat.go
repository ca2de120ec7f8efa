// Package procstat reads what the load tools report about the processes they launch: resident
// memory and CPU time, from Linux's /proc through prometheus/procfs.
package procstat

import (
	"fmt"
	"math"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
)

// defaultFS is the system's /proc, opened on first use.
var defaultFS = sync.OnceValues(procfs.NewDefaultFS)

// Memory is a process's resident set size now (VmRSS) and at its peak (VmHWM), in bytes. RSS
// is the sum of anonymous memory (RssAnon: the heap, stacks) and file pages (RssFile: mostly the
// binary's text and data) and shared memory (RssShmem).
type Memory struct{ RSS, HWM, Anon, File int64 }

// ReadMemory reads the memory figures of process pid.
func ReadMemory(pid int) (Memory, error) {
	fs, err := defaultFS()
	if err != nil {
		return Memory{}, fmt.Errorf("reading memory of process %d: %w", pid, err)
	}
	return readMemory(fs, pid)
}

func readMemory(fs procfs.FS, pid int) (Memory, error) {
	p, err := fs.Proc(pid)
	if err != nil {
		return Memory{}, fmt.Errorf("reading memory of process %d: %w", pid, err)
	}
	s, err := p.NewStatus()
	if err != nil {
		return Memory{}, fmt.Errorf("reading memory of process %d: %w", pid, err)
	}
	// The library reads a figure it cannot parse as 0; a live process always has some RSS.
	if s.VmRSS == 0 {
		return Memory{}, fmt.Errorf("reading memory of process %d: no VmRSS", pid)
	}
	return Memory{RSS: int64(s.VmRSS), HWM: int64(s.VmHWM), Anon: int64(s.RssAnon), File: int64(s.RssFile)}, nil
}

// CPU returns the user plus system CPU time process pid has used so far.
func CPU(pid int) (time.Duration, error) {
	fs, err := defaultFS()
	if err != nil {
		return 0, fmt.Errorf("reading CPU time of process %d: %w", pid, err)
	}
	return cpu(fs, pid)
}

func cpu(fs procfs.FS, pid int) (time.Duration, error) {
	p, err := fs.Proc(pid)
	if err != nil {
		return 0, fmt.Errorf("reading CPU time of process %d: %w", pid, err)
	}
	s, err := p.Stat()
	if err != nil {
		return 0, fmt.Errorf("reading CPU time of process %d: %w", pid, err)
	}
	// CPUTime is in seconds, from whole clock ticks: rounding to the nanosecond undoes the
	// float's error.
	return time.Duration(math.Round(s.CPUTime() * float64(time.Second))), nil
}

// SelfCPU returns the user plus system CPU time the calling process has used so far.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// MiB converts bytes to mebibytes.
func MiB(bytes int64) float64 { return float64(bytes) / (1 << 20) }

// LoadAverage is the machine's one-minute load average.
func LoadAverage() (float64, error) {
	fs, err := defaultFS()
	if err != nil {
		return 0, fmt.Errorf("reading the load average: %w", err)
	}
	return loadAverage(fs)
}

func loadAverage(fs procfs.FS) (float64, error) {
	l, err := fs.LoadAvg()
	if err != nil {
		return 0, fmt.Errorf("reading the load average: %w", err)
	}
	return l.Load1, nil
}
