// Package report is what the engine tells a Client's user, in the
// engine's own terms: the sentinels its errors wrap, the operations and
// outcomes it names, and its events. The root package re-exports the
// sentinels, and turns the rest into interlock.Error and interlock.Event
// (its Wrap, and the Observer it gives the runtime); the engine never
// imports the root package.
package report

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The sentinels, re-exported by the root package, which documents them.
var (
	ErrNotHeld     = errors.New("interlock: lock not held by this owner")
	ErrLockLost    = errors.New("interlock: lock lost")
	ErrClosed      = errors.New("interlock: client closed")
	ErrMaxHold     = errors.New("interlock: lock held longer than the maximum hold time")
	ErrInvalid     = errors.New("interlock: invalid argument")
	ErrReplication = errors.New("interlock: too few replicas acknowledged")
	ErrClockSkew   = errors.New("interlock: wall clock too far from the Redis server's")

	// Why a hold was lost: a loss's cause (Lost) wraps one of these, or
	// ErrMaxHold, beside ErrLockLost.
	ErrLeaseExpired  = errors.New("interlock: lease ran out")
	ErrNotRenewed    = errors.New("interlock: not renewed in time")
	ErrKeyGone       = errors.New("interlock: deleted or taken over on the server")
	ErrForceUnlocked = errors.New("interlock: force-unlocked through this client")
)

// Lost returns the cause of a hold lost for reason: an error that wraps
// lost (ErrLockLost, or a kind's loss that wraps it), reason and detail
// (if not nil), and reads "<lost>: <reason>[: <detail>]", reason without
// its "interlock: " prefix. A detail that is a context's error is kept as
// text only: a guard's cause is context.Canceled only when released.
func Lost(lost, reason, detail error) error {
	if errors.Is(detail, context.Canceled) || errors.Is(detail, context.DeadlineExceeded) {
		detail = errors.New(detail.Error())
	}
	return &lossError{lost: lost, reason: reason, detail: detail}
}

type lossError struct{ lost, reason, detail error }

func (e *lossError) Error() string {
	s := e.lost.Error() + ": " + strings.TrimPrefix(e.reason.Error(), "interlock: ")
	if e.detail != nil {
		s += ": " + e.detail.Error()
	}
	return s
}

func (e *lossError) Unwrap() []error {
	if e.detail == nil {
		return []error{e.lost, e.reason}
	}
	return []error{e.lost, e.reason, e.detail}
}

// Op is an operation the engine reports: the root's interlock.Op with the
// same text.
type Op string

// The operations of the engine's errors and events.
const (
	OpAcquire     Op = "acquire"
	OpRelease     Op = "release"
	OpResend      Op = "resend"
	OpRefused     Op = "refused"
	OpUndo        Op = "undo"
	OpForceUnlock Op = "force unlock"
	OpGuard       Op = "guard"
	OpInspect     Op = "inspect"
	OpSet         Op = "set"
	OpDelete      Op = "delete"
	OpLost        Op = "lost"
	OpExtend      Op = "extend"
)

// The outcomes of the engine's events: the root's Outcome constants.
const (
	OutcomeAcquired    = "acquired"
	OutcomeBusy        = "busy"
	OutcomeTimedOut    = "timed_out"
	OutcomeCancelled   = "cancelled"
	OutcomeReleased    = "released"
	OutcomeDecremented = "decremented"
	OutcomeTransferred = "transferred"
	OutcomeNotHeld     = "not_held"
	OutcomeOK          = "ok"
	OutcomeError       = "error"
)

// Event is one thing a synchronizer did: interlock.Event's fields that the
// engine fills, with Kind its interlock.Kind's text.
type Event struct {
	Op       Op
	Kind     string
	Name     string
	Outcome  string
	Duration time.Duration
	Held     time.Duration
	Attempts int
	Permits  int
	Err      error
}

// Observer hears the engine's events; the runtime's Observer is one.
type Observer interface {
	Observe(ctx context.Context, e Event)
}

// Wrap returns the error of operation op on the synchronizer name of kind
// kind that failed with err: an *interlock.Error, err itself when it is one
// already. The root package sets it when it is initialised, as the engine
// cannot name interlock.Error; until then (the engine's own tests) it
// returns a plain error of the same text.
var Wrap = func(kind string, op Op, name string, err error) error {
	if name != "" {
		return fmt.Errorf("%s: %s %s: %w", kind, op, name, err)
	}
	return fmt.Errorf("%s: %s: %w", kind, op, err)
}
