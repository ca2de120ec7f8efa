package runtimespec

import (
	"path"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
)

// What containerd's default Linux spec gives every container, so that a runtime handed
// config.json as it is (runc run) starts a container that looks like one a CRI runtime starts.

// defaultPath is the PATH of a container whose env sets none; the image's own PATH is the
// runtime's to apply, since only it holds the image.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// defaultMounts are the kernel filesystems every container gets, in mount order. A volume mounted
// at one of these destinations replaces it.
var defaultMounts = []specs.Mount{
	{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
	{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
	{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
	{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
	{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
	{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
	{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: []string{"nosuid", "noexec", "nodev", "relatime", "ro"}},
}

// hostShm replaces the container's own /dev/shm when the pod shares the host's IPC namespace:
// POSIX shared memory lives there, and a private tmpfs would split it from the host's.
var hostShm = specs.Mount{Destination: "/dev/shm", Type: "bind", Source: "/dev/shm", Options: []string{"rbind", "rw", "rprivate"}}

// maskedPaths hide kernel state a container has no business reading (keys, kernel memory,
// timers that leak other processes' activity); readonlyPaths keep the rest of /proc's knobs
// from being turned. Both as containerd's defaults; a privileged container or procMount
// Unmasked gets neither.
var (
	maskedPaths = []string{
		"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
		"/sys/firmware", "/sys/devices/virtual/powercap",
	}
	readonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// defaultRlimits are containerd's: a runtime would otherwise hand the container whatever limit
// the runtime itself runs with.
var defaultRlimits = []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 1024, Soft: 1024}}

// deviceRule allows one device class in the device cgroup.
func deviceRule(typ string, major, minor int64) specs.LinuxDeviceCgroup {
	r := specs.LinuxDeviceCgroup{Allow: true, Type: typ, Major: &major, Access: "rwm"}
	if minor >= 0 {
		r.Minor = &minor
	}
	return r
}

// defaultDevices is the device cgroup of an unprivileged container: everything denied but the
// devices every Linux program expects (null, zero, full, random, urandom, tty, console, ptmx and
// the pseudo-terminals; minor -1 is every minor).
var defaultDevices = []specs.LinuxDeviceCgroup{
	{Allow: false, Access: "rwm"},
	deviceRule("c", 1, 3), deviceRule("c", 1, 5), deviceRule("c", 1, 7), deviceRule("c", 1, 8),
	deviceRule("c", 1, 9), deviceRule("c", 5, 0), deviceRule("c", 5, 1), deviceRule("c", 5, 2),
	deviceRule("c", 136, -1),
}

// namespaces are the namespaces a container gets of its own; a pod that asks for the host's
// PID, IPC or network namespace gets none of that type, and with the host's network also the
// host's UTS namespace (and so its hostname), as CRI runtimes do.
func namespaces(pod *corev1.Pod) []specs.LinuxNamespace {
	ns := []specs.LinuxNamespace{{Type: specs.MountNamespace}}
	if !pod.Spec.HostPID {
		ns = append(ns, specs.LinuxNamespace{Type: specs.PIDNamespace})
	}
	if !pod.Spec.HostIPC {
		ns = append(ns, specs.LinuxNamespace{Type: specs.IPCNamespace})
	}
	if !pod.Spec.HostNetwork {
		ns = append(ns, specs.LinuxNamespace{Type: specs.NetworkNamespace}, specs.LinuxNamespace{Type: specs.UTSNamespace})
	}
	return ns
}

// systemMounts are the default mounts for this pod, without those a volume mount replaces;
// privileged containers get /sys and its cgroups read-write, as in CRI runtimes.
func systemMounts(pod *corev1.Pod, privileged bool, volumeMounts []specs.Mount) []specs.Mount {
	taken := make(map[string]bool, len(volumeMounts))
	for _, m := range volumeMounts {
		taken[path.Clean(m.Destination)] = true
	}
	var out []specs.Mount
	for _, m := range defaultMounts {
		if taken[m.Destination] {
			continue
		}
		if m.Destination == hostShm.Destination && pod.Spec.HostIPC {
			m = hostShm
		}
		m.Options = append([]string(nil), m.Options...)
		if privileged && (m.Type == "sysfs" || m.Type == "cgroup") {
			for i, o := range m.Options {
				if o == "ro" {
					m.Options[i] = "rw"
				}
			}
		}
		out = append(out, m)
	}
	return out
}
