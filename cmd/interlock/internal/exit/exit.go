// Package exit holds interlock's exit codes and the errors that carry
// them. A command returns an error; Report prints its message and gives
// the code interlock exits with. Failed is the one mapping of a failed
// call into the interlock packages, or into Redis, to an exit code, so that
// every command reports the same failure with the same code.
package exit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/interlock-go/interlock"
)

// Exit codes. They are part of interlock's interface: scripts test them, so
// they never change meaning. The package documentation of the command and
// Help list them too.
const (
	// OK is success (for run: CMD exited 0).
	OK = 0
	// Failure is a failure that has no code of its own, such as a demo
	// scene that did not turn out as it should, or an unlock that left the
	// lock because it is not locked as --kind said.
	Failure = 1
	// Hazard is doctor's verdict on a setting or state that can silently
	// break mutual exclusion (doctor's warnings exit with Failure).
	Hazard = 2
	// Usage is for bad flags or arguments, a name Redisson's key rules
	// refuse, a key that holds another type of data, another kind of lock
	// or a count that is no integer, an unlock of a key that is no lock of
	// the kind asked for (sysexits EX_USAGE).
	Usage = 64
	// Unavailable is for a Redis that is unreachable, failed or refused
	// the connection (a password missing or wrong), or anything else that
	// went wrong before CMD started (sysexits EX_UNAVAILABLE).
	Unavailable = 69
	// Busy is for a lock still held by another owner when --wait ran out,
	// or a latch still closed (sysexits EX_TEMPFAIL: try again later).
	Busy = 75
	// Lost is for run's lock lost while CMD ran; CMD was terminated.
	Lost = 79
	// CannotExec is for a CMD that was found but could not be executed
	// (as in shells).
	CannotExec = 126
	// NotFound is for a CMD that was not found (as in shells).
	NotFound = 127
	// SignalBase plus N reports death by signal N (as in shells): CMD's, or
	// interlock's own wait interrupted by signal N.
	SignalBase = 128
)

// Error ends interlock with Code. Its message, if any, goes to stderr with
// the "interlock: " prefix; a nil Err ends interlock silently, which is
// how run passes CMD's status through.
type Error struct {
	// Code is the exit code.
	Code int
	// Err is the message's error; nil for none.
	Err error
}

// Error returns the message of the wrapped error, or a description of the
// code when there is none.
func (e *Error) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

// Unwrap returns the wrapped error.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an error that ends interlock with code and a message
// formatted as by fmt.Errorf (so %w works).
func Errorf(code int, format string, args ...any) error {
	return &Error{Code: code, Err: fmt.Errorf(format, args...)}
}

// WithCode returns err as an error that ends interlock with code; nil stays
// nil.
func WithCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Err: err}
}

// Status returns an error that ends interlock with code and prints
// nothing; nil for OK.
func Status(code int) error {
	if code == OK {
		return nil
	}
	return &Error{Code: code}
}

// Failed returns "what: err" for what, a call into the interlock packages
// or Redis that failed: it ends interlock with Usage when the call was
// refused before anything changed (interlock.ErrInvalid), else Unavailable.
func Failed(what string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, interlock.ErrInvalid):
		// A key that holds another type of data, say, or a latch name with
		// braces on a cluster.
		return Errorf(Usage, "%s: %w", what, err)
	}
	return Errorf(Unavailable, "%s: %w", what, err)
}

// Signal returns the exit code of a death by sig: SignalBase+N.
func Signal(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return SignalBase + int(s)
	}
	return Failure
}

// Code returns the exit code err stands for: OK for nil, the code of an
// *Error, Failure for anything else.
func Code(err error) int {
	if err == nil {
		return OK
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	return Failure
}

// Report prints the message of err, if it has one, on w with the prefix
// "interlock: ", and returns the exit code err stands for (Code).
func Report(w io.Writer, err error) int {
	if msg := message(err); msg != "" {
		fmt.Fprintf(w, "interlock: %s\n", msg)
	}
	return Code(err)
}

// message returns what to print on stderr for err, or "" for nothing.
func message(err error) string {
	if err == nil {
		return ""
	}
	if e, ok := errors.AsType[*Error](err); ok && e.Err == nil {
		return ""
	}
	return err.Error()
}
