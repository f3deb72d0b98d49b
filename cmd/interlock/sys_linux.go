//go:build linux

package main

import "syscall"

// childAttr starts CMD in a process group of its own when ownGroup is set,
// and has the kernel send it SIGTERM should interlock die, so that CMD
// does not go on without the lock that interlock no longer renews.
func childAttr(ownGroup bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: ownGroup, Pdeathsig: syscall.SIGTERM}
}

// holderAttr starts a demo holder in its own process group (the terminal's
// Ctrl-C is for the demo, which stops the holder itself) and kills it
// should the demo die.
func holderAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
