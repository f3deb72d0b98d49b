package renewal

import (
	"context"
	"errors"
	"time"

	"github.com/interlock-go/interlock/internal/guard"
	"github.com/interlock-go/interlock/internal/report"
)

// Entry is the local record of every hold one owner has on one key. A
// Task's Args reads its Key and Owner; the Scheduler owns the rest.
type Entry struct {
	// Key is the lock's key, the first key its renewal script touches.
	Key string
	// Owner is the holder's owner string.
	Owner string

	task  *Task
	s     *Scheduler
	slot  uint16
	since mono   // when the first hold's request was sent
	label *Label // HoldLabeled's, for the Observer

	// Guarded by s.mu.
	holds      []time.Duration  // one per hold, innermost last; 0 = watchdog
	holds0     [2]time.Duration // holds' first backing array: most owners hold once or twice
	watchdog   int              // holds with lease 0
	releasing  int              // unlocks in flight; renewal waits for them
	failing    error            // the last renewal's error; nil once one succeeds
	leaseUntil mono             // end of the longest explicit lease
	validUntil mono             // last TTL this Client set, from the send time of the call that set it
	setAt      mono             // when the call that set validUntil was sent
	renewing   mono             // when the latest round carrying e was sent, until it answers
	releaseAt  mono             // when the latest Release began
	maxUntil   mono             // when MaxHold ends the watchdog holds; zero: no limit
	heapIndex  int              // position in s.maxHolds, -1 when not in it
	ended      bool
	cause      error
	guards     map[*guardReg]struct{}        // made by guard, ended with the hold
	shared     map[sharedKey]context.Context // the guards of parents that never end
}

// guardReg is one registered guard of an entry: how to end it, the name
// its loss gives, and, for a hold with an explicit lease, the deadline at
// which the lease ends it, which an Extend moves. Guarded by s.mu.
type guardReg struct {
	cancel   context.CancelCauseFunc
	as       Label
	until    time.Time
	deadline *time.Timer // nil: no deadline (a watchdog hold)
}

// count returns how many holds e records: 0 once it ended, or once every
// hold had a lease and the leases have run out. s.mu must be held.
func (e *Entry) count() int {
	if e.ended || (e.watchdog == 0 && !time.Now().Before(e.leaseUntil.Time())) {
		return 0
	}
	return len(e.holds)
}

// beginRelease pauses renewal of e until endRelease and returns the TTL
// the lock should keep if holds remain after releasing the innermost one:
// the watchdog lease while a watchdog hold remains, else the lease of the
// innermost remaining hold. s.mu must be held.
func (e *Entry) beginRelease() time.Duration {
	e.releasing++
	e.releaseAt = monoOf(time.Now())
	n := len(e.holds)
	if n == 0 {
		return e.s.cfg.Lease
	}
	watchdog := e.watchdog
	if e.holds[n-1] == 0 {
		watchdog--
	}
	if watchdog > 0 || n == 1 || e.holds[n-2] == 0 {
		return e.s.cfg.Lease
	}
	return e.holds[n-2]
}

// endRelease records what the unlock begun with beginRelease did. s.mu
// must be held.
func (e *Entry) endRelease(o Outcome) {
	s := e.s
	e.releasing--
	switch o {
	case Unknown:
		// The server may or may not have released it. It is no longer
		// counted, so that the server never has fewer holds than e: the
		// holds left (and later ones) are renewed, which keeps the
		// doubtful one too until they end, and then nothing renews it.
		// With none left, e lives out its validity, unless an unlock that
		// answers (a retry) says what is left.
		e.pop()
	case Decremented:
		e.pop()
		if e.watchdog > 0 {
			// The unlock script set the TTL to the watchdog lease.
			e.failing = nil
			e.setTTL(e.releaseAt.Time(), s.cfg.Lease)
			s.checkUrgent(e)
		} else if n := len(e.holds); n > 0 {
			// It set the TTL to the innermost remaining hold's lease.
			e.setTTL(e.releaseAt.Time(), e.holds[n-1])
		}
		if len(e.holds) == 0 {
			s.forget(e, nil)
		}
	case Released:
		s.forget(e, nil)
	case NotHeld:
		s.forget(e, s.goneCause(e, time.Now()))
	}
}

// goneCause is the cause of e's loss when the server no longer has it: its
// lease ran out, or (a watchdog hold) its validity passed unconfirmed, when
// the last TTL this Client set has run out; otherwise someone deleted it
// or took it over. s.mu must be held.
func (e *Entry) goneCause(now time.Time) error {
	switch {
	case now.Before(e.validUntil.Time()):
		return e.task.lostBy(report.ErrKeyGone, nil)
	case e.watchdog > 0:
		return e.task.lostBy(report.ErrNotRenewed, nil)
	}
	return e.task.lostBy(report.ErrLeaseExpired, nil)
}

// lossAs returns the cause a guard named as gets for cause: an error naming
// the synchronizer (its kind and name, Op lost) around a loss, cause
// itself for an unnamed guard or an end that is no loss.
func (e *Entry) lossAs(as Label, cause error) error {
	if as == (Label{}) || !errors.Is(cause, e.task.Lost) {
		return cause
	}
	return report.Wrap(as.Kind, report.OpLost, as.Name, cause)
}

// endsWithValidity reports whether e ends when its validity does: it has
// watchdog holds, or only holds whose unlock got no answer (none counted).
// Otherwise its leases end it. s.mu must be held.
func (e *Entry) endsWithValidity() bool { return e.watchdog > 0 || len(e.holds) == 0 }

// pop forgets the innermost hold. s.mu must be held.
func (e *Entry) pop() {
	if n := len(e.holds); n > 0 {
		if e.holds[n-1] == 0 {
			e.watchdog--
		}
		e.holds = e.holds[:n-1]
	}
}

// setTTL records that a call sent at sent set the key's TTL to ttl, unless
// a call sent later set it already: calls run in the order they were sent,
// so the later one's TTL is the one the server keeps. s.mu must be held.
func (e *Entry) setTTL(sent time.Time, ttl time.Duration) {
	if at := monoOf(sent); at >= e.setAt {
		e.setAt = at
		e.validUntil = at + mono(ttl)
	}
}

// lostAt returns when e is lost unless a renewal is confirmed first: at
// the end of its validity, or, while a round sent before then is still
// unanswered, when that round's own lease would end, three quarters of
// an interval after the validity at most. s.mu must be held.
func (e *Entry) lostAt() time.Time {
	if e.renewing == 0 {
		return e.validUntil.Time()
	}
	s := e.s
	// Three quarters of an interval, so that a loss is known within one
	// however late the timer fires; a round sent before the TTL was last
	// set cannot shorten it.
	grace := min(s.Interval()*3/4, time.Duration(e.renewing+mono(s.cfg.Lease)-e.validUntil))
	return e.validUntil.Time().Add(max(grace, 0))
}

// guard returns a context derived from parent that is cancelled when this
// hold ends: with a cause wrapping Task.Lost and the reason (package
// report) when the lock is lost (the key vanished, renewal failed past the
// lease, or, for a hold with an explicit lease, the lease ran out), named
// as says (lossAs), with cause context.Canceled when it is released. The
// cancellation has happened by the time the call that ended the hold
// (Unlock, Close) returns. A parent that never ends shares one guard per
// hold and name (package guard). s.mu must not be held.
func (e *Entry) guard(parent context.Context, as Label) context.Context {
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.ended {
		g, cancel := context.WithCancelCause(parent)
		cancel(e.lossAs(as, e.cause))
		return g
	}
	base, shared := guard.Base(parent)
	if !shared {
		return e.register(parent, as)
	}
	// An explicit lease is part of the key: a later hold may end later.
	k := sharedKey{base: base, as: as}
	if e.watchdog == 0 {
		k.until = e.leaseUntil
	}
	g := e.shared[k]
	if g == nil {
		if base == nil {
			base = context.Background()
		}
		g = e.register(base, as)
		if e.shared == nil {
			e.shared = make(map[sharedKey]context.Context)
		}
		e.shared[k] = g
		context.AfterFunc(g, func() {
			s.mu.Lock()
			for k, sg := range e.shared { // by value: moveDeadlines may re-key it
				if sg == g {
					delete(e.shared, k)
				}
			}
			s.mu.Unlock()
		})
	}
	return guard.View(parent, g)
}

// sharedKey names a shared guard of an entry: what it derives from (nil:
// nothing that ends), the lease end it has, if any, and its name.
type sharedKey struct {
	base  context.Context
	until mono
	as    Label
}

// register returns a guard of parent named as, cancelled when e ends or
// forgotten when it ends first. s.mu must be held.
func (e *Entry) register(parent context.Context, as Label) context.Context {
	s := e.s
	// An explicit lease ends the hold on the server without any message:
	// a timer ends the guard then, unless the lease was moved meanwhile
	// (Extend). Every cancellation happens under s.mu, so the first cause
	// given (released, lost, lease expired) is the one the guard keeps.
	g, cancel := context.WithCancelCause(parent)
	r := &guardReg{cancel: cancel, as: as}
	if e.watchdog == 0 {
		r.until = e.leaseUntil.Time()
		left := time.Until(r.until)
		if left <= 0 {
			cancel(e.lossAs(as, e.task.lostBy(report.ErrLeaseExpired, nil)))
			return g
		}
		r.deadline = time.AfterFunc(left, func() { e.leaseEnded(r) })
	}
	if e.guards == nil {
		e.guards = make(map[*guardReg]struct{})
	}
	e.guards[r] = struct{}{}
	// A guard that ends first (its parent ended, or its lease ran out) is
	// forgotten, and its deadline's timer stopped.
	context.AfterFunc(g, func() {
		s.mu.Lock()
		if r.deadline != nil {
			r.deadline.Stop()
		}
		delete(e.guards, r)
		s.mu.Unlock()
	})
	return g
}

// leaseEnded ends guard r as lost when its lease has ended, or sets its
// timer again when an Extend moved the lease's end. s.mu must not be held.
func (e *Entry) leaseEnded(r *guardReg) {
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := e.guards[r]; !ok || r.deadline == nil {
		return
	}
	if d := time.Until(r.until); d > 0 {
		r.deadline.Reset(d)
		return
	}
	delete(e.guards, r)
	r.cancel(e.lossAs(r.as, e.task.lostBy(report.ErrLeaseExpired, nil)))
}

// moveDeadlines gives every guard of e with a deadline e's new lease end,
// or, now that e has a watchdog hold, no deadline. s.mu must be held.
func (e *Entry) moveDeadlines() {
	for r := range e.guards {
		switch {
		case r.deadline == nil:
		case e.watchdog > 0:
			r.deadline.Stop()
			r.deadline = nil
		default:
			r.until = e.leaseUntil.Time()
			r.deadline.Reset(time.Until(r.until))
		}
	}
	for k, g := range e.shared {
		if k.until != 0 && k.until != e.leaseUntil {
			delete(e.shared, k)
			if e.watchdog == 0 {
				k.until = e.leaseUntil
			} else {
				k.until = 0
			}
			e.shared[k] = g
		}
	}
}

// remaining returns how long the hold is still certainly valid on the
// server: the TTL set by the last successful acquisition, renewal or
// partial release, counted from when that request was sent (the monotonic
// clock), minus the time since. It is 0 once the entry ended (released,
// lost, past MaxHold) or its validity ran out. s.mu must be held.
func (e *Entry) remaining() time.Duration {
	if e.ended {
		return 0
	}
	return max(time.Until(e.validUntil.Time()), 0)
}

// end marks e ended with cause (nil: released). s.mu must be held.
func (e *Entry) end(cause error) {
	if e.ended {
		return
	}
	if cause == nil {
		cause = context.Canceled
	}
	e.ended = true
	e.cause = cause
	for r := range e.guards {
		if r.deadline != nil {
			r.deadline.Stop()
		}
		r.cancel(e.lossAs(r.as, cause))
	}
	e.guards = nil
	e.shared = nil
}
