package renewal

import (
	"context"
	"time"
)

// Entry is the local record of every hold one owner has on one key.
type Entry struct {
	// Key is the lock's key, the first key its renewal script touches.
	Key string
	// Owner is the holder's owner string.
	Owner string

	task *Task
	s    *Scheduler
	slot uint16

	// Guarded by s.mu.
	holds      []time.Duration // one per hold, innermost last; 0 = watchdog
	watchdog   int             // holds with lease 0
	releasing  int             // unlocks in flight; renewal waits for them
	renewedAt  time.Time       // when the last successful renewal was sent
	leaseUntil time.Time       // end of the longest explicit lease
	ended      bool
	cause      error
	ctx        context.Context
	cancel     context.CancelCauseFunc
}

// Outcome is what an unlock did on the server.
type Outcome int

const (
	// Unknown: the unlock failed without an answer; nothing is assumed.
	Unknown Outcome = iota
	// Decremented: one hold was released and others remain.
	Decremented
	// Released: the lock was released.
	Released
	// NotHeld: the server says the owner holds nothing; the entry is lost.
	NotHeld
)

// Holds returns how many holds the entry records (0 once it ended).
func (e *Entry) Holds() int {
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	if e.ended {
		return 0
	}
	return len(e.holds)
}

// BeginRelease pauses renewal of e until EndRelease and returns the TTL
// the lock should keep if holds remain after releasing the innermost one:
// the watchdog lease while a watchdog hold remains, else the lease of the
// innermost remaining hold.
func (e *Entry) BeginRelease() time.Duration {
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	e.releasing++
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

// EndRelease records what the unlock begun with BeginRelease did.
func (e *Entry) EndRelease(o Outcome) {
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	e.releasing--
	switch o {
	case Decremented:
		if n := len(e.holds); n > 0 {
			if e.holds[n-1] == 0 {
				e.watchdog--
			}
			e.holds = e.holds[:n-1]
		}
		if e.watchdog > 0 {
			// The unlock script set the TTL to the watchdog lease.
			e.renewedAt = time.Now()
		}
		if len(e.holds) == 0 {
			s.forget(e, nil)
		}
	case Released:
		s.forget(e, nil)
	case NotHeld:
		s.forget(e, e.task.Lost)
	}
}

// Guard returns a context derived from parent that is cancelled when this
// hold ends: with cause Task.Lost when the lock is lost (the key vanished,
// renewal failed past the lease, or, for a hold with an explicit lease, the
// lease ran out), with cause context.Canceled when it is released.
func (e *Entry) Guard(parent context.Context) context.Context {
	s := e.s
	s.mu.Lock()
	hold := e.context()
	var deadline time.Time
	if e.watchdog == 0 {
		deadline = e.leaseUntil
	}
	s.mu.Unlock()

	g, cancel := context.WithCancelCause(parent)
	stop := context.AfterFunc(hold, func() { cancel(context.Cause(hold)) })
	context.AfterFunc(g, func() { stop() })
	if deadline.IsZero() {
		return g
	}
	// An explicit lease ends the hold on the server without any message.
	d, cancelDeadline := context.WithDeadlineCause(g, deadline, e.task.Lost)
	context.AfterFunc(g, cancelDeadline)
	return d
}

// context returns the hold's own context, made on first use. s.mu must be
// held.
func (e *Entry) context() context.Context {
	if e.ctx == nil {
		e.ctx, e.cancel = context.WithCancelCause(context.Background())
		if e.ended {
			e.cancel(e.cause)
		}
	}
	return e.ctx
}

// end marks e ended with cause (nil: released). s.mu must be held.
func (e *Entry) end(cause error) {
	if e.ended {
		return
	}
	e.ended = true
	e.cause = cause
	if e.cancel != nil {
		e.cancel(cause)
	}
}
