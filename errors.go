package interlock

import (
	"errors"

	"github.com/interlock-go/interlock/internal/report"
)

var (
	// ErrNotHeld: the owner holds nothing on the lock (Unlock), or a Guard
	// was asked for a hold that does not exist.
	ErrNotHeld = report.ErrNotHeld
	// ErrLockLost is wrapped by the cause of every Guard cancelled because
	// the hold was lost, and of every OpLost Event, with one of the reasons
	// below (ErrLeaseExpired, ErrNotRenewed, ErrKeyGone, ErrForceUnlocked,
	// ErrMaxHold) that says why. A lost semaphore permit's cause wraps it
	// too, through semaphore.ErrPermitLost.
	ErrLockLost = report.ErrLockLost
	// ErrLeaseExpired: an explicit lease (LockLease, TryLock with a lease, a
	// permit's lease) ran out before its owner's release.
	ErrLeaseExpired = report.ErrLeaseExpired
	// ErrNotRenewed: the watchdog could not confirm a renewal of the hold
	// within a whole watchdog timeout (Redis unreachable, slow or refusing);
	// the renewals' last error, if any, is wrapped too.
	ErrNotRenewed = report.ErrNotRenewed
	// ErrKeyGone: a renewal, or the owner's release, found the hold gone
	// from the server while this Client still counted it valid: its key was
	// deleted (or force-unlocked by another client), or another owner holds
	// it; a permit was released or reclaimed by another client.
	ErrKeyGone = report.ErrKeyGone
	// ErrForceUnlocked: ForceUnlock (or a semaphore's Delete) through this
	// Client ended the hold.
	ErrForceUnlocked = report.ErrForceUnlocked
	// ErrClosed is returned by every acquisition, Unlock and ForceUnlock
	// once the Client is closed, and is the cause of the guards Close ends.
	ErrClosed = report.ErrClosed
	// ErrMaxHold is wrapped, with ErrLockLost, by the cause of a guard
	// that WithMaxHold ended: the reason the hold was lost.
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
