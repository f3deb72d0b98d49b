//go:build unix && !linux

package proc

import "syscall"

// Attr returns the attributes of a process interlock starts: a process
// group of its own when ownGroup is set. Only Linux can also signal the
// process when interlock dies, so deathSig is not used here.
func Attr(ownGroup bool, _ syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: ownGroup}
}
