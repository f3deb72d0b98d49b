package fairlock

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/lockcore"
	"github.com/interlock-go/interlock/internal/wait"
	"github.com/interlock-go/interlock/lua"
	"github.com/interlock-go/interlock/renewal"
)

var (
	// ErrNotHeld is returned by Unlock when the owner holds no hold on the
	// lock (also when the lock had already expired: see the package
	// documentation), and is the cause of a Guard asked for a lock that is
	// not held.
	ErrNotHeld = errors.New("fairlock: lock not held by this owner")
	// ErrLockLost is the cause of a Guard's cancellation when the lock was
	// lost: its key vanished or was force-unlocked, renewal failed for a
	// whole lease, or an explicit lease ran out before Unlock.
	ErrLockLost = errors.New("fairlock: lock lost")
	// ErrClosed is returned once the Client is closed.
	ErrClosed = interlock.ErrClosed
)

// DefaultWaitTimeout is how long a waiter keeps its place in the queue
// after the waiter before it was due, unless it says otherwise
// (WithWaitTimeout, or TryLock's wait): Redisson's fairLockWaitTimeout.
const DefaultWaitTimeout = 5 * time.Minute

const (
	// cleanupTimeout bounds the give-up clean-up that runs after a waiter
	// stopped waiting, on a context of its own.
	cleanupTimeout = time.Second
	// retryMin and retryMax bound the pause of a queued waiter that found
	// the lock free but not yet taken by the waiter ahead of it, which
	// wakes only that waiter. The pause doubles while that lasts: the head
	// normally takes the lock within a round trip, and a dead head leaves
	// the queue only when its deadline has passed.
	retryMin = 10 * time.Millisecond
	retryMax = time.Second
	// maxQueuedWait bounds how long a queued waiter waits for its message
	// before it asks again. The script's answer (when the waiter ahead of
	// it would time out) can be minutes away with the default wait
	// timeout, and a message lost to a reconnect, a proxy or a publish-mode
	// mismatch with the Java fleet would hold the waiter that long. A
	// repeated ask changes nothing on the server.
	maxQueuedWait = time.Second
)

// queuedWait is how long a queued waiter with the given grace (its wait
// timeout) waits at most before it asks again: maxQueuedWait, or a quarter
// of the grace when that is shorter. A waiter whose turn has come keeps
// its place only until its deadline, which can be less than a second
// away with a short wait timeout; one that missed the message and slept
// past it would be dropped from the queue as if it were dead, and the
// turn would pass to the next waiter, a further wait later.
func queuedWait(grace time.Duration) time.Duration {
	return max(min(maxQueuedWait, grace/4), retryMin)
}

// expiredReply is fair_unlock.lua's answer when the lock did not exist.
const expiredReply = 2

// kind tells the shared lock core about this package.
var kind = &lockcore.Kind{
	Name:    "fairlock",
	NotHeld: ErrNotHeld,
	Lost:    ErrLockLost,
	Task:    &renewal.Task{Script: lua.Renew(), Args: lockcore.RenewArgs, Lost: ErrLockLost},
}

// Option configures a Mutex.
type Option func(*options)

type options struct {
	waitTimeout time.Duration
	err         error
}

// WithWaitTimeout sets how long a waiter of Lock and LockLease keeps its
// place: its deadline in the queue is the previous waiter's deadline (or,
// at the front, the holder's remaining lease) plus this timeout, as
// Redisson computes it. TryLock uses its own wait instead, as Redisson's
// tryLock does. The default is 5m (DefaultWaitTimeout, Redisson's
// fairLockWaitTimeout); it must be at least 1ms, and should be the same as
// the Java fleet's, since every client moves all deadlines by its own
// value when it acquires.
//
// The trade-off: a waiter that dies without leaving the queue (a crashed
// process) blocks everyone behind it, with the lock free, until its
// deadline, so up to this long; but a live waiter is also dropped once its
// deadline passes, when the holders ahead of it keep the lock longer than
// that (it then queues again at the back). Choose a value longer than a
// waiter's turn normally takes.
func WithWaitTimeout(d time.Duration) Option {
	return func(o *options) {
		if d < time.Millisecond && o.err == nil {
			o.err = invalid("wait timeout %v must be at least 1ms", d)
		}
		o.waitTimeout = d
	}
}

// Mutex is a fair, reentrant lock shared with Redisson's RFairLock of the
// same name: waiters acquire it in the order they started waiting. See the
// package documentation for its policy and guarantees. A Mutex holds no
// state of its own beyond its name and options: every Mutex of one name on
// one Client sees the same holds.
type Mutex struct {
	l           lockcore.Lock
	waitTimeout time.Duration
	queue       string // redisson_lock_queue:{N}
	timeouts    string // redisson_lock_timeout:{N}
	channel     string // redisson_lock__channel:{N}; a waiter's is channel:<owner>
}

// New returns the fair lock called name. A bad name, a bad option or a nil
// client is not reported here but by every method, before anything is
// sent.
func New(c *interlock.Client, name string, opts ...Option) *Mutex {
	o := options{waitTimeout: DefaultWaitTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	m := &Mutex{
		l:           lockcore.New(c, kind, name),
		waitTimeout: o.waitTimeout,
		queue:       keys.Prefix("redisson_lock_queue", name),
		timeouts:    keys.Prefix("redisson_lock_timeout", name),
		channel:     keys.LockChannel(name),
	}
	if m.l.Err == nil {
		m.l.Err = o.err
	}
	return m
}

// Name returns the lock's name, which is also its Redis key.
func (m *Mutex) Name() string { return m.l.Name }

// Lock waits its turn until the lock is acquired or ctx ends. The hold has
// no fixed lease: the Client's watchdog keeps it until Unlock, or until the
// process stops renewing it. On failure Lock returns ctx's error (errors.Is
// works) and leaves nothing held and nothing queued.
func (m *Mutex) Lock(ctx context.Context) error {
	_, err := m.acquire(ctx, 0, 0, true)
	return err
}

// LockLease is Lock with a fixed lease: the hold ends by itself when lease
// has passed, and is never renewed. lease must be at least a millisecond.
func (m *Mutex) LockLease(ctx context.Context, lease time.Duration) error {
	if lease < time.Millisecond {
		return invalid("lease %v must be at least 1ms", lease)
	}
	_, err := m.acquire(ctx, lease, 0, true)
	return err
}

// TryLock tries to acquire the lock for up to wait and reports whether it
// did. A wait of 0 is a single attempt that never queues and never
// subscribes: it succeeds only when the lock is free and nobody is queued
// (or the caller is first in the queue), or when the caller already holds
// it. A positive wait queues the caller, with wait as its grace in the
// queue (see WithWaitTimeout), and takes it out of the queue again if it
// gives up. A lease of 0 means a watchdog hold, as with Lock; otherwise the
// hold ends by itself after lease. wait and lease, unless 0, must be at
// least a millisecond. A lock still busy when wait has passed is
// (false, nil); if ctx ends first, TryLock returns ctx's error, and the
// caller is neither holding nor queued.
func (m *Mutex) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	if wait < 0 || lease < 0 || (lease > 0 && lease < time.Millisecond) || (wait > 0 && wait < time.Millisecond) {
		return false, invalid("wait %v and lease %v must not be negative, and each at least 1ms unless 0", wait, lease)
	}
	return m.acquire(ctx, lease, wait, false)
}

// acquire runs the shared waiting algorithm (internal/wait) on the owner's
// own channel: try (which queues the owner), subscribe and wait for the
// confirmation, try, then wait for the message that says it is the owner's
// turn, the retry bound, or the end of ctx or of the wait, and loop. An
// owner that stops waiting without the lock is taken out of the queue.
func (m *Mutex) acquire(ctx context.Context, lease, maxWait time.Duration, forever bool) (bool, error) {
	if err := m.l.Ready(); err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, err // nothing sent, nothing to clean up
	}
	owner, err := m.l.C.Owner(ctx)
	if err != nil {
		return false, err
	}
	if !forever && maxWait == 0 {
		ok, _, err := m.try(ctx, owner, lease, m.waitTimeout, nil)
		return ok, err
	}
	grace := m.waitTimeout
	if !forever {
		grace = maxWait // Redisson's tryLock(wait, ...) queues with its wait
	}
	if err := m.l.C.CheckClockSkew(ctx); err != nil {
		return false, m.l.OpErr("acquire", err) // nothing queued yet
	}
	sharded, err := m.l.C.Sharded(ctx)
	if err != nil {
		return false, m.l.OpErr("acquire", err)
	}
	var (
		queued bool  // an acquire that may have queued the owner was sent
		tryErr error // an error Try returned, already wrapped
		busy   int   // consecutive "free, but not your turn" answers
	)
	spec := wait.Spec{
		Hub:      m.l.C.PubSub(),
		Channel:  m.channel + ":" + owner,
		Sharded:  sharded,
		Forever:  forever,
		Deadline: time.Now().Add(maxWait),
		// Every owner waits on a channel of its own: there is no local
		// queue of waiters to join.
		Queue:   false,
		MaxWait: queuedWait(grace),
		Try: func(ctx context.Context) (bool, time.Duration, error) {
			ok, retryIn, err := m.try(ctx, owner, lease, grace, func() { queued = true })
			switch {
			case ok:
				queued = false // acquiring took the owner out of the queue
				return true, 0, nil
			case err != nil:
				tryErr = err
				return false, 0, err
			case retryIn > 0:
				busy = 0
				return false, retryIn, nil
			}
			busy++
			return false, min(retryMin<<min(busy-1, 10), retryMax), nil
		},
	}
	ok, err := wait.Acquire(ctx, spec)
	if err != nil && err != tryErr {
		err = m.l.OpErr("acquire", err)
	}
	if !ok && queued {
		// Whatever ended the wait, the owner must not keep a place in
		// the queue, where it would hold up everyone behind it.
		if cerr := m.giveUp(ctx, owner, grace); err == nil {
			err = cerr
		}
	}
	return ok, err
}

// try runs one acquire script: with queued == nil the single-attempt
// variant, else the waiting variant, which queues the owner when it is not
// its turn; queued is called just before that one is sent.
func (m *Mutex) try(ctx context.Context, owner string, lease, grace time.Duration, queued func()) (bool, time.Duration, error) {
	leaseArg := lease
	if lease == 0 {
		leaseArg = m.l.C.WatchdogTimeout()
	}
	ks := []string{m.l.Name, m.queue, m.timeouts}
	return m.l.Attempt(ctx, owner, lease,
		func(ctx context.Context, exec lockcore.Exec) rueidis.RedisResult {
			now := m.nowMillis()
			if queued == nil {
				return exec(ctx, lua.FairTryAcquire(), ks, []string{lockcore.MS(leaseArg), owner, now, lockcore.MS(grace)})
			}
			queued()
			return exec(ctx, lua.FairAcquire(), ks, []string{lockcore.MS(leaseArg), owner, lockcore.MS(grace), now})
		},
		func(r rueidis.RedisResult) (bool, time.Duration, error) {
			n, err := r.AsInt64()
			if rueidis.IsRedisNil(err) {
				return true, 0, nil
			}
			if err != nil {
				return false, 0, m.l.OpErr("acquire", err)
			}
			if queued == nil {
				return false, 0, nil
			}
			return false, lockcore.Millis(n), nil
		},
		func(ctx context.Context, expected int) error { return m.undo(ctx, owner, expected) })
}

// undo releases the hold a lost acquisition may have taken: if owner's
// count on the server is exactly what that acquisition would have made it.
// A lost acquisition that queued the owner instead is undone by giveUp.
func (m *Mutex) undo(ctx context.Context, owner string, expected int) error {
	pub, err := m.l.C.PublishCommand(ctx)
	if err != nil {
		return err
	}
	return lockcore.Done(lua.FairUndoAcquire().Exec(ctx, m.l.C.Redis(),
		[]string{m.l.Name, m.queue, m.timeouts, m.channel},
		[]string{"0", owner, strconv.Itoa(expected), pub, m.nowMillis()}))
}

// giveUp takes owner out of the queue (Redisson's acquireFailed), moving
// the deadlines of the waiters behind it grace earlier. It is sent whether
// or not the owner is still queued: a lost reply may have queued it. The
// Client's clean-up goroutine runs it, retrying until it succeeds; the
// caller waits for it as AwaitCleanup says, so that it returns by its
// deadline even when Redis does not answer. The
// owner's next attempt on this lock waits for it.
func (m *Mutex) giveUp(ctx context.Context, owner string, grace time.Duration) error {
	leave := func(ctx context.Context) error {
		pub, err := m.l.C.PublishCommand(ctx)
		if err != nil {
			return err
		}
		return lockcore.Done(lua.FairAcquireFailed().Exec(ctx, m.l.C.Redis(),
			[]string{m.queue, m.timeouts, m.l.Name, m.channel},
			[]string{owner, lockcore.MS(grace), "0", pub}))
	}
	m.l.C.Cleanup(m.l.Name, owner, time.Now().Add(grace+m.l.C.WatchdogTimeout()), leave)
	m.l.C.AwaitCleanup(ctx, m.l.Name, owner, cleanupTimeout)
	return nil
}

// Unlock releases one hold of the calling owner. When the last hold is
// released, the lock is free and the first waiter in the queue, here or in
// Java, is told it is its turn. It returns an error wrapping ErrNotHeld
// when the owner holds nothing, including when its hold was lost.
//
// Unlocking a lock that does not exist at all (its lease ran out) returns
// ErrNotHeld too, although the first waiter is still told, as Redisson's
// unlock does (Redisson reports success in that case).
//
// One Unlock is one logical unlock: when no reply comes back it resends
// the same request, for up to 5 s while ctx lives, and the server applies
// it at most once. With interlock.WithReplicaAcks, a release too few
// replicas acknowledged still counts, and the error wraps
// interlock.ErrReplication. After the Client's max hold time
// (interlock.WithMaxHold) ended the hold, the error also wraps
// ErrLockLost and interlock.ErrMaxHold when the key is gone.
func (m *Mutex) Unlock(ctx context.Context) error {
	if err := m.l.Ready(); err != nil {
		return err
	}
	owner, err := m.l.C.Owner(ctx)
	if err != nil {
		return err
	}
	_, err = m.l.Unlock(ctx, owner, func(ctx context.Context, exec lockcore.Exec, latch string, lease time.Duration, pub string) rueidis.RedisResult {
		res := exec(ctx, lua.FairUnlock(),
			[]string{m.l.Name, m.queue, m.timeouts, m.channel, latch},
			[]string{"0", lockcore.MS(lease), owner, m.nowMillis(), pub, lockcore.MS(lockcore.LatchTTL)})
		if n, err := res.AsInt64(); err == nil && n == expiredReply {
			// The server held nothing for owner: report it as not held
			// (the core then forgets the hold as lost), and delete the
			// latch the script wrote, which the core leaves to nil replies.
			m.l.C.DeleteLater(latch)
			return rueidis.NewErrorResult(rueidis.Nil)
		}
		return res
	})
	return err
}

// ForceUnlock deletes the lock whoever holds it, tells the first waiter in
// the queue that it is its turn, and reports whether there was a lock to
// delete. The queue is kept. Holds of this Client on the lock are lost:
// their guards are cancelled with ErrLockLost.
func (m *Mutex) ForceUnlock(ctx context.Context) (bool, error) {
	if err := m.l.Ready(); err != nil {
		return false, err
	}
	pub, err := m.l.C.PublishCommand(ctx)
	if err != nil {
		return false, m.l.OpErr("force unlock", err)
	}
	m.l.C.Renewal().Drop(m.l.Name, ErrLockLost)
	n, err := lua.FairForceUnlock().Exec(ctx, m.l.C.Redis(),
		[]string{m.l.Name, m.queue, m.timeouts, m.channel},
		[]string{"0", m.nowMillis(), pub}).AsInt64()
	if err != nil {
		return false, m.l.OpErr("force unlock", err)
	}
	return n == 1, nil
}

// IsLocked reports whether anyone holds the lock.
func (m *Mutex) IsLocked(ctx context.Context) (bool, error) {
	return m.l.Exists(ctx)
}

// IsHeld reports whether the calling owner holds the lock.
func (m *Mutex) IsHeld(ctx context.Context) (bool, error) {
	n, err := m.HoldCount(ctx)
	return n > 0, err
}

// HoldCount returns how many holds the calling owner has on the lock, as
// the server counts them (0 when it holds none).
func (m *Mutex) HoldCount(ctx context.Context) (int, error) {
	return m.l.HoldCount(ctx, "")
}

// TTL returns how long the lock has left before it expires: 0 when it is
// not locked, a negative duration when it is locked with no expiry (which
// only a foreign writer can cause).
func (m *Mutex) TTL(ctx context.Context) (time.Duration, error) {
	return m.l.TTL(ctx)
}

// Guard returns a context derived from ctx that is cancelled when the
// calling owner's hold on the lock ends: with cause ErrLockLost when the
// lock is lost, with cause context.Canceled when Unlock releases it. Work
// done under the lock should check it (context.Cause tells the two apart).
// If the owner holds nothing, the returned context is already cancelled
// with a cause wrapping ErrNotHeld.
//
// A lock can be lost at any moment (a pause longer than the lease, a
// network partition, a failover that lost the key), and the guard learns
// of it only at the next renewal; protect writes with a fenced lock where
// that matters.
func (m *Mutex) Guard(ctx context.Context) context.Context {
	return m.l.Guard(ctx, "")
}

// Remaining returns how long the calling owner's hold on the lock is still
// certainly valid: the lease set by the last successful acquisition or
// renewal, counted from when that request was sent (on the monotonic
// clock), minus the time since. It is 0 when the owner holds nothing here,
// or its hold was lost, ended by the Client's max hold time, or expired.
// It sends nothing and costs a map lookup, so call it before each step of
// protected work: go on only while it exceeds what the step may take. It
// says nothing about a pause that happens after it returns; fence writes
// where that matters.
func (m *Mutex) Remaining(ctx context.Context) time.Duration {
	return m.l.Remaining(ctx, "")
}

// nowMillis is the Client's wall clock (interlock.WithWallClock) in epoch
// milliseconds, the "now" of every fair-lock script: queue deadlines are
// client clocks, as in Redisson.
func (m *Mutex) nowMillis() string { return strconv.FormatInt(m.l.C.WallNow().UnixMilli(), 10) }

func invalid(format string, args ...any) error { return kind.Invalid(format, args...) }
