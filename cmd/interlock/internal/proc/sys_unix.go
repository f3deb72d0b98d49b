//go:build unix

package proc

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Forwarded are the signals run catches and passes on to CMD. They would
// otherwise kill interlock and leave CMD running without its lock being
// renewed.
var Forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// PauseSignal and ResumeSignal pause and resume a process (the demo's
// holder); sys_other.go has placeholders where they do not exist.
var (
	// PauseSignal pauses a process: SIGSTOP.
	PauseSignal = syscall.SIGSTOP
	// ResumeSignal resumes a paused process: SIGCONT.
	ResumeSignal = syscall.SIGCONT
)

// Kill sends sig to pid (a process group when negative). A process that
// no longer exists is not an error.
func Kill(pid int, sig syscall.Signal) error {
	if err := syscall.Kill(pid, sig); err != nil && err != syscall.ESRCH {
		return err
	}
	return nil
}

// InTerminalForeground reports whether interlock has a controlling terminal
// and is in its foreground process group, where CMD may read the terminal
// (in another group, reading it would stop CMD with SIGTTIN).
func InTerminalForeground() bool {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return false // no controlling terminal
	}
	defer tty.Close()
	pgrp, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCGPGRP)
	return err == nil && pgrp == syscall.Getpgrp()
}
