// Package rlock is a reentrant distributed lock that is, on the wire,
// Redisson's RLock: a Go process and a Java process that lock the same name
// exclude each other, wait for each other and wake each other up.
//
// # Data
//
// The lock is a Redis hash named after the lock. Its one field is the
// holder's owner string, "<client id>:<owner id>", and its value the hold
// count. The TTL of the hash is the holder's lease. A release publishes "0"
// on redisson_lock__channel:{name} (SPUBLISH on a cluster in sharded mode).
//
// # Owners and reentrancy
//
// The owner is the calling goroutine, unless the context carries an owner
// from interlock.WithOwner. An owner that already holds the lock acquires
// it again at once, and must unlock as many times as it locked. Every
// acquisition resets the TTL to its lease, as in Redisson. Work that moves
// to another goroutine must carry its owner in the context; a goroutine
// that did not lock gets ErrNotHeld from Unlock.
//
// # Leases and the watchdog
//
// Lock, and TryLock with a lease of 0, take a watchdog hold: the lease is
// the Client's watchdog timeout (30s by default) and the Client renews it
// every third of that until Unlock. LockLease, and TryLock with a lease,
// take a hold that ends by itself when the lease has passed.
//
// # Waiting
//
// A waiter tries once; subscribes to the lock's channel and waits for the
// server's confirmation; tries again; then waits for a release message, for
// the holder's remaining TTL (an expiry publishes nothing), or for its
// context. All waiters of a lock in one process share one subscription. A
// release wakes one waiter per process; there is no FIFO order (see
// fairlock for that).
//
// # Guarantees and limits
//
// While the Redis primary keeps the key, at most one owner holds the lock.
// A hold can nevertheless be lost: a process paused for longer than its
// lease, a partition longer than the watchdog timeout, or a failover to a
// replica that had not received the key. Guard reports a loss as soon as
// this process learns of it, which is at the next renewal at the latest,
// not before a paused process runs again. Where a stale holder must never
// write, use a fenced lock and have the resource check its token.
//
// Remaining tells the holder how long its hold is still certainly valid:
// check it before each protected step. interlock.WithReplicaAcks narrows
// the failover case (an acquisition too few replicas acknowledged is taken
// back and fails), and interlock.WithMaxHold bounds how long a hung holder
// keeps the lock.
//
// Bad arguments (an empty name, a name whose derived keys would land in
// another cluster slot, negative durations, a nil client) give an error
// wrapping interlock.ErrInvalid, and nothing is sent.
package rlock
