//go:build linux

package proc

import "syscall"

// Attr returns the attributes of a process interlock starts: a process group
// of its own when ownGroup is set, and deathSig from the kernel should
// interlock die (run's CMD must not go on without the lock it renews).
func Attr(ownGroup bool, deathSig syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: ownGroup, Pdeathsig: deathSig}
}
