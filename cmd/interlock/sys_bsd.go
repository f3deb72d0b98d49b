//go:build unix && !linux

package main

import "syscall"

// childAttr starts CMD in a process group of its own when ownGroup is set.
// Only Linux can also signal CMD when interlock dies.
func childAttr(ownGroup bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: ownGroup}
}

// holderAttr starts a demo holder in its own process group.
func holderAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
