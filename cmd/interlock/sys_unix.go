//go:build unix

package main

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// forwardedSignals are the signals run catches and passes on to CMD. They
// would otherwise kill interlock and leave CMD running without its lock
// being renewed.
var forwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// The signals that pause and resume a demo holder; sys_other.go has
// placeholders where they do not exist.
var (
	sigStop = syscall.SIGSTOP
	sigCont = syscall.SIGCONT
)

// killProcess sends sig to pid (a process group when negative). A process
// that no longer exists is not an error.
func killProcess(pid int, sig syscall.Signal) error {
	if err := syscall.Kill(pid, sig); err != nil && err != syscall.ESRCH {
		return err
	}
	return nil
}

// inTerminalForeground reports whether interlock has a controlling
// terminal and is in its foreground process group: then CMD may want to
// read the terminal, which a process in another group cannot do without
// being stopped (SIGTTIN).
func inTerminalForeground() bool {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return false // no controlling terminal
	}
	defer tty.Close()
	pgrp, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCGPGRP)
	return err == nil && pgrp == syscall.Getpgrp()
}
