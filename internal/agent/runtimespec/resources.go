package runtimespec

import (
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
)

// CPU weights and quotas as the kubelet computes them for cgroups: a CPU is 1024 shares and
// one quota period of CPU time.
const (
	sharesPerCPU = 1024
	minShares    = 2
	maxShares    = 262144
	cpuPeriod    = 100000    // µs, the CFS default
	minQuota     = 1000      // µs, the least the kernel accepts
	maxQuota     = 1<<44 - 1 // µs, the largest the kernel accepts
	milliPerCPU  = 1000
)

// resources is the container's cgroup settings from its requests and limits: CPU shares from
// the CPU request (the limit when only it is set, as API defaulting does), a CFS quota from the
// CPU limit, a memory limit, and the device allowlist.
func resources(c *corev1.Container, privileged bool) *specs.LinuxResources {
	r := &specs.LinuxResources{}
	if privileged {
		r.Devices = []specs.LinuxDeviceCgroup{{Allow: true, Access: "rwm"}}
	} else {
		r.Devices = append([]specs.LinuxDeviceCgroup(nil), defaultDevices...)
	}

	req, hasReq := c.Resources.Requests[corev1.ResourceCPU]
	limit, hasLimit := c.Resources.Limits[corev1.ResourceCPU]
	if !hasReq && hasLimit {
		req = limit
	}
	shares := uint64(minShares)
	if m := req.MilliValue(); m > 0 {
		// Compared before multiplying, so a huge request cannot overflow into a small weight.
		m = min(m, maxShares*milliPerCPU/sharesPerCPU+1)
		shares = uint64(min(max(m*sharesPerCPU/milliPerCPU, minShares), maxShares))
	}
	period := uint64(cpuPeriod)
	r.CPU = &specs.LinuxCPU{Shares: &shares}
	if m := limit.MilliValue(); hasLimit && m > 0 {
		// A quota past what the kernel takes is no limit at all; it is capped rather than
		// left to overflow into a small one.
		m = min(m, maxQuota/cpuPeriod*milliPerCPU)
		quota := max(m*cpuPeriod/milliPerCPU, minQuota)
		r.CPU.Quota, r.CPU.Period = &quota, &period
	}

	if mem, ok := c.Resources.Limits[corev1.ResourceMemory]; ok && mem.Value() > 0 {
		bytes := mem.Value()
		r.Memory = &specs.LinuxMemory{Limit: &bytes}
	}
	return r
}
