package runtime

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// A run of transfers on one lock ends after TransferRun of them or once
// TransferSpan has passed since its first, whichever comes first: the
// transfer after it yields, that is, releases for real, with its message,
// when another process subscribes to the lock's channel, so that waiters
// elsewhere (which only a message or the TTL wakes) get their turn. The
// waiter of this Client that the message wakes then holds off for
// TransferYield before it tries, so that the other process's waiter, which
// has the message as early, is not beaten to the lock again. A fair lock
// has no runs: it only ever goes to its queue's head.
const (
	TransferRun   = 8
	TransferSpan  = 10 * time.Millisecond
	TransferYield = 5 * time.Millisecond
)

// Transfers is where this Client's waiters on a lock stand, while they
// wait for a message, ready to be passed the lock by a holder of this
// Client that releases it: the releasing holder's unlock script gives the
// lock to the first of them in the same round trip (see the engine's
// transfer). Waiters stand in the order they first parked, per lock and
// kind.
type Transfers struct {
	n      atomic.Int64 // len(lines), read without mu by every unlock
	mu     sync.Mutex
	lines  map[lineKey]*line
	offers int    // offers standing
	seq    uint64 // offers ever stood
	passed atomic.Uint64
}

// Passed counts the transfers that passed a lock, since the Client began.
func (t *Transfers) Passed() uint64 { return t.passed.Load() }

type lineKey struct {
	name string
	kind string
}

// line is one lock's standing offers, and its current run of transfers.
type line struct {
	head, tail *Offer
	run        int       // transfers since the lock was last really released
	runStart   time.Time // when the run's first transfer was claimed
	yieldUntil time.Time // the first try after a yield waits until then
}

// Offer is one waiter's readiness to be passed a lock. The waiter makes
// one per acquisition, stands it before each wait and withdraws it after.
type Offer struct {
	// Holder is the waiter's hash field; Lease the TTL its hold gets;
	// Grace a fair waiter's wait, as it queued with it.
	Holder string
	Lease  time.Duration
	Grace  time.Duration

	// Guarded by Transfers.mu.
	wake       func()
	seq        uint64 // its place: when it first stood
	key        lineKey
	prev, next *Offer
	standing   bool
	claimed    bool
	awaiting   bool // claimed, and its waiter stopped waiting (Withdraw)
	resolved   bool
	grant      Grant
	done       chan struct{} // receives one token when resolved
}

// Grant is the outcome of a transfer to an Offer.
type Grant struct {
	// Passed: the waiter holds the lock since Sent, the transfer's first
	// send, with the fencing Token of a fenced lock.
	Passed bool
	Sent   time.Time
	Token  uint64
	// Unknown: no answer came; the transfer may have run.
	Unknown bool
}

func newTransfers() *Transfers { return &Transfers{lines: make(map[lineKey]*line)} }

// Standing reports whether any lock of this Client has waiters standing
// or a run of transfers going on: unlocks pay one atomic load for
// transfers until then.
func (t *Transfers) Standing() bool { return t.n.Load() > 0 }

// Offers counts the offers standing now, for tests.
func (t *Transfers) Offers() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.offers
}

// Place gives o its place in line now, if it has none yet, for a waiter
// whose place is decided before it first stands: a fair waiter's, when
// the server queued it.
func (t *Transfers) Place(o *Offer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if o.seq == 0 {
		t.seq++
		o.seq = t.seq
	}
}

// Stand puts o in the line of the lock name of kind; wake ends its wait
// once a claim of it is resolved.
func (t *Transfers) Stand(o *Offer, name string, kind string, wake func()) {
	if o.done == nil {
		o.done = make(chan struct{}, 1)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if o.standing || o.claimed {
		return
	}
	k := lineKey{name, kind}
	if o.seq == 0 {
		t.seq++
		o.seq = t.seq
	}
	o.wake = wake
	t.insert(o, k)
}

// insert puts o in the line k in the order the waiters first stood: one
// that stands again after a wake-up keeps its place (a fair waiter keeps
// its place in the server's queue too). t.mu must be held.
func (t *Transfers) insert(o *Offer, k lineKey) {
	ln := t.lines[k]
	if ln == nil {
		if len(t.lines) > 2*t.offers+16 {
			t.sweep(time.Now())
		}
		ln = &line{}
		t.lines[k] = ln
		t.n.Store(int64(len(t.lines)))
	}
	o.key, o.standing = k, true
	after := ln.tail
	for after != nil && after.seq > o.seq {
		after = after.prev
	}
	o.prev = after
	if after != nil {
		o.next, after.next = after.next, o
	} else {
		o.next, ln.head = ln.head, o
	}
	if o.next != nil {
		o.next.prev = o
	} else {
		ln.tail = o
	}
	t.offers++
}

// sweep drops the lines that no waiter stands on and whose run would be
// over by now: their locks' holders did not release them here since.
// t.mu must be held.
func (t *Transfers) sweep(now time.Time) {
	for k, ln := range t.lines {
		if ln.head == nil && now.Sub(ln.runStart) >= TransferSpan && !now.Before(ln.yieldUntil) {
			delete(t.lines, k)
		}
	}
	t.n.Store(int64(len(t.lines)))
}

// remove takes o out of its line, and the line out of the map once empty
// outside a run of transfers. t.mu must be held and o standing.
func (t *Transfers) remove(o *Offer) {
	ln := t.lines[o.key]
	if o.prev != nil {
		o.prev.next = o.next
	} else {
		ln.head = o.next
	}
	if o.next != nil {
		o.next.prev = o.prev
	} else {
		ln.tail = o.prev
	}
	o.prev, o.next, o.standing = nil, nil, false
	t.offers--
	if ln.head == nil && ln.run == 0 && ln.yieldUntil.IsZero() {
		delete(t.lines, o.key)
		t.n.Store(int64(len(t.lines)))
	}
}

// Withdraw ends o's standing, and reports whether a releasing holder
// claimed it first: its outcome is then to be awaited (Await).
func (t *Transfers) Withdraw(o *Offer) (claimed bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if o.standing {
		t.remove(o)
	}
	o.awaiting = o.claimed
	return o.claimed
}

// Await waits for the outcome of a claimed offer, and reports false when
// ctx ended first; the outcome, which comes all the same, is then Result's.
func (t *Transfers) Await(ctx context.Context, o *Offer) (Grant, bool) {
	select {
	case <-o.done:
	case <-ctx.Done():
		t.mu.Lock()
		resolved := o.resolved
		t.mu.Unlock()
		if !resolved {
			return Grant{}, false
		}
		<-o.done // sent under t.mu with resolved: already there
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	o.claimed, o.awaiting, o.resolved = false, false, false
	return o.grant, true
}

// Result returns the outcome of a claimed offer whose waiter left before
// it came, and whether it has come.
func (t *Transfers) Result(o *Offer) (Grant, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return o.grant, o.resolved
}

// Claim takes the first offer standing on the lock name of kind, for the
// caller's release to pass the lock to; nil when none stands. With
// bounded, a claim that ends a run of transfers says so (yield): the
// caller's script then releases for real if another process waits, and
// the caller calls Yield. The caller Resolves or Unclaims the offer.
func (t *Transfers) Claim(name string, kind string, now time.Time, bounded bool) (o *Offer, yield bool) {
	if !t.Standing() {
		return nil, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	k := lineKey{name, kind}
	ln := t.lines[k]
	switch {
	case ln == nil:
		return nil, false
	case ln.head == nil:
		// Nobody waits: the run is over, and the release is a real one.
		delete(t.lines, k)
		t.n.Store(int64(len(t.lines)))
		return nil, false
	}
	if bounded && (ln.run >= TransferRun || (ln.run > 0 && now.Sub(ln.runStart) >= TransferSpan)) {
		ln.run, yield = 0, true
	}
	if ln.run == 0 {
		ln.runStart = now
	}
	ln.run++
	o = ln.head
	t.remove(o)
	o.claimed = true
	return o, yield
}

// Yield records that the claim of o ended its run with a real release
// for another process's waiter: the first waiter of this Client to try
// the lock next holds off until TransferYield from now (HoldOff).
func (t *Transfers) Yield(o *Offer, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ln := t.lines[o.key]; ln != nil {
		ln.run, ln.yieldUntil = 0, now.Add(TransferYield)
	}
}

// HoldOff returns how long a waiter of this Client on the lock name of
// kind is to wait before it tries, after a yield: the first one asking
// waits out what is left of it, the others none.
func (t *Transfers) HoldOff(name, kind string) time.Duration {
	if !t.Standing() {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	ln := t.lines[lineKey{name, kind}]
	if ln == nil || ln.yieldUntil.IsZero() {
		return 0
	}
	d := time.Until(ln.yieldUntil)
	ln.yieldUntil = time.Time{}
	return max(d, 0)
}

// Resolve gives a claimed offer its outcome, and wakes its waiter.
func (t *Transfers) Resolve(o *Offer, g Grant) {
	t.mu.Lock()
	defer t.mu.Unlock()
	o.grant, o.resolved = g, true
	o.done <- struct{}{}
	if g.Passed {
		t.passed.Add(1)
	}
	if !o.awaiting {
		o.wake()
	}
}

// Unclaim gives a claimed offer back its place, for a release that passed
// nothing while the waiter is to go on waiting (the lock is still held, or
// went to another waiter, who was told): it stands again, its waiter none
// the wiser, or, if its waiter stopped waiting meanwhile, hears that
// nothing was passed.
func (t *Transfers) Unclaim(o *Offer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if o.awaiting {
		o.grant, o.resolved = Grant{}, true
		o.done <- struct{}{}
		return
	}
	o.claimed = false
	t.insert(o, o.key)
}
