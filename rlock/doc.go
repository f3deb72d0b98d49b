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
// acquisition resets the TTL to its lease, as in Redisson. A goroutine
// that did not lock gets interlock.ErrNotHeld from Unlock: to unlock elsewhere, take
// an interlock.Hold (interlock.Lock(ctx, m)), or carry the owner in the
// context (see "Owners" in package interlock).
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
// Holds, leases, Guard, Remaining and errors are as the interlock package
// documentation says ("Holds", "Errors"). Unlocking the last hold wakes
// waiters here and in Java; ForceUnlock wakes them all.
package rlock
