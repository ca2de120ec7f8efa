// Package procstat reads what the load tools report about the processes they launch: resident
// memory and CPU time, from Linux's /proc.
package procstat

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of the CPU times in /proc/<pid>/stat; Linux fixes it at 100 for
// user space on every architecture Go supports.
const clockTicks = 100

// Memory is a process's resident set size now (VmRSS) and at its peak (VmHWM), in bytes. RSS
// is the sum of anonymous memory (RssAnon: the heap, stacks) and file pages (RssFile: mostly the
// binary's text and data) and shared memory (RssShmem).
type Memory struct{ RSS, HWM, Anon, File int64 }

// ReadMemory reads the memory figures of process pid.
func ReadMemory(pid int) (Memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, fmt.Errorf("reading memory of process %d: %w", pid, err)
	}
	m, err := ParseStatus(b)
	if err != nil {
		return Memory{}, fmt.Errorf("/proc/%d/status: %w", pid, err)
	}
	return m, nil
}

// ParseStatus reads VmRSS, VmHWM, RssAnon and RssFile from the text of /proc/<pid>/status.
func ParseStatus(status []byte) (Memory, error) {
	var m Memory
	fields := map[string]*int64{"VmRSS": &m.RSS, "VmHWM": &m.HWM, "RssAnon": &m.Anon, "RssFile": &m.File}
	for line := range strings.Lines(string(status)) {
		key, value, ok := strings.Cut(line, ":")
		field := fields[key]
		if !ok || field == nil {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return Memory{}, fmt.Errorf("parsing %s: %w", key, err)
		}
		*field = kb << 10
	}
	if m.RSS == 0 {
		return Memory{}, fmt.Errorf("no VmRSS")
	}
	return m, nil
}

// CPU returns the user plus system CPU time process pid has used so far.
func CPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading CPU time of process %d: %w", pid, err)
	}
	d, err := ParseStat(b)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return d, nil
}

// ParseStat returns utime plus stime from the text of /proc/<pid>/stat.
func ParseStat(stat []byte) (time.Duration, error) {
	// The command name in parentheses may hold spaces and parentheses; the numbered fields follow
	// its last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("no command name")
	}
	fields := strings.Fields(string(stat[i+1:]))
	// utime and stime are fields 14 and 15 of stat; fields[0] here is field 3.
	if len(fields) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want at least 13", len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing CPU ticks: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
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
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, fmt.Errorf("reading the load average: %w", err)
	}
	return ParseLoadAverage(b)
}

// ParseLoadAverage reads the one-minute figure from the text of /proc/loadavg.
func ParseLoadAverage(loadavg []byte) (float64, error) {
	first, _, _ := strings.Cut(strings.TrimSpace(string(loadavg)), " ")
	l, err := strconv.ParseFloat(first, 64)
	if err != nil {
		return 0, fmt.Errorf("parsing the load average %q: %w", first, err)
	}
	return l, nil
}
