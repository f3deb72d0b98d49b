//go:build !unix

package redistest

import (
	"errors"
	"syscall"
)

// Placeholders: without Unix signals a server can only be started and left
// to die with its parent.
var sigTerm, sigKill, sigStop, sigCont syscall.Signal

func sysProcAttr() *syscall.SysProcAttr { return nil }

func signalGroup(int, syscall.Signal) error {
	return errors.ErrUnsupported
}
