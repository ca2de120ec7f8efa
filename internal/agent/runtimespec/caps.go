package runtimespec

import (
	"fmt"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
)

// linuxCaps lists every Linux capability by kernel number: a privileged container gets all of
// them, and a name not in this list is refused rather than passed to a runtime that would fail
// on it later.
var linuxCaps = []string{
	"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
	"SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW",
	"IPC_LOCK", "IPC_OWNER", "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT",
	"SYS_ADMIN", "SYS_BOOT", "SYS_NICE", "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD",
	"LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG",
	"WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE",
}

// defaultCaps is the set Docker (and containerd's CRI plugin after it) grants a container that
// asks for nothing.
var defaultCaps = []string{
	"CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID", "SETUID",
	"SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL", "AUDIT_WRITE",
}

// capAll in add or drop means every capability.
const capAll = "ALL"

// capabilities is the process's capability sets. Privileged: every capability, add and drop
// ignored, as CRI runtimes do. Otherwise the default set, then "ALL" in add (everything) and
// "ALL" in drop (nothing), then the named additions, then the named drops — so drop wins over add
// and ["ALL"] in drop with a few adds keeps just those. Inheritable and ambient sets stay empty:
// filling them lets an unprivileged exec'd program keep capabilities (CVE-2022-24769).
func capabilities(sc *corev1.SecurityContext) (*specs.LinuxCapabilities, error) {
	var add, drop []corev1.Capability
	if sc.Capabilities != nil {
		add, drop = sc.Capabilities.Add, sc.Capabilities.Drop
	}
	addNames, addAll, err := capNames(add)
	if err != nil {
		return nil, fmt.Errorf("capabilities.add: %w", err)
	}
	dropNames, dropAll, err := capNames(drop)
	if err != nil {
		return nil, fmt.Errorf("capabilities.drop: %w", err)
	}

	set := map[string]bool{}
	switch {
	case sc.Privileged != nil && *sc.Privileged:
		for _, c := range linuxCaps {
			set[c] = true
		}
	default:
		for _, c := range defaultCaps {
			set[c] = true
		}
		if addAll {
			for _, c := range linuxCaps {
				set[c] = true
			}
		}
		if dropAll {
			clear(set)
		}
		for _, c := range addNames {
			set[c] = true
		}
		for _, c := range dropNames {
			delete(set, c)
		}
	}

	var list []string
	for _, c := range linuxCaps {
		if set[c] {
			list = append(list, "CAP_"+c)
		}
	}
	return &specs.LinuxCapabilities{
		Bounding:  list,
		Effective: list,
		Permitted: list,
	}, nil
}

// capNames normalises Kubernetes capability names ("NET_ADMIN", also seen as "net_admin" or
// "CAP_NET_ADMIN") to the kernel's names without prefix, and says whether "ALL" was among them.
func capNames(caps []corev1.Capability) (names []string, all bool, err error) {
	for _, c := range caps {
		n := strings.TrimPrefix(strings.ToUpper(string(c)), "CAP_")
		if n == capAll {
			all = true
			continue
		}
		if !isLinuxCap(n) {
			return nil, false, fmt.Errorf("unknown capability %q", c)
		}
		names = append(names, n)
	}
	return names, all, nil
}

func isLinuxCap(n string) bool {
	for _, c := range linuxCaps {
		if c == n {
			return true
		}
	}
	return false
}
