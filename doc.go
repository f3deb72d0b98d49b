// Package interlock is the Client every interlock synchronizer runs on, and
// the API they share.
//
// interlock's synchronizers are Java Redisson's: the same Redis keys, hash
// fields, scripts, pub/sub channels and messages. A Go service and a Java
// service that name the same lock, semaphore or latch exclude each other,
// wait for each other and wake each other up. The kinds live in their own
// packages:
//
//	rlock         reentrant lock (Redisson RLock)
//	fairlock      fair FIFO lock (Redisson RFairLock)
//	rwlock        read/write lock (Redisson RReadWriteLock)
//	fenced        fenced lock with monotonic tokens (Redisson RFencedLock)
//	nonreentrant  locks that refuse re-entry (RNonReentrantLock, RNonReentrantFairLock)
//	spin          lock whose waiters poll instead of subscribing (RSpinLock)
//	multilock     several locks held as one (RedissonMultiLock, RedissonRedLock)
//	semaphore     counting semaphores (RSemaphore, RPermitExpirableSemaphore)
//	latch         count-down latch (RCountDownLatch)
//
// Each lock has the methods of Locker. A Client wraps a rueidis.Client that the
// caller creates and closes:
//
//	rc, _ := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:6379"}})
//	defer rc.Close()
//	c, _ := interlock.New(rc)
//	defer c.Close()
//
//	m := rlock.New(c, "orders:42")
//	if err := m.Lock(ctx); err != nil { ... }
//	defer func() {
//		if err := m.Unlock(ctx); err != nil { ... } // e.g. ErrNotHeld: the hold was lost
//	}()
//
// # What a Client shares
//
// One Client stands for one RedissonClient: one random client id (ID), the
// first half of every owner string; one renewal goroutine that keeps every
// watchdog hold alive in batches grouped by cluster slot; one pub/sub Hub
// through which all waiters of a channel share one subscription; one
// goroutine that finishes clean-ups; and one timer that deletes the unlock
// latches no script has taken along (they ride, batched, on the Client's
// next script on their slot). Nothing else runs in the background: no
// goroutine or timer per lock, no subscription per waiter. Stats counts
// what it keeps.
//
// # Owners
//
// An owner is "<client id>:<owner id>". The owner id is the calling
// goroutine's id, so nested calls on one goroutine re-enter a lock the way
// nested calls on one Java thread do, unless the context carries an
// explicit owner (WithOwner), which always wins. A goroutine that did not
// lock gets ErrNotHeld from Unlock, and the hold stays.
//
// To lock on one goroutine and unlock on another (a worker pool, errgroup,
// a callback), take a Hold: Lock(ctx, m), LockLease or TryLock acquire m
// for the owner ctx names, exactly as m.Lock would (the owner string on the
// server is the acquiring goroutine's), and the Hold carries that owner:
// its Unlock, Guard and Remaining act for it from any goroutine. Hold.Unlock
// releases once; a second call releases nothing.
//
//	h, err := interlock.Lock(ctx, m)
//	if err != nil { ... }
//	go func() {
//		work(h.Guard(ctx))
//		if err := h.Unlock(ctx); err != nil { ... }
//	}()
//
// Where a whole piece of work moves between goroutines and makes many
// calls, give its context an owner instead: every call made with
// WithOwner(ctx, NewOwnerID()) acts for that one owner, wherever it runs.
//
// # Holds
//
// A Locker's Lock, and TryLock with a lease of 0, take a watchdog hold: its
// lease is the watchdog timeout (WithWatchdogTimeout, 30s by default),
// renewed every third of it until Unlock. LockLease, and TryLock with a
// lease, take a hold that ends by itself and is never renewed. Every acquisition resets
// the lock's TTL to its own lease, as in Redisson.
//
// A job that finds it needs more time than its lease asks for it with
// Extend, before the lease runs out: one idempotent script sets the lock's
// TTL to the new lease (from now, and shorter is allowed) only if the
// owner still holds it, as Redisson's renewal does, and Remaining and the
// Guard's deadline follow; a hold that is gone fails with ErrNotHeld and is
// not taken again. Every hold of the owner on that lock gets the new lease,
// since the lock has one TTL. A watchdog hold needs no Extend: one renews
// it at once with the watchdog timeout, confirming it is still held.
//
// A hold can be lost at any moment: a pause longer than the lease, a
// partition longer than the watchdog timeout, a failover to a replica that
// had not received the key. Guard's context ends when this process learns
// of it, at the next renewal at the latest and never while the process is
// paused; Remaining tells how long the hold is still certainly valid (the
// lease set by the last acquisition or renewal, counted on the monotonic
// clock from when that request was sent), so check it before each
// protected step. Where a stale holder must never write, use a fenced lock
// and have the resource check its token.
//
// An acquisition whose reply is lost (its context ended, the connection
// broke after the write) may have succeeded on the server: the Client
// takes it back in the background, within the lease, and the caller still
// returns by its deadline. One Unlock is one logical unlock: when no reply
// comes back it resends the same request, under the same latch, for up to
// 5s whatever its context (see Locker.Unlock), and the server applies it
// at most once.
//
// Two options harden holds beyond Redisson's defaults; both are off by
// default and change nothing on the wire when off. WithReplicaAcks (safe
// mode) follows every acquire and unlock with WAIT and takes back an
// acquisition too few replicas acknowledged (ErrReplication); a release
// still counts. It narrows, and does not close, the window in which a
// failover loses a lock. WithMaxHold stops renewing a watchdog hold a fixed
// time after it was acquired and ends its guards (ErrLockLost and
// ErrMaxHold), so a hung worker cannot keep a lock forever; a later Unlock
// reports both when the key is gone. WithReplicaSync, off too, is
// Redisson's own default outside single-server configs: WAIT for every
// replica the master has, failing only when none acknowledged.
//
// # Hand-off
//
// When an Unlock releases its owner's last hold of a reentrant, fenced,
// write or fair lock while another owner of the same Client waits for it,
// the unlock script passes the lock to that waiter in the same round trip:
// the waiter holds it (one hold, its own lease, a new fencing token) as if
// its own acquire had run, with no DEL and no message, so Java clients see
// the lock held throughout. A fair lock is passed only to the waiter at
// the head of its queue. The waiters of one Client are served in the
// order they first waited. After 8 hand-offs in a row, or 10ms after the
// first of them, the next hand-off releases the lock for real and
// publishes its message if another process subscribes to the lock's
// channel (one of its waiters waits), and this Client's first waiter
// holds off 5ms before it tries, so that the other process's waiter gets
// the lock. A fair lock needs no such runs: its queue decides. A hand-off
// whose reply is lost is taken back like a lost acquisition; the waiter
// goes on waiting. Safe and replica-sync modes never hand off.
// Stats.Transfers counts hand-offs; an Observer hears them as releases
// with OutcomeTransferred.
//
// # Errors
//
// Every call that can block takes a context; when it ends, its error is
// returned (errors.Is works). Every other failure of a synchronizer's
// method is an *Error naming the Kind, the Op (the values Events carry)
// and the object, wrapping ErrNotHeld, ErrReplication, a kind's own
// sentinel (rwlock.ErrUpgrade, fenced.ErrStale, ...), a Redis error and so
// on, whose text it keeps. Bad arguments (an empty name, a name whose
// derived keys would land in another cluster slot, negative durations, a
// nil client) are such Errors too, wrapping ErrInvalid, found before
// anything is sent. So is a key that holds data of another kind: another
// Redis type (a lock's hash under a semaphore's name, an application's
// list), a count that is no integer, a hash whose fields are no owners'
// hold counts; the error names the key and what it holds, and the key is
// left as it is. (Like Redisson's, a read/write lock takes a hash without
// a "mode" field for a free lock, and a fair lock's TryLock without a
// wait reads only busy from any hash.) A multi-lock returns a member's
// error as it is, or an Error of its own wrapping several members'
// errors. Once the Client is
// closed, acquisitions, Unlock and ForceUnlock return ErrClosed. The calls
// that concern no synchronizer (New, OwnerID, Client.Owner, ClockSkew)
// fail with an Error of KindClient. Remote state never causes a panic.
//
// A hold that ends without its owner's release is lost: its guards end, and
// an Observer hears OpLost, with a cause that wraps ErrLockLost and says
// why with exactly one of ErrLeaseExpired (an explicit lease ran out),
// ErrNotRenewed (no renewal confirmed for a watchdog timeout), ErrKeyGone
// (deleted on the server, or taken by another owner), ErrForceUnlocked
// (ForceUnlock through this Client) and ErrMaxHold (WithMaxHold); test them
// with errors.Is. A lost semaphore permit's cause wraps
// semaphore.ErrPermitLost, which wraps ErrLockLost. A multi-lock's guard
// names the member that was lost, as an *Error of the member's Kind and
// name with Op OpLost.
//
// # Observing
//
// WithObserver hears an Event for everything a Client's synchronizers do:
// each acquisition (kind, name, outcome, wait, attempts) and release
// (outcome, hold time), each renewal tick, lost hold, unlock resend, safe
// mode refusal, undo try, and pub/sub failure or reconnection. Events about
// a caller's operation come with the caller's context, so a tracing
// Observer finds its span there. The Observer is called synchronously
// after the work and must not block; a Client without one builds no event
// and takes no extra clock reading. WithLogger is such an Observer, which
// logs only failures and losses. Stats counts holds, channels, pending
// clean-ups and waiters; OldestHolds says how long the oldest holds have
// been held, the sign of a stuck holder. docs/operations.md lists the
// events.
//
// # Compatibility
//
// The protocol is that of Redisson 3.24 to 4.7 (unlock latch, PUBLISH or
// SPUBLISH passed to scripts, 3.44+ batched renewal); docs/protocol.md says
// what is implemented.
package interlock
