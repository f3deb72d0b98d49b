// Package interlock holds the Client that every interlock lock runs on.
//
// interlock's locks are Java Redisson's locks: the same Redis keys, hash
// fields, scripts, pub/sub channels and messages. A Go service and a Java
// service that name the same lock exclude each other, wait for each other
// and wake each other up. The lock kinds live in their own packages:
//
//	rlock     reentrant lock (Redisson RLock)
//	fairlock  fair FIFO lock (Redisson RFairLock)
//	rwlock    read/write lock (Redisson RReadWriteLock)
//	fenced    fenced lock with monotonic tokens (Redisson RFencedLock)
//
// A Client wraps a rueidis.Client that the caller creates and closes:
//
//	rc, _ := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:6379"}})
//	defer rc.Close()
//	c, _ := interlock.New(rc)
//	defer c.Close()
//
//	m := rlock.New(c, "orders:42")
//	if err := m.Lock(ctx); err != nil { ... }
//	defer m.Unlock(ctx)
//
// # What a Client shares
//
// One Client stands for one RedissonClient: it has one random client id
// (ID), which is the first half of every owner string; one renewal
// goroutine that keeps every watchdog hold alive in batches grouped by
// cluster slot; one pub/sub Hub through which all waiters of a channel
// share one subscription; and one goroutine that deletes unlock latches.
// Nothing else runs in the background: no goroutine or timer per lock, no
// subscription per waiter.
//
// # Owners
//
// An owner is "<client id>:<owner id>". The owner id is the calling
// goroutine's id, so nested calls on one goroutine re-enter a lock the way
// nested calls on one Java thread do, unless the context carries an explicit
// owner (WithOwner), which always wins. Use WithOwner when the work that
// holds a lock moves between goroutines.
//
// # Errors
//
// Every call that can block takes a context; when the context ends, its
// error is returned (errors.Is works). Bad arguments give errors that wrap
// ErrInvalid before anything is sent. Each lock package has its own
// sentinels (rlock.ErrNotHeld, rlock.ErrLockLost). Remote state never
// causes a panic.
//
// # Failover, hung workers and remaining validity
//
// Three Client options harden locks beyond Redisson's defaults; all are
// off by default and change nothing on the wire when off.
// WithReplicaAcks (safe mode) follows every acquire and unlock with WAIT
// on the same connection and takes back an acquisition too few replicas
// acknowledged (ErrReplication); it narrows, and does not close, the
// window in which a failover loses a lock. WithMaxHold stops renewing a
// watchdog hold a fixed time after it was acquired and cancels its guards
// (ErrMaxHold), so a hung worker cannot keep a lock forever. Every lock
// kind's Remaining reports how long the caller's hold is still certainly
// valid, the check to make before each protected step.
//
// # Compatibility
//
// The protocol is that of Redisson 3.24 to 4.7 (unlock latch, PUBLISH or
// SPUBLISH passed to scripts, 3.44+ batched renewal); docs/protocol.md says
// what is implemented.
package interlock
