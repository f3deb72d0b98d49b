//go:build unix && !linux

package redisproc

import "syscall"

// SysProcAttr returns the attributes every process of this package is
// started with, for helpers such as redis-cli to use too: a process group
// of its own. Only Linux can also tie a process's life to its parent
// (Pdeathsig).
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
