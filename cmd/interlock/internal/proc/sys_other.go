//go:build !unix

package proc

import (
	"errors"
	"os"
	"syscall"
)

// Forwarded are the signals run catches and passes on to CMD: only an
// interrupt can be caught here.
var Forwarded = []os.Signal{os.Interrupt}

// PauseSignal and ResumeSignal are placeholders: processes cannot be
// paused here.
var PauseSignal, ResumeSignal syscall.Signal

// Kill cannot signal processes without Unix signals.
func Kill(int, syscall.Signal) error { return errors.ErrUnsupported }

// InTerminalForeground reports true: CMD always shares interlock's
// console.
func InTerminalForeground() bool { return true }

// Attr has nothing to set.
func Attr(bool, syscall.Signal) *syscall.SysProcAttr { return nil }
