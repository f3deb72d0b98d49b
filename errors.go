package interlock

import "errors"

var (
	// ErrNotHeld: the owner holds nothing on the lock (Unlock), or a Guard
	// was asked for a hold that does not exist.
	ErrNotHeld = errors.New("interlock: lock not held by this owner")
	// ErrLockLost is the cause of a Guard cancelled because the hold was
	// lost: its key vanished or was force-unlocked, renewal failed for a
	// whole lease, or an explicit lease ran out before Unlock.
	ErrLockLost = errors.New("interlock: lock lost")
	// ErrClosed is returned by every acquisition, Unlock and ForceUnlock
	// once the Client is closed, and is the cause of the guards Close ends.
	ErrClosed = errors.New("interlock: client closed")
	// ErrMaxHold is wrapped, with ErrLockLost, by the cause of a guard
	// that WithMaxHold ended.
	ErrMaxHold = errors.New("interlock: lock held longer than the maximum hold time")
	// ErrInvalid is wrapped by every error about a bad argument, returned
	// before anything is sent.
	ErrInvalid = errors.New("interlock: invalid argument")
	// ErrReplication is wrapped by the error of an acquisition or unlock
	// that fewer replicas acknowledged than WithReplicaAcks asks for, or
	// that none acknowledged under WithReplicaSync.
	ErrReplication = errors.New("interlock: too few replicas acknowledged")
	// ErrClockSkew is wrapped by the error of a fair-lock wait that the
	// skew guard refused (WithClockSkewLimit).
	ErrClockSkew = errors.New("interlock: wall clock too far from the Redis server's")
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
