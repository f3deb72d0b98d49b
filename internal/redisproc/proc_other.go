//go:build !unix

package redisproc

import (
	"errors"
	"syscall"
)

// Placeholders: without Unix signals a server can only be started and left
// to die with its parent.
var sigTerm, sigKill, sigStop, sigCont syscall.Signal

// SysProcAttr returns the attributes every process of this package is
// started with: none here.
func SysProcAttr() *syscall.SysProcAttr { return nil }

// signalGroup cannot signal without Unix signals.
func signalGroup(int, syscall.Signal) error {
	return errors.ErrUnsupported
}
