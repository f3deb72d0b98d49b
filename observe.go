package interlock

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/interlock-go/interlock/internal/renewal"
	"github.com/interlock-go/interlock/internal/report"
	"github.com/interlock-go/interlock/internal/runtime"
)

// Observer hears what a Client's synchronizers do (WithObserver). Observe
// is called once per event, on the goroutine that did the work, after the
// work: it must not block, and must not call back into the Client. A Client
// without one builds no events. A call refused before it started (a bad
// argument, a closed Client) reports nothing.
type Observer interface {
	Observe(ctx context.Context, e Event)
}

// ObserverFunc is an Observer made of a function.
type ObserverFunc func(ctx context.Context, e Event)

// Observe calls f.
func (f ObserverFunc) Observe(ctx context.Context, e Event) { f(ctx, e) }

// Event is one thing a Client did. Op says which; the fields that do not
// apply to an Op are zero. ctx is the caller's context for operations a
// caller started (acquisitions, releases, resends, refusals), carrying its
// trace, and a background context for the Client's own work (renewal,
// losses, pub/sub, undo).
type Event struct {
	Op   Op     // what the event is about
	Kind Kind   // the synchronizer; empty for renew and pubsub
	Name string // the object's name as the caller gave it (unmapped)

	// Outcome is one of the Outcome constants.
	Outcome string
	// Duration is how long the operation took: an acquisition's wait, a
	// release's round trips, a renewal tick's DoMulti.
	Duration time.Duration
	// Held is how long a released hold was held (releases only): since
	// the owner's first acquisition of the hold being ended, its outermost
	// one for a re-entered lock. 0 when this Client recorded none.
	Held time.Duration
	// Attempts counts the acquire scripts an acquisition sent, or the
	// sends of a release (more than 1: resent under its latch); for a
	// resend, which send it was (2, 3, ...).
	Attempts int
	// Permits is how many permits an acquisition or release of a
	// semaphore asked for; 0 for locks and latches.
	Permits int

	// Entries and Chunks are a renewal tick's holds sent for renewal and
	// script calls sent; Failures the entries whose renewal call failed,
	// and Failed the same failures by synchronizer.
	Entries, Chunks, Failures int
	Failed                    []RenewFailure

	// Err is the error of an OutcomeError operation, a loss's cause, the
	// ErrReplication shortfall of a release that still counted, or the
	// error of an OutcomeNotHeld Unlock by an owner other than the ones
	// this Client holds the lock for (most often the wrong goroutine).
	Err error
}

// RenewFailure counts the holds of one synchronizer whose renewal failed
// in one renewal tick.
type RenewFailure struct {
	Kind  Kind
	Name  string // as the caller gave it, as in Events
	Holds int
}

// Kind names a synchronizer, in an Event and in an Error.
type Kind string

// The Kinds.
const (
	KindRLock            Kind = "rlock"
	KindFairLock         Kind = "fairlock"
	KindReadLock         Kind = "rwlock.read"
	KindWriteLock        Kind = "rwlock.write"
	KindFenced           Kind = "fenced"
	KindNonReentrant     Kind = "nonreentrant"
	KindNonReentrantFair Kind = "nonreentrant.fair"
	KindSpin             Kind = "spin"
	KindSemaphore        Kind = "semaphore"
	KindExpirable        Kind = "semaphore.expirable"
	KindLatch            Kind = "latch"
	KindRateLimiter      Kind = "ratelimit"
	KindElection         Kind = "election"  // a campaign's hold on the fenced lock, and the election's errors
	KindMultiLock        Kind = "multilock" // in errors only: its members' events are theirs
	KindRedLock          Kind = "redlock"   // in errors only, as KindMultiLock
	KindClient           Kind = "client"    // in errors only: New, OwnerID, Client.Owner, ClockSkew
)

// Op names an operation, in an Event and in an Error.
type Op string

// The Ops of Events (and of the Errors of the same operations).
const (
	OpAcquire Op = "acquire" // a lock acquisition, a semaphore acquire, a latch await
	OpRelease Op = "release" // an unlock, a semaphore release, a latch count-down
	OpRenew   Op = "renew"   // one watchdog tick that sent renewals
	OpLost    Op = "lost"    // a hold ended without its owner's release (Err: the cause)
	OpResend  Op = "resend"  // a call resent after a lost reply (an unlock under its latch)
	OpRefused Op = "refused" // safe mode or replica sync refused an acquisition, and took it back
	OpUndo    Op = "undo"    // the undo queue tried to take back an acquisition whose reply was lost
	OpPubSub  Op = "pubsub"  // a subscription failed, or its connection came back
)

// The Ops that only Errors name. ClockSkew's is OpInspect.
const (
	OpForceUnlock Op = "force unlock" // ForceUnlock
	OpGuard       Op = "guard"        // Guard, and a permit lease's
	OpInspect     Op = "inspect"      // a read of the state: IsLocked, HoldCount, TTL, Token, Available, Count, ...
	OpSet         Op = "set"          // TrySetPermits, SetPermits, AddPermits, TrySetCount, UpdateLease, Drain
	OpDelete      Op = "delete"       // Delete
	OpExtend      Op = "extend"       // Extend
	OpFence       Op = "fence"        // a fence's Admit, Do and writes
	OpNew         Op = "new"          // New
	OpOwner       Op = "owner"        // OwnerID and Client.Owner
	OpParse       Op = "parse"        // semaphore.ParsePermitID
)

// Outcomes of an Event.
const (
	OutcomeAcquired    = "acquired"    // acquire: held
	OutcomeBusy        = "busy"        // acquire: a try without a wait found it held
	OutcomeTimedOut    = "timed_out"   // acquire: the wait ran out
	OutcomeCancelled   = "cancelled"   // acquire: the context ended first
	OutcomeReleased    = "released"    // release: the last hold is gone, waiters woken
	OutcomeDecremented = "decremented" // release: one hold of several released
	OutcomeTransferred = "transferred" // release: the last hold went to a waiter of the Client
	OutcomeNotHeld     = "not_held"    // release: the owner held nothing
	OutcomeOK          = "ok"          // renew, undo, resend, pubsub reconnect: done
	OutcomeError       = "error"       // any op: failed with Err
)

// events is what the runtime is given of the Client's Observer: it turns
// the renewal Scheduler's and the pub/sub Hub's reports into Events, and
// passes the engine's own on.
type events struct {
	o     Observer
	names NameMapper // nil: names as they are
}

var _ runtime.Observer = events{}

// applyObserver hands the runtime the Observer, if any.
func (c *config) applyObserver() {
	switch len(c.observers) {
	case 0:
	case 1:
		c.Observer = events{c.observers[0], c.Names}
	default:
		c.Observer = events{observers(c.observers), c.Names}
	}
}

// observers tells each of several Observers, in order.
type observers []Observer

func (os observers) Observe(ctx context.Context, e Event) {
	for _, o := range os {
		o.Observe(ctx, e)
	}
}

// Observe tells the Observer of one of the engine's events.
func (v events) Observe(ctx context.Context, e report.Event) {
	v.o.Observe(ctx, Event{Op: Op(e.Op), Kind: Kind(e.Kind), Name: e.Name, Outcome: e.Outcome, Duration: e.Duration,
		Held: e.Held, Attempts: e.Attempts, Permits: e.Permits, Err: e.Err})
}

func (v events) Renewed(t renewal.Tick) {
	e := Event{Op: OpRenew, Outcome: OutcomeOK, Duration: t.Duration, Entries: t.Entries, Chunks: t.Chunks,
		Failures: t.Failures, Err: t.Err}
	if t.Failures > 0 {
		e.Outcome = OutcomeError
		e.Failed = v.failed(t.Failed)
	}
	v.o.Observe(context.Background(), e)
}

// failed turns a tick's failures by entry name into RenewFailures, one per
// synchronizer as Events name it, in kind and name order.
func (v events) failed(by map[renewal.Named]int) []RenewFailure {
	idx := make(map[RenewFailure]int, len(by))
	var out []RenewFailure
	for n, holds := range by {
		kind, name := v.lostName(n.Key, &renewal.Label{Kind: n.Kind, Name: n.Name})
		k := RenewFailure{Kind: Kind(kind), Name: name}
		if i, ok := idx[k]; ok {
			out[i].Holds += holds
			continue
		}
		idx[k] = len(out)
		k.Holds = holds
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b RenewFailure) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
	return out
}

func (v events) Lost(key string, label *renewal.Label, cause error) {
	e := Event{Op: OpLost, Outcome: OutcomeError, Err: cause}
	var kind string
	kind, e.Name = v.lostName(key, label)
	e.Kind = Kind(kind)
	v.o.Observe(context.Background(), e)
}

func (v events) PubSubFailed(err error) {
	v.o.Observe(context.Background(), Event{Op: OpPubSub, Outcome: OutcomeError, Err: err})
}

func (v events) PubSubReconnected() {
	v.o.Observe(context.Background(), Event{Op: OpPubSub, Outcome: OutcomeOK})
}
