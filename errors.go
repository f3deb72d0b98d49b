package interlock

import (
	"errors"

	"github.com/interlock-go/interlock/internal/report"
)

var (
	// ErrNotHeld: the owner holds nothing on the lock (Unlock), or a Guard
	// was asked for a hold that does not exist.
	ErrNotHeld = report.ErrNotHeld
	// ErrLockLost is the cause of a Guard cancelled because the hold was
	// lost: its key vanished or was force-unlocked, renewal failed for a
	// whole lease, or an explicit lease ran out before Unlock.
	ErrLockLost = report.ErrLockLost
	// ErrClosed is returned by every acquisition, Unlock and ForceUnlock
	// once the Client is closed, and is the cause of the guards Close ends.
	ErrClosed = report.ErrClosed
	// ErrMaxHold is wrapped, with ErrLockLost, by the cause of a guard
	// that WithMaxHold ended.
	ErrMaxHold = report.ErrMaxHold
	// ErrInvalid is wrapped by every error about a bad argument, returned
	// before anything is sent, and about a key that holds data of another
	// kind, which is left as it is (see "Errors" in the package doc).
	ErrInvalid = report.ErrInvalid
	// ErrReplication is wrapped by the error of an acquisition or unlock
	// that fewer replicas acknowledged than WithReplicaAcks asks for, or
	// that none acknowledged under WithReplicaSync.
	ErrReplication = report.ErrReplication
	// ErrClockSkew is wrapped by the error of a fair-lock wait that the
	// skew guard refused (WithClockSkewLimit).
	ErrClockSkew = report.ErrClockSkew
)

// Error is the error of an operation on a synchronizer (or a fence: Kind
// KindFenced, Op OpFence) that failed for a reason other than its context
// or a closed Client, a bad argument (ErrInvalid) included. errors.Is and
// errors.As see the error it wraps, whose text it keeps.
type Error struct {
	Kind Kind   // the synchronizer, as in its Events
	Op   Op     // the operation, as in its Events
	Name string // the synchronizer's name as given
	Err  error
}

// Error returns "kind: op name: " (without the name if it is empty) and
// the wrapped error's text.
func (e *Error) Error() string {
	s := string(e.Kind) + ": " + string(e.Op)
	if e.Name != "" {
		s += " " + e.Name
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the error the operation failed with.
func (e *Error) Unwrap() error { return e.Err }

// wrap is report.Wrap: it makes the engine's errors *Error.
func wrap(kind string, op report.Op, name string, err error) error {
	if _, ok := errors.AsType[*Error](err); ok {
		return err
	}
	return &Error{Kind: Kind(kind), Op: Op(op), Name: name, Err: err}
}
