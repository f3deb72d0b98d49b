package main

import (
	"errors"
	"fmt"
)

// Exit codes. They are part of interlock's interface: scripts test them, so
// they never change meaning. doc.go and the usage text list them too.
const (
	// exitOK: success (for run: CMD exited 0).
	exitOK = 0
	// exitFailure: a failure that has no code of its own, such as a demo
	// scene that did not turn out as it should, or an unlock that left the
	// lock because it is not locked as --kind said.
	exitFailure = 1
	// exitHazard: doctor found a setting or state that can silently break
	// mutual exclusion (doctor's warnings exit with exitFailure).
	exitHazard = 2
	// exitUsage: bad flags or arguments, a lock name Redisson's key rules
	// refuse, unlock of a key that is no lock of the kind asked for
	// (sysexits EX_USAGE).
	exitUsage = 64
	// exitUnavailable: Redis is unreachable or failed, or something else
	// went wrong before CMD started (sysexits EX_UNAVAILABLE).
	exitUnavailable = 69
	// exitBusy: run's lock was still held by another owner when --wait ran
	// out (sysexits EX_TEMPFAIL: try again later).
	exitBusy = 75
	// exitLost: run's lock was lost while CMD ran; CMD was terminated.
	exitLost = 79
	// exitCannotExec: CMD was found but could not be executed (as in shells).
	exitCannotExec = 126
	// exitNotFound: CMD was not found (as in shells).
	exitNotFound = 127
	// exitSignalBase: 128+N reports death by signal N (as in shells): CMD's,
	// or interlock's own wait for the lock interrupted by signal N.
	exitSignalBase = 128
)

// exitError ends interlock with code. Its message, if any, goes to stderr
// with the "interlock: " prefix; a nil err ends it silently, which is how
// run passes CMD's status through.
type exitError struct {
	code int
	err  error
}

// Error returns the message of the wrapped error, or a description of the
// code when there is none.
func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

// Unwrap returns the wrapped error.
func (e *exitError) Unwrap() error { return e.err }

// failf returns an error that ends interlock with code and a message
// formatted as by fmt.Errorf (so %w works).
func failf(code int, format string, args ...any) error {
	return &exitError{code: code, err: fmt.Errorf(format, args...)}
}

// withCode returns err as an error that ends interlock with code; nil stays
// nil.
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// exitStatus returns an error that ends interlock with code and prints
// nothing.
func exitStatus(code int) error {
	if code == exitOK {
		return nil
	}
	return &exitError{code: code}
}

// exitCode returns the exit code err stands for: 0 for nil, the code of an
// exitError, exitFailure for anything else.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	if e, ok := errors.AsType[*exitError](err); ok {
		return e.code
	}
	return exitFailure
}

// message returns what to print on stderr for err, or "" for nothing.
func message(err error) string {
	if err == nil {
		return ""
	}
	if e, ok := errors.AsType[*exitError](err); ok && e.err == nil {
		return ""
	}
	return err.Error()
}
