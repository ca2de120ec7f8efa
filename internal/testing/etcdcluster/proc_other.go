//go:build !linux

package etcdcluster

import "syscall"

// memberProcAttr: only Linux can tie a child's life to its parent's; elsewhere Close stops members.
func memberProcAttr() *syscall.SysProcAttr { return nil }
