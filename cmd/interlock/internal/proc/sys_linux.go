//go:build linux

package proc

import "syscall"

// Attr returns the attributes of a process interlock starts: a process
// group of its own when ownGroup is set, and deathSig from the kernel
// should interlock die, so that the process does not go on without
// interlock (run's CMD without the lock interlock no longer renews).
func Attr(ownGroup bool, deathSig syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: ownGroup, Pdeathsig: deathSig}
}
