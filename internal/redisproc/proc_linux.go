//go:build linux

package redisproc

import "syscall"

// SysProcAttr returns the attributes every process of this package is
// started with, for helpers such as redis-cli to use too: a process group
// of its own, and SIGKILL from the kernel when the thread that started it,
// and so the parent process, dies.
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
