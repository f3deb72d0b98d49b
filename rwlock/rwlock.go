package rwlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
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
	// ErrNotHeld is returned by Unlock when the owner holds no hold of that
	// kind (read or write) on the lock, and is the cause of a Guard asked
	// for a hold that does not exist.
	ErrNotHeld = errors.New("rwlock: lock not held by this owner")
	// ErrLockLost is the cause of a Guard's cancellation when the hold was
	// lost: the lock's key vanished or was force-unlocked, renewal failed
	// for a whole lease, or an explicit lease ran out before Unlock.
	ErrLockLost = errors.New("rwlock: lock lost")
	// ErrUpgrade is returned, at once and without sending anything, by
	// every write acquisition of an owner that holds the read lock but not
	// the write lock. Waiting could never succeed: the writer would wait for
	// its own read holds. A write acquisition that is already waiting when
	// its owner takes the read lock (from another goroutine) is woken and
	// fails with ErrUpgrade too.
	ErrUpgrade = errors.New("rwlock: cannot upgrade a read lock to a write lock")
	// ErrClosed is returned once the Client is closed.
	ErrClosed = interlock.ErrClosed
)

// The two halves of a lock are two kinds to the lock core: their holds are
// recorded under different owner strings ("<owner>" and "<owner>:write")
// and renewed by different scripts, in the same ticks.
var (
	readKind = &lockcore.Kind{
		Name:    "rwlock",
		NotHeld: ErrNotHeld,
		Lost:    ErrLockLost,
		Task:    &renewal.Task{Script: lua.RWRenewRead(), Args: readRenewArgs, Lost: ErrLockLost},
	}
	writeKind = &lockcore.Kind{
		Name:    "rwlock",
		NotHeld: ErrNotHeld,
		Lost:    ErrLockLost,
		Task:    &renewal.Task{Script: lua.Renew(), Args: lockcore.RenewArgs, Lost: ErrLockLost},
	}
)

// readRenewArgs builds the KEYS and ARGV of lua.RWRenewRead() (Redisson
// 4.4+'s ReadLockTask) for a chunk of read holds. Redisson lists all of a
// client's owners of one lock under one pair of keys; the Scheduler keeps
// one entry per (lock, owner) and wants one answer per entry, so each entry
// gets its own pair with a single owner, which the script treats alike.
func readRenewArgs(lease time.Duration, chunk []*renewal.Entry) (keys, argv []string) {
	keys = make([]string, 0, 2*len(chunk))
	argv = make([]string, 1, 1+2*len(chunk))
	argv[0] = lockcore.MS(lease)
	for _, e := range chunk {
		keys = append(keys, e.Key, keyPrefix(e.Key))
		argv = append(argv, "1", e.Owner)
	}
	return keys, argv
}

// keyPrefix is the prefix of a lock's reader timeout keys, "{name}", or
// name itself when it contains "{" (what Redisson's suffixName puts before
// ":suffix").
func keyPrefix(name string) string {
	return strings.TrimSuffix(keys.Suffix(name, ""), ":")
}

// Mutex is a read/write lock shared with Redisson's RReadWriteLock of the
// same name: any number of readers, or one writer. See the package
// documentation for its policy and guarantees. A Mutex holds no state of
// its own beyond its name: every Mutex of one name on one Client sees the
// same holds.
type Mutex struct {
	read  ReadLock
	write WriteLock
}

// names are a lock's derived keys, shared by its two halves.
type names struct {
	name    string
	channel string // redisson_rwlock:{name}
	prefix  string // {name}
}

// timeouts is the prefix of owner's read-hold timeout keys:
// {name}:<owner>:rwlock_timeout (hold k is that plus ":k").
func (n *names) timeouts(owner string) string { return n.prefix + ":" + owner + ":rwlock_timeout" }

// New returns the read/write lock called name. A bad name or a nil client
// is not reported here but by every method, before anything is sent.
func New(c *interlock.Client, name string) *Mutex {
	n := &names{name: name, channel: keys.Prefix("redisson_rwlock", name), prefix: keyPrefix(name)}
	return &Mutex{
		read:  ReadLock{l: lockcore.New(c, readKind, name), n: n},
		write: WriteLock{l: lockcore.New(c, writeKind, name), n: n},
	}
}

// Name returns the lock's name, which is also its Redis key.
func (m *Mutex) Name() string { return m.read.n.name }

// Read returns the lock's read half (Redisson's readLock()).
func (m *Mutex) Read() *ReadLock { return &m.read }

// Write returns the lock's write half (Redisson's writeLock()).
func (m *Mutex) Write() *WriteLock { return &m.write }

// ReadLock is the shared half of a Mutex: many owners may hold it at once,
// while nobody holds the write lock. Get it with Mutex.Read.
type ReadLock struct {
	l lockcore.Lock
	n *names
}

// WriteLock is the exclusive half of a Mutex: one owner holds it, and no
// other owner reads meanwhile. Get it with Mutex.Write.
type WriteLock struct {
	l lockcore.Lock
	n *names
}

// ---- read lock ----

// Lock waits until the read lock is acquired or ctx ends. The hold has no
// fixed lease: the Client's watchdog keeps it until Unlock. On failure Lock
// returns ctx's error (errors.Is works) and leaves nothing held.
func (r *ReadLock) Lock(ctx context.Context) error {
	_, err := r.acquire(ctx, 0, 0, true)
	return err
}

// LockLease is Lock with a fixed lease: the hold ends by itself when lease
// has passed, and is never renewed. lease must be at least a millisecond.
func (r *ReadLock) LockLease(ctx context.Context, lease time.Duration) error {
	if lease < time.Millisecond {
		return invalid("lease %v must be at least 1ms", lease)
	}
	_, err := r.acquire(ctx, lease, 0, true)
	return err
}

// TryLock tries to acquire the read lock for up to wait (0: a single
// attempt, with no subscription) and reports whether it did. A lease of 0
// means a watchdog hold; otherwise the hold ends by itself after lease. A
// lock still write-locked by another owner when wait has passed is
// (false, nil); if ctx ends first, TryLock returns ctx's error.
func (r *ReadLock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	if err := checkTry(wait, lease); err != nil {
		return false, err
	}
	return r.acquire(ctx, lease, wait, false)
}

func (r *ReadLock) acquire(ctx context.Context, lease, maxWait time.Duration, forever bool) (bool, error) {
	if err := r.l.Ready(); err != nil {
		return false, err
	}
	owner, err := r.l.C.Owner(ctx)
	if err != nil {
		return false, err
	}
	// A reader never queues behind this process's parked waiters: they may
	// be writers waiting for the last reader, while this reader could enter
	// at once. It always asks the server first.
	return acquire(ctx, &r.l, r.n.channel, false, forever, maxWait, func(ctx context.Context) (bool, time.Duration, error) {
		return r.try(ctx, owner, lease)
	})
}

// try runs the read acquire script once.
func (r *ReadLock) try(ctx context.Context, owner string, lease time.Duration) (bool, time.Duration, error) {
	leaseArg := leaseOrWatchdog(&r.l, lease)
	timeouts := r.n.timeouts(owner)
	ok, retryIn, err := r.l.Attempt(ctx, owner, lease,
		func(ctx context.Context, exec lockcore.Exec) rueidis.RedisResult {
			return exec(ctx, lua.RWReadAcquire(), []string{r.n.name, timeouts},
				[]string{lockcore.MS(leaseArg), owner, owner + ":write"})
		},
		parseAcquire,
		func(ctx context.Context, expected int) error {
			pub, err := r.l.C.PublishCommand(ctx)
			if err != nil {
				return err
			}
			return lockcore.Done(lua.RWUndoRead().Exec(ctx, r.l.C.Redis(), []string{r.n.name, r.n.channel, timeouts, r.n.prefix},
				[]string{"0", owner, strconv.Itoa(expected), pub}))
		})
	if ok && waiting.has(writeWait{r.l.C, r.n.name, owner}) {
		// Another goroutine of this owner waits for the write lock: it
		// would now wait for this very hold. Wake it; its next attempt
		// fails with ErrUpgrade.
		if sharded, err := r.l.C.Sharded(ctx); err == nil {
			r.l.C.PubSub().WakeAll(r.n.channel, sharded)
		}
	}
	return ok, retryIn, err
}

// Unlock releases one read hold of the calling owner, and deletes that
// hold's timeout key. When other holds remain, the lock's TTL becomes the
// longest remaining lease among all readers' holds; when none remains, the
// lock is released and one waiter per process is woken (Redisson's "0").
// It returns an error wrapping ErrNotHeld when the owner holds no read
// hold, including when it was lost.
//
// One Unlock is one logical unlock: when no reply comes back it resends
// the same request, for up to 5 s while ctx lives, and the server applies
// it at most once. With interlock.WithReplicaAcks, a release too few
// replicas acknowledged still counts, and the error wraps
// interlock.ErrReplication. After the Client's max hold time
// (interlock.WithMaxHold) ended the hold, the error also wraps
// ErrLockLost and interlock.ErrMaxHold when the key is gone.
func (r *ReadLock) Unlock(ctx context.Context) error {
	if err := r.l.Ready(); err != nil {
		return err
	}
	owner, err := r.l.C.Owner(ctx)
	if err != nil {
		return err
	}
	timeouts := r.n.timeouts(owner)
	_, err = r.l.Unlock(ctx, owner, func(ctx context.Context, exec lockcore.Exec, latch string, _ time.Duration, pub string) rueidis.RedisResult {
		return exec(ctx, lua.RWReadUnlock(),
			[]string{r.n.name, r.n.channel, timeouts, r.n.prefix, latch},
			[]string{"0", owner, pub, lockcore.MS(lockcore.LatchTTL)})
	})
	return err
}

// ForceUnlock deletes the lock if it is in read mode, whoever reads it,
// wakes one waiter per process, and reports whether it did. A lock in
// write mode is left alone (false). Holds of this Client on the deleted
// lock are lost: their guards are cancelled with ErrLockLost.
func (r *ReadLock) ForceUnlock(ctx context.Context) (bool, error) {
	return forceUnlock(ctx, &r.l, r.n, "read", "0")
}

// IsLocked reports whether anyone holds the read lock: the lock is in read
// mode, or its writer also holds read holds.
func (r *ReadLock) IsLocked(ctx context.Context) (bool, error) {
	if r.l.Err != nil {
		return false, r.l.Err
	}
	n, err := lua.RWReadIsLocked().Exec(ctx, r.l.C.Redis(), []string{r.n.name}, nil).AsInt64()
	if err != nil {
		return false, r.l.OpErr("is locked", err)
	}
	return n == 1, nil
}

// IsHeld reports whether the calling owner holds the read lock.
func (r *ReadLock) IsHeld(ctx context.Context) (bool, error) {
	n, err := r.HoldCount(ctx)
	return n > 0, err
}

// HoldCount returns how many read holds the calling owner has, as the
// server counts them (0 when it holds none).
func (r *ReadLock) HoldCount(ctx context.Context) (int, error) {
	return r.l.HoldCount(ctx, "")
}

// TTL returns how long the lock (read or write: it is one key) has left
// before it expires: 0 when it is not locked, a negative duration when it
// has no expiry.
func (r *ReadLock) TTL(ctx context.Context) (time.Duration, error) {
	return r.l.TTL(ctx)
}

// Guard returns a context derived from ctx that is cancelled when the
// calling owner's read holds end: with cause ErrLockLost when they are
// lost, with cause context.Canceled when Unlock releases the last one. If
// the owner holds no read hold, the context is already cancelled with a
// cause wrapping ErrNotHeld. A hold can be lost at any moment; the guard
// learns of it at the next renewal at the latest.
func (r *ReadLock) Guard(ctx context.Context) context.Context {
	return r.l.Guard(ctx, "")
}

// Remaining returns how long the calling owner's read holds is still
// certainly valid: the lease set by the last successful acquisition or
// renewal, counted from when that request was sent (on the monotonic
// clock), minus the time since. It is 0 when the owner holds nothing here,
// or its hold was lost, ended by the Client's max hold time, or expired.
// It sends nothing and costs a map lookup, so call it before each step of
// protected work: go on only while it exceeds what the step may take. It
// says nothing about a pause that happens after it returns; fence writes
// where that matters.
func (r *ReadLock) Remaining(ctx context.Context) time.Duration {
	return r.l.Remaining(ctx, "")
}

// ---- write lock ----

// Lock waits until the write lock is acquired or ctx ends. The hold has no
// fixed lease: the Client's watchdog keeps it until Unlock. An owner that
// holds the read lock but not the write lock gets ErrUpgrade at once. On
// any other failure Lock returns ctx's error and leaves nothing held.
func (w *WriteLock) Lock(ctx context.Context) error {
	_, err := w.acquire(ctx, 0, 0, true)
	return err
}

// LockLease is Lock with a fixed lease: the hold ends by itself when lease
// has passed, and is never renewed. lease must be at least a millisecond.
// A re-entry adds its lease to the lock's remaining TTL, as in Redisson.
func (w *WriteLock) LockLease(ctx context.Context, lease time.Duration) error {
	if lease < time.Millisecond {
		return invalid("lease %v must be at least 1ms", lease)
	}
	_, err := w.acquire(ctx, lease, 0, true)
	return err
}

// TryLock tries to acquire the write lock for up to wait (0: a single
// attempt, with no subscription) and reports whether it did. A lease of 0
// means a watchdog hold. A lock still held by others when wait has passed
// is (false, nil); if ctx ends first, TryLock returns ctx's error; an owner
// that holds only the read lock gets ErrUpgrade at once.
func (w *WriteLock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	if err := checkTry(wait, lease); err != nil {
		return false, err
	}
	return w.acquire(ctx, lease, wait, false)
}

func (w *WriteLock) acquire(ctx context.Context, lease, maxWait time.Duration, forever bool) (bool, error) {
	if err := w.l.Ready(); err != nil {
		return false, err
	}
	owner, err := w.l.C.Owner(ctx)
	if err != nil {
		return false, err
	}
	writer := owner + ":write"
	if err := w.upgrade(owner, writer); err != nil {
		return false, err
	}
	// A writer that does not hold the lock queues behind this process's
	// parked waiters: it would not get in before them anyway, and the
	// release that wakes them wakes it in its turn. Readers never queue, so
	// the waiters ahead of it are writers, or readers that a write release
	// wakes all at once.
	queue := w.l.Holds(writer) == 0
	if forever || maxWait > 0 {
		k := writeWait{w.l.C, w.n.name, owner}
		waiting.add(k, 1)
		defer waiting.add(k, -1)
	}
	return acquire(ctx, &w.l, w.n.channel, queue, forever, maxWait, func(ctx context.Context) (bool, time.Duration, error) {
		// Checked again on every attempt: another goroutine acting for the
		// same owner may have taken the read lock meanwhile.
		if err := w.upgrade(owner, writer); err != nil {
			return false, 0, err
		}
		return w.try(ctx, writer, lease)
	})
}

// upgrade returns ErrUpgrade when this Client records read holds of owner
// on the lock (renewal.Entry.Holds counts none whose leases all ran out)
// but no write hold.
func (w *WriteLock) upgrade(owner, writer string) error {
	if w.l.Holds(owner) > 0 && w.l.Holds(writer) == 0 {
		return fmt.Errorf("%w: %s", ErrUpgrade, w.n.name)
	}
	return nil
}

// try runs the write acquire script once.
func (w *WriteLock) try(ctx context.Context, writer string, lease time.Duration) (bool, time.Duration, error) {
	leaseArg := leaseOrWatchdog(&w.l, lease)
	return w.l.Attempt(ctx, writer, lease,
		func(ctx context.Context, exec lockcore.Exec) rueidis.RedisResult {
			return exec(ctx, lua.RWWriteAcquire(), []string{w.n.name}, []string{lockcore.MS(leaseArg), writer})
		},
		parseAcquire,
		func(ctx context.Context, expected int) error {
			pub, err := w.l.C.PublishCommand(ctx)
			if err != nil {
				return err
			}
			return lockcore.Done(lua.RWUndoWrite().Exec(ctx, w.l.C.Redis(), []string{w.n.name, w.n.channel},
				[]string{"1", writer, strconv.Itoa(expected), pub}))
		})
}

// Unlock releases one write hold of the calling owner. On the last one the
// lock is released and every waiter in every process is woken (Redisson's
// "1"), unless the owner also holds read holds: then the lock becomes a
// read lock (a downgrade), which Redisson announces to nobody; this
// Client's own waiters are woken, others notice when their wait bound ends.
// It returns an error wrapping ErrNotHeld when the owner holds no write
// hold, including when it was lost.
//
// One Unlock is one logical unlock: when no reply comes back it resends
// the same request, for up to 5 s while ctx lives, and the server applies
// it at most once. With interlock.WithReplicaAcks, a release too few
// replicas acknowledged still counts, and the error wraps
// interlock.ErrReplication. After the Client's max hold time
// (interlock.WithMaxHold) ended the hold, the error also wraps
// ErrLockLost and interlock.ErrMaxHold when the key is gone.
func (w *WriteLock) Unlock(ctx context.Context) error {
	if err := w.l.Ready(); err != nil {
		return err
	}
	owner, err := w.l.C.Owner(ctx)
	if err != nil {
		return err
	}
	writer := owner + ":write"
	n, err := w.l.Unlock(ctx, writer, func(ctx context.Context, exec lockcore.Exec, latch string, lease time.Duration, pub string) rueidis.RedisResult {
		return exec(ctx, lua.RWWriteUnlock(),
			[]string{w.n.name, w.n.channel, latch},
			[]string{"1", lockcore.MS(lease), writer, pub, lockcore.MS(lockcore.LatchTTL)})
	})
	if (err == nil || errors.Is(err, interlock.ErrReplication)) && n == 1 && w.l.Holds(owner) > 0 {
		// A downgrade: readers may enter now, and nothing was published.
		if sharded, err := w.l.C.Sharded(ctx); err == nil {
			w.l.C.PubSub().WakeAll(w.n.channel, sharded)
		}
	}
	return err
}

// ForceUnlock deletes the lock if it is in write mode, whoever writes it,
// wakes every waiter in every process, and reports whether it did. A lock
// in read mode is left alone (false). Holds of this Client on the deleted
// lock (the writer's, and its read holds) are lost: their guards are
// cancelled with ErrLockLost.
func (w *WriteLock) ForceUnlock(ctx context.Context) (bool, error) {
	return forceUnlock(ctx, &w.l, w.n, "write", "1")
}

// IsLocked reports whether anyone holds the write lock (the lock is in
// write mode).
func (w *WriteLock) IsLocked(ctx context.Context) (bool, error) {
	if w.l.Err != nil {
		return false, w.l.Err
	}
	rc := w.l.C.Redis()
	mode, err := rc.Do(ctx, rc.B().Hget().Key(w.n.name).Field("mode").Build()).ToString()
	switch {
	case rueidis.IsRedisNil(err):
		return false, nil
	case err != nil:
		return false, w.l.OpErr("is locked", err)
	}
	return mode == "write", nil
}

// IsHeld reports whether the calling owner holds the write lock.
func (w *WriteLock) IsHeld(ctx context.Context) (bool, error) {
	n, err := w.HoldCount(ctx)
	return n > 0, err
}

// HoldCount returns how many write holds the calling owner has, as the
// server counts them (0 when it holds none).
func (w *WriteLock) HoldCount(ctx context.Context) (int, error) {
	return w.l.HoldCount(ctx, ":write")
}

// TTL returns how long the lock (read or write: it is one key) has left
// before it expires: 0 when it is not locked, a negative duration when it
// has no expiry.
func (w *WriteLock) TTL(ctx context.Context) (time.Duration, error) {
	return w.l.TTL(ctx)
}

// Guard returns a context derived from ctx that is cancelled when the
// calling owner's write holds end: with cause ErrLockLost when they are
// lost, with cause context.Canceled when Unlock releases the last one
// (also by a downgrade). If the owner holds no write hold, the context is
// already cancelled with a cause wrapping ErrNotHeld. A hold can be lost at
// any moment; the guard learns of it at the next renewal at the latest.
func (w *WriteLock) Guard(ctx context.Context) context.Context {
	return w.l.Guard(ctx, ":write")
}

// Remaining returns how long the calling owner's write holds is still
// certainly valid: the lease set by the last successful acquisition or
// renewal, counted from when that request was sent (on the monotonic
// clock), minus the time since. It is 0 when the owner holds nothing here,
// or its hold was lost, ended by the Client's max hold time, or expired.
// It sends nothing and costs a map lookup, so call it before each step of
// protected work: go on only while it exceeds what the step may take. It
// says nothing about a pause that happens after it returns; fence writes
// where that matters.
func (w *WriteLock) Remaining(ctx context.Context) time.Duration {
	return w.l.Remaining(ctx, ":write")
}

// ---- shared ----

// writeWait names the write acquisitions of one owner on one lock of one
// Client.
type writeWait struct {
	c           *interlock.Client
	name, owner string
}

// waiting counts the write acquisitions that may wait, so that a read
// acquisition by the same owner (from another goroutine, with
// interlock.WithOwner) can wake them to fail with ErrUpgrade rather than
// wait for their own read hold. Keyed by Client, so Clients share nothing.
var waiting = waitCounts{m: make(map[writeWait]int)}

type waitCounts struct {
	mu sync.Mutex
	m  map[writeWait]int
}

func (w *waitCounts) add(k writeWait, d int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m[k] += d; w.m[k] <= 0 {
		delete(w.m, k)
	}
}

func (w *waitCounts) has(k writeWait) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.m[k] > 0
}

// acquire runs the shared waiting algorithm (internal/wait) on the lock's
// channel, which readers and writers share.
func acquire(ctx context.Context, l *lockcore.Lock, channel string, queue, forever bool, maxWait time.Duration, try wait.Attempt) (bool, error) {
	spec := wait.Spec{
		Hub:      l.C.PubSub(),
		Channel:  channel,
		Forever:  forever,
		Deadline: time.Now().Add(maxWait),
		Queue:    queue,
		Try:      try,
	}
	if forever || maxWait > 0 {
		var err error
		if spec.Sharded, err = l.C.Sharded(ctx); err != nil {
			return false, l.OpErr("acquire", err)
		}
	}
	ok, err := wait.Acquire(ctx, spec)
	switch {
	case errors.Is(err, ErrUpgrade):
		return false, err
	case err != nil:
		return false, l.OpErr("acquire", err)
	}
	return ok, nil
}

// parseAcquire reads an acquire script's reply: nil is acquired, a number
// the lock's PTTL.
func parseAcquire(r rueidis.RedisResult) (bool, time.Duration, error) {
	ttl, err := r.AsInt64()
	if rueidis.IsRedisNil(err) {
		return true, 0, nil
	}
	return false, lockcore.Millis(ttl), err
}

func leaseOrWatchdog(l *lockcore.Lock, lease time.Duration) time.Duration {
	if lease == 0 {
		return l.C.WatchdogTimeout()
	}
	return lease
}

// forceUnlock runs the force unlock script for one mode and, when it
// deleted the lock, forgets this Client's holds on it.
func forceUnlock(ctx context.Context, l *lockcore.Lock, n *names, mode, message string) (bool, error) {
	if err := l.Ready(); err != nil {
		return false, err
	}
	pub, err := l.C.PublishCommand(ctx)
	if err != nil {
		return false, l.OpErr("force unlock", err)
	}
	deleted, err := lua.RWForceUnlock().Exec(ctx, l.C.Redis(), []string{n.name, n.channel}, []string{message, pub, mode}).AsInt64()
	if err != nil {
		return false, l.OpErr("force unlock", err)
	}
	if deleted == 1 {
		l.C.Renewal().Drop(n.name, ErrLockLost)
	}
	return deleted == 1, nil
}

func checkTry(wait, lease time.Duration) error {
	if wait < 0 || lease < 0 || (lease > 0 && lease < time.Millisecond) {
		return invalid("wait %v and lease %v must not be negative, and a lease at least 1ms", wait, lease)
	}
	return nil
}

func invalid(format string, args ...any) error { return readKind.Invalid(format, args...) }
