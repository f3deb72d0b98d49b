package pubsub

import (
	"context"
	"sync"
	"time"
)

// wakeReason tells a woken waiter why it was woken.
type wakeReason uint8

const (
	wakeNone     wakeReason = iota
	wakeOne                 // a "0" message or a passed-on wake-up: exactly one waiter
	wakeRelay               // a wake-all (any other payload, or a resubscription) reached this waiter in turn
	wakeClosed              // the hub closed
	wakeSubClose            // the Subscription itself was closed
	wakeCalled              // Subscription.Wake
)

// waiter is the parking spot of one Subscription. Its channel has capacity
// one and is empty whenever the waiter is parked, so a waker's send never
// blocks.
type waiter struct {
	ch         chan struct{}
	prev, next *waiter
	parked     bool
	reason     wakeReason
	seq        uint64 // the entry's pushes before this park: its place in line
}

// attempt is one effort to make a channel's server subscription live. It
// completes exactly once, under Hub.mu: with nil when the server confirmed
// the subscription, or with the error that ended the effort.
type attempt struct {
	done chan struct{}
	err  error
}

func newAttempt() *attempt { return &attempt{done: make(chan struct{})} }

func (a *attempt) complete(err error) {
	a.err = err
	close(a.done)
}

// entry is the local state of one subscribed channel: its reference count,
// its routing and its waiters. It is Redisson's RedissonLockEntry.
type entry struct {
	key    chanKey
	slot   uint16 // cluster slot, for sharded channels in cluster mode
	policy Policy // fixed by the first Subscribe

	// Guarded by Hub.mu.
	refs    int
	gone    bool     // removed from the hub (last reference dropped or hub closed)
	conn    *subConn // the connection this channel is routed to
	live    bool     // the server subscription is active on conn's connection
	wasLive bool     // it has been live before, so becoming live again is a resubscription
	pending *attempt // non-nil while !live

	// Guarded by mu.
	mu         sync.Mutex
	permits    int // stored "0" wake-ups, at most maxPermits
	maxPermits int // the number of references: more permits than users would only cause idle retries
	head, tail *waiter
	parkedN    int
	closed     bool // the hub closed
	// lastUntil is when the waiter parked most recently stops waiting by
	// itself (zero: it waits for a message with no limit); see Hub.Join.
	lastUntil time.Time
	// wakeAlls counts the wake-ups of every waiter (wakeAll), so that a
	// Subscription that was between two Waits when one happened sees it.
	wakeAlls uint64
	// pushes counts parks; the waiters with a seq below relayTo are owed
	// the latest wake-all's relay (see wakeAll).
	pushes, relayTo uint64
	// trying counts the Subscriptions woken one at a time (or that took a
	// stored permit) that have not yet acted on it (Subscription.Pass):
	// a WakeCount message wakes only as many more as it announced.
	trying int
	// watchers hear every message and wake-up of the channel (Watch).
	watchers map[*Watcher]struct{}
}

func newEntry(key chanKey, slot uint16, policy Policy) *entry {
	return &entry{key: key, slot: slot, policy: policy, pending: newAttempt()}
}

// setCap records the reference count as the permit ceiling.
func (e *entry) setCap(refs int) {
	e.mu.Lock()
	e.maxPermits = refs
	if e.permits > refs {
		e.permits = max(refs, 0)
	}
	e.mu.Unlock()
}

// push parks w at the tail. e.mu must be held.
func (e *entry) push(w *waiter) {
	w.parked = true
	w.reason = wakeNone
	w.seq = e.pushes
	e.pushes++
	w.next = nil
	w.prev = e.tail
	if e.tail != nil {
		e.tail.next = w
	} else {
		e.head = w
	}
	e.tail = w
	e.parkedN++
}

// unpark removes w from the list. e.mu must be held and w parked.
func (e *entry) unpark(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		e.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		e.tail = w.prev
	}
	w.prev, w.next = nil, nil
	w.parked = false
	e.parkedN--
}

// signal unparks w and hands it reason. e.mu must be held and w parked.
func (e *entry) signal(w *waiter, reason wakeReason) {
	e.unpark(w)
	w.reason = reason
	if reason == wakeOne {
		e.trying++
	}
	select {
	case w.ch <- struct{}{}:
	default: // cannot happen: the channel is empty while parked
	}
}

// releaseOneLocked wakes the longest-parked waiter, or stores a permit when
// nobody is parked. e.mu must be held.
func (e *entry) releaseOneLocked() {
	if e.head != nil {
		e.signal(e.head, wakeOne)
		return
	}
	if e.permits < e.maxPermits {
		e.permits++
	}
}

// release wakes one waiter, as releaseOneLocked does.
func (e *entry) release() {
	e.mu.Lock()
	e.releaseOneLocked()
	e.mu.Unlock()
}

// releaseCount handles a WakeCount message announcing n permits: it wakes
// waiters, one at a time as releaseOneLocked does, until n of them are
// trying or hold a stored wake-up. Those already trying were woken for
// permits that an earlier message announced, and the count a semaphore
// announces is its whole free count, not what the release added.
func (e *entry) releaseCount(n int64) {
	e.mu.Lock()
	for n -= int64(e.trying + e.permits); n > 0 && (e.head != nil || e.permits < e.maxPermits); n-- {
		e.releaseOneLocked()
	}
	e.mu.Unlock()
}

// wakeAll wakes every waiter parked at this moment, one at a time in the
// order they parked: the longest-parked is signalled, and each waiter of
// the wave signals the next once it has acted on its wake-up
// (Subscription.Pass). Lock waiters then try the lock in the order they
// queued, so a wake-all (after a reconnect, say) is not a race that the
// same waiters can lose again and again: the scheduler, and the several
// connections a rueidis client writes on, would otherwise decide whose
// attempt reaches the server first. It stores no permit, but the next Wait
// of each Subscription that was not parked returns at once (see
// Subscription.Wait).
func (e *entry) wakeAll() {
	e.mu.Lock()
	e.notifyLocked()
	e.wakeAlls++
	e.relayTo = e.pushes
	e.relayLocked()
	e.mu.Unlock()
}

// relayLocked signals the longest-parked waiter if the latest wake-all
// still owes it a wake-up. e.mu must be held.
func (e *entry) relayLocked() {
	if e.head != nil && e.head.seq < e.relayTo {
		e.signal(e.head, wakeRelay)
	}
}

// shutdown marks the entry closed and wakes every parked waiter.
func (e *entry) shutdown() {
	e.mu.Lock()
	e.closed = true
	e.permits = 0
	e.notifyLocked()
	for e.head != nil {
		e.signal(e.head, wakeClosed)
	}
	e.mu.Unlock()
}

// notify tells every Watcher of the channel that something happened.
func (e *entry) notify() {
	e.mu.Lock()
	e.notifyLocked()
	e.mu.Unlock()
}

// notifyLocked is notify with e.mu held.
func (e *entry) notifyLocked() {
	for w := range e.watchers {
		select {
		case w.ch <- struct{}{}:
		default: // one pending notification stands for any number
		}
	}
}

// queueHint reports whether waiters are parked, and how long the one that
// parked last waits at most (negative: for a message, with no limit).
func (e *entry) queueHint() (time.Duration, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.parkedN == 0 || e.closed {
		return 0, false
	}
	if e.lastUntil.IsZero() {
		return -1, true
	}
	d := time.Until(e.lastUntil)
	return d, d > 0
}

// parked reports how many waiters are parked. It is for tests.
func (e *entry) parked() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.parkedN
}

// storedPermits reports how many permits are stored. It is for tests.
func (e *entry) storedPermits() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.permits
}

// Subscription is one user's reference to a shared channel subscription,
// with its own parking spot for Wait. Wait must not be called concurrently on
// one Subscription (give each waiting goroutine its own Subscription); Close
// may be called from any goroutine, also while Wait is parked, and more than
// once.
type Subscription struct {
	h      *Hub
	e      *entry
	w      waiter
	closed bool // guarded by e.mu
	// seen is the entry's wakeAlls when this Subscription was made or last
	// returned from Wait; guarded by e.mu.
	seen uint64
	// relay is set while this Subscription holds its turn in a wake-all,
	// which Pass hands on; guarded by e.mu.
	relay bool
	// one is set when the last Wait returned for a wake-up of one waiter,
	// which HandOn hands on; guarded by e.mu.
	one bool
	// woken is set by a Wake that found no Wait parked, for the next
	// Wait to return at once; guarded by e.mu.
	woken bool
}

func newSubscription(h *Hub, e *entry) *Subscription {
	s := &Subscription{h: h, e: e, w: waiter{ch: make(chan struct{}, 1)}}
	e.mu.Lock()
	s.seen = e.wakeAlls
	e.mu.Unlock()
	return s
}

// timers keeps the stopped timers of Waits that ended, for the next: a
// waiter typically makes one Subscription per acquisition, and waits once.
var timers sync.Pool

// startTimer returns a timer that fires after d.
func startTimer(d time.Duration) *time.Timer {
	if t, ok := timers.Get().(*time.Timer); ok {
		t.Reset(d)
		return t
	}
	return time.NewTimer(d)
}

// stopTimer stops t and keeps it for another Wait. Since Go 1.23, no tick
// of t is received after Stop, so the next Reset starts it afresh.
func stopTimer(t *time.Timer) {
	t.Stop()
	timers.Put(t)
}

// Channel returns the name of the subscribed channel.
func (s *Subscription) Channel() string { return s.e.key.name }

// Sharded reports whether the subscription is a sharded (SSUBSCRIBE) one.
func (s *Subscription) Sharded() bool { return s.e.key.sharded }

// Wait parks the caller until it is woken or d has elapsed, with the
// semantics of Redisson's lock-entry semaphore:
//
//   - A "0" payload (Redisson's unlock message) wakes exactly one parked
//     waiter of the channel, the one parked longest; when none is parked it is
//     stored as a permit, and the next Wait consumes it and returns at once.
//     The hub stores at most one permit per open Subscription of the channel.
//   - Any other payload (Redisson's "1", sent when a write lock is
//     released) wakes every waiter parked at that moment, one at a time
//     in the order they parked (each once the one before it has acted on
//     its wake-up: see Pass), and stores no permit. A Subscription that
//     was not parked then (its owner was busy re-checking the lock between
//     two Waits, or had just subscribed or joined) has missed nothing: its
//     next Wait returns at once. Without that, a reader that had just
//     found a write lock held could sleep through the release meant for
//     every reader.
//   - After the connection carrying the channel was lost, every waiter is
//     woken when the channel has been subscribed again, because messages
//     published meanwhile were lost.
//
// Wait returns nil when woken or when d has elapsed; d < 0 means no time
// limit and d == 0 only consumes a stored permit, if any. When ctx is done it
// returns ctx.Err(); a "0" wake-up that reached this waiter at the same time
// is passed on to another parked waiter, or stored as a permit, so it is
// never lost. Wait returns ErrSubscriptionClosed after Close and ErrClosed
// after the hub closed.
func (s *Subscription) Wait(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e, w := s.e, &s.w
	e.mu.Lock()
	s.passLocked()
	switch {
	case s.closed:
		e.mu.Unlock()
		return ErrSubscriptionClosed
	case e.closed:
		e.mu.Unlock()
		return ErrClosed
	case s.woken:
		// Before a stored wake-up, which stays for the next Wait.
		s.woken = false
		e.mu.Unlock()
		return nil
	case e.permits > 0:
		e.permits--
		e.trying++
		s.one = true
		e.mu.Unlock()
		return nil
	case e.wakeAlls != s.seen:
		// Everyone was woken since this Subscription last looked.
		s.seen = e.wakeAlls
		e.mu.Unlock()
		return nil
	case d == 0:
		e.mu.Unlock()
		return nil
	}
	e.push(w)
	e.lastUntil = time.Time{}
	if d > 0 {
		e.lastUntil = time.Now().Add(d)
	}
	e.mu.Unlock()

	var (
		expired <-chan time.Time
		timer   *time.Timer
	)
	if d > 0 {
		timer = startTimer(d)
		expired = timer.C
	}
	select {
	case <-w.ch:
	case <-expired:
	case <-ctx.Done():
	}
	if timer != nil {
		stopTimer(timer)
	}

	e.mu.Lock()
	reason := wakeNone
	if w.parked {
		e.unpark(w)
	} else {
		// A waker unparked us under e.mu and sent before we got e.mu:
		// the token is in the channel unless the select consumed it.
		select {
		case <-w.ch:
		default:
		}
		reason = w.reason
	}
	w.reason = wakeNone
	s.seen = e.wakeAlls
	s.one = reason == wakeOne
	if reason == wakeRelay {
		s.relay = true // handed on by Pass, the next Wait or Close
	}
	if err := ctx.Err(); err != nil {
		// We are leaving: pass on what we were handed.
		s.passLocked()
		if reason == wakeOne {
			e.releaseOneLocked()
		}
		e.mu.Unlock()
		return err
	}
	e.mu.Unlock()
	switch reason {
	case wakeClosed:
		return ErrClosed
	case wakeSubClose:
		return ErrSubscriptionClosed
	}
	return nil
}

// Wake ends the Wait parked on this Subscription, which returns nil, or
// the next one when none is parked: its owner is to act at once on
// something other than a message (a lock passed to it by a releasing
// holder of its process). It consumes no wake-up of the channel.
func (s *Subscription) Wake() {
	e := s.e
	e.mu.Lock()
	if s.w.parked {
		e.signal(&s.w, wakeCalled)
	} else {
		s.woken = true
	}
	e.mu.Unlock()
}

// Close releases this Subscription's reference to the channel. A Wait parked
// on it returns ErrSubscriptionClosed. When the last Subscription of a
// channel is closed, the channel's local state (including stored permits) is
// dropped at once and the hub sends the (S)UNSUBSCRIBE asynchronously,
// promptly, from its connection goroutine. Close is idempotent.
func (s *Subscription) Close() {
	e := s.e
	e.mu.Lock()
	if s.closed {
		e.mu.Unlock()
		return
	}
	s.closed = true
	if s.w.parked {
		e.signal(&s.w, wakeSubClose)
	}
	s.passLocked()
	e.mu.Unlock()
	s.h.release(e)
}

// Pass reports that the caller has acted on the wake-up its last Wait
// returned (a lock waiter: that its attempt got an answer). When that
// wake-up was its turn in a wake-all, the next waiter parked on the
// channel gets its turn now. Wait and Close pass it on too, so Pass only
// makes it sooner; it is cheap and may be called at any time.
func (s *Subscription) Pass() {
	s.e.mu.Lock()
	s.passLocked()
	s.e.mu.Unlock()
}

// HandOn passes the wake-up of one waiter that the last Wait returned for
// to the longest-parked other waiter, if one is parked: a semaphore waiter
// for several permits that could not use the ones announced leaves them
// to a waiter that may need fewer. Call it before Pass; it does nothing
// after any other return.
func (s *Subscription) HandOn() {
	e := s.e
	e.mu.Lock()
	if s.one {
		s.one = false
		e.trying--
		if e.head != nil && !e.closed {
			e.signal(e.head, wakeOne)
		}
	}
	e.mu.Unlock()
}

// passLocked hands this Subscription's turn in a wake-all, if it holds
// one, to the next waiter. e.mu must be held.
func (s *Subscription) passLocked() {
	if s.one {
		s.one = false
		s.e.trying--
	}
	if s.relay {
		s.relay = false
		s.e.relayLocked()
	}
}

// Watcher hears every message of a channel, and every wake-up of all its
// waiters (a resubscription after the connection was lost, the hub's
// close), without taking part in the channel's wake policy: a "0" still
// wakes, or is stored for, one waiter. It shares the channel's one server
// subscription. For an observer of a lock that must not take a wake-up
// away from the lock's waiters in its process.
type Watcher struct {
	sub *Subscription
	ch  chan struct{}
}

// Watch subscribes to channel, as SubscribeWith does, for a Watcher.
func (h *Hub) Watch(ctx context.Context, channel string, sharded bool, policy Policy) (*Watcher, error) {
	s, err := h.SubscribeWith(ctx, channel, sharded, policy)
	if err != nil {
		return nil, err
	}
	w := &Watcher{sub: s, ch: make(chan struct{}, 1)}
	e := s.e
	e.mu.Lock()
	if e.watchers == nil {
		e.watchers = make(map[*Watcher]struct{})
	}
	e.watchers[w] = struct{}{}
	e.mu.Unlock()
	return w, nil
}

// C receives a value after one or more messages or wake-ups: at most one
// is pending at a time, so a slow reader misses none, but learns of
// several at once.
func (w *Watcher) C() <-chan struct{} { return w.ch }

// Close stops the Watcher and releases its reference to the channel. It is
// idempotent.
func (w *Watcher) Close() {
	e := w.sub.e
	e.mu.Lock()
	delete(e.watchers, w)
	e.mu.Unlock()
	w.sub.Close()
}
