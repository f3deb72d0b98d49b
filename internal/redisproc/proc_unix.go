//go:build unix

package redisproc

import (
	"errors"
	"syscall"
)

// Signals used for process control; proc_other.go defines placeholders where
// they do not exist.
var (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
	sigStop = syscall.SIGSTOP
	sigCont = syscall.SIGCONT
)

// signalGroup sends sig to the process group led by pid, which also reaches
// the children redis-server forks (for example to send an RDB to a replica).
// A group that no longer exists is not an error.
func signalGroup(pid int, sig syscall.Signal) error {
	if err := syscall.Kill(-pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
