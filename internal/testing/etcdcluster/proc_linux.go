package etcdcluster

import "syscall"

// memberProcAttr makes the kernel kill a member when the test process dies, so a test binary
// killed on timeout leaves no etcd holding its ports and data.
func memberProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
