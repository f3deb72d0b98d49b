// Package rwlock is a distributed read/write lock that is, on the wire,
// Redisson's RReadWriteLock: Go and Java processes that use the same name
// share it, exclude each other and wake each other up.
//
//	rw := rwlock.New(c, "doc:9")
//
//	// Readers, on any number of goroutines and processes at once:
//	if err := rw.Read().Lock(ctx); err != nil { ... }
//	... read ...
//	if err := rw.Read().Unlock(ctx); err != nil { ... }
//
//	// A writer, on a goroutine of its own, waits until nobody reads:
//	if err := rw.Write().Lock(ctx); err != nil { ... }
//	... write ...
//	if err := rw.Write().Unlock(ctx); err != nil { ... }
//
// One owner cannot take the write lock while it holds the read lock (see
// "Policy"); a writer may take the read lock and then release the write
// lock, a downgrade.
//
// # Policy
//
// The lock can be held by any number of readers or by a single writer.
// Unlike sync.RWMutex, and like Redisson, waiting writers do not block new
// readers: while the lock is in read mode every reader gets in at once,
// so a steady stream of overlapping readers can keep a writer out
// indefinitely. The lock is not fair: when it becomes free, whoever asks
// first gets it.
//
// Both halves are reentrant per owner, and must be unlocked as many times
// as they were locked. A read hold and a write hold are counted
// separately.
//
// The owner that holds the write lock may also take the read lock, and
// may then release the write lock while keeping its read holds: a
// downgrade. The lock then stays in read mode, other readers may enter,
// and no writer gets in between. Redisson announces a downgrade to
// nobody; this Client wakes its own waiting readers at once, readers in
// other processes notice when their wait bound (the TTL they were told)
// ends.
//
// An owner that holds the read lock cannot take the write lock (an
// upgrade): it would wait for its own read holds, which is what Redisson
// does until its wait ends. Here every write acquisition of an owner for
// which this Client records a live read hold and no write hold fails at
// once with ErrUpgrade, before anything is sent; and a write acquisition
// that is already waiting when another goroutine acting for the same
// owner takes the read lock is woken and fails with ErrUpgrade. Release
// the read holds first; then another writer may get in between.
//
// In the terminology of the Go memory model, and as long as no hold is
// lost (see below): every write Unlock synchronizes before every read or
// write acquisition that succeeds after it, and every read Unlock
// synchronizes before the next write acquisition that succeeds. "After" is
// the server's order: every acquisition and every release is one script
// run on the server that keeps all of the lock's keys.
//
// # Data
//
// The lock is a Redis hash named after the lock. Its field "mode" is
// "read" or "write"; each reader has a field "<client id>:<owner id>"
// with its read hold count, and the writer a field "<client id>:<owner
// id>:write" with its write hold count. Each read hold k of an owner also
// has a key "{name}:<owner>:rwlock_timeout:k" whose TTL is that hold's
// lease. The hash's TTL is the lease of the writer, or in read mode the
// longest remaining lease among all readers' holds: every read unlock
// recomputes it from the timeout keys, so releasing a long hold can
// shorten the lock's life, and readers whose timeout keys expired (dead
// processes) no longer count. A write re-entry adds its lease to the
// remaining TTL; a read acquisition only ever extends it. Java clients
// compute the same from the same keys, so Go readers keep theirs exactly
// as Java readers do.
//
// Releases are announced on redisson_rwlock:{name} (SPUBLISH on a cluster
// in sharded mode): "1" when the writer releases, which wakes every waiter
// in every process, and "0" when the last reader releases, which wakes one
// waiter per process.
//
// # Leases and the watchdog
//
// Watchdog holds (interlock's "Holds") are renewed in one batch: write
// holds like reentrant locks; read holds, in the same batched ticks, by Redisson 4.4+'s read
// renewal, which renews the hash and this Client's own timeout keys only.
//
// # Waiting
//
// A waiter tries once; subscribes to the lock's channel and waits for the
// server's confirmation; tries again; then waits for a release message,
// for the lock's remaining TTL (an expiry publishes nothing), or for its
// context. All waiters of a lock in one process share one subscription.
//
// Readers and writers wait differently in one process. A reader always
// asks the server first, even when other waiters of this process are
// parked: those may be writers waiting for the last reader to leave, while
// the reader may enter at once. A writer that does not already hold the
// lock queues behind the parked waiters of this process without asking:
// readers park only while a writer holds the lock, and a write release
// ("1") wakes all of them together with the writer; otherwise the waiters
// ahead are writers, and a last reader's "0" wakes the longest-waiting of
// them. A "1" is never missed by a waiter that was re-checking the lock
// when it arrived (its next wait returns at once), so no reader sleeps
// through the release meant for every reader.
//
// # Guarantees and limits
//
// While the Redis primary keeps the key, a writer excludes every other
// owner. Holds, Guard, Remaining and errors are as the interlock package
// documentation says ("Holds", "Errors"); a write Guard also ends, with
// context.Canceled, when its last write hold is released by a downgrade.
//
// # The two halves
//
// Both halves have interlock.Locker's methods and share one key, so their
// TTL is the lock's. The read half's IsLocked reports read mode, or a
// writer that also holds read holds; its ForceUnlock deletes the lock only
// in read mode (false otherwise) and wakes one waiter per process. The
// write half's IsLocked reports write mode; its ForceUnlock deletes the
// lock only in write mode and wakes every waiter in every process; either
// loses this Client's holds on the deleted lock. A read Unlock deletes that
// hold's timeout key; a write LockLease re-entry adds its lease to the
// remaining TTL, as in Redisson.
package rwlock
