// Package semaphore holds the two counting semaphores of Java Redisson, on
// the wire: Semaphore is RSemaphore and Expirable is
// RPermitExpirableSemaphore. A Go process and a Java process that open a
// semaphore of the same name (Redisson's getSemaphore(name) and
// getPermitExpirableSemaphore(name)) share its permits, wait for each
// other and wake each other up.
//
//	s := semaphore.New(c, "uploads")
//	s.TrySetPermits(ctx, 4)             // once, by whoever sets it up
//	if err := s.Acquire(ctx, 1); err != nil {
//		return err
//	}
//	defer s.Release(ctx, 1)
//
// # Data
//
// A semaphore called N is the Redis string N: the signed decimal count of
// free permits. An expirable semaphore adds the sorted set {N}:timeout,
// whose members are the acquired permits' ids and whose scores are their
// expiry times in epoch milliseconds. Both announce changes on
// redisson_sc:{N} (SPUBLISH on a cluster in sharded mode). For a name that
// contains "{", the braces are not added (N:timeout, redisson_sc:N), as in
// Redisson. A Semaphore and an Expirable of one name share
// the count and the channel, as in Redisson. docs/protocol.md lists every
// script and message.
//
// # Permits are a count
//
// A Semaphore records how many permits are free, never who took them.
// Release adds permits whoever calls it: a caller that never acquired may
// release, and a Release on a semaphore that does not exist creates it
// with that many permits, as Redisson's release does. ReleaseIfExists
// adds permits only to an existing semaphore (Redisson 4.1.0's
// releaseIfExists). AddPermits may take permits away and leave the count
// below zero; an acquisition of n then waits until releases bring it to
// n or more. The TTL that TrySetPermitsTTL gives the key is kept by
// acquisitions and releases and dropped by AddPermits and Drain.
//
// An Expirable's permits have ids: Acquire returns them and Release,
// TryRelease, UpdateLease, Extend and LeaseLeft take them. A PermitID is 16 random
// bytes, stored raw as Redisson stores them and shown as 32 lower-case hex
// characters, the string Java's API hands out and takes, so an id can
// travel between a Go and a Java process.
//
// # Waiting
//
// An acquisition tries once; subscribes to the channel and waits for the
// server's confirmation; tries again, so that a release between the first
// try and the subscription is not missed; then waits for a message, for
// 2s, or for its context, and tries again. All waiters of a channel in one
// Client share one subscription, and a Client's waiters are tried in the
// order they arrived. A message announcing n permits wakes at most n of
// them, one at a time, and a message of 0 or less wakes none: a release of
// one permit wakes one waiter, not all of them. A message is only a hint:
// the 2s re-poll, and a re-check after every reconnection, find permits
// whose message was lost. TryAcquire bounds all of it by its wait (0: a
// single attempt, with no subscription), and makes one last attempt at
// the deadline.
//
// # Leases
//
// Expirable.Acquire takes a lease for its permits:
//
//   - a positive lease (at least 1ms): the permits expire that long after
//     the acquisition, whatever happens to the holder;
//   - NoExpiry: they never expire (Redisson's lease of -1);
//   - 0: the watchdog holds them. They are acquired with the watchdog
//     timeout (interlock.WithWatchdogTimeout, 30s by default) and renewed
//     every third of it, in the Client's renewal tick, batched with its
//     lock renewals, until they are released. A holder that crashes stops
//     renewing, so its permits expire at most one watchdog timeout after
//     the last renewal; a live holder never loses them mid-job.
//
// Any other lease is rejected: in Redisson a lease of 0 or less makes a
// permit that has already expired. UpdateLease sets a new lease, from now,
// on a permit that has not expired; Extend does the same for a job that
// needs more time, failing with interlock.ErrNotHeld once the permit is
// gone, as a lock's Extend does.
//
// Redis never expires a permit by itself. An expired permit stays in the
// sorted set until the next client, Go or Java, runs a script that
// reclaims expired permits (every acquisition does, and Available,
// Permits, Acquired, UpdateLease and LeaseLeft); it then comes back as a
// free permit and its message wakes waiters. A waiter that finds no free
// permit is told when the nearest lease runs out, and waits at most that
// long, so it picks up an expired permit by itself.
//
// Guard's context ends when one of the permits it watches is lost, with a
// cause that wraps ErrPermitLost (itself wrapping interlock.ErrLockLost)
// and the reason: interlock.ErrLeaseExpired (its lease ran out),
// ErrNotRenewed (its watchdog renewal failed for a whole watchdog timeout),
// ErrKeyGone (its renewal found it released, reclaimed or deleted by
// another client), ErrForceUnlocked (this Client deleted the semaphore) or
// ErrMaxHold; or when it is released (context.Canceled). Remaining says how long a permit this Client holds
// is still certainly valid; it sends nothing. Both work for every lease.
//
// # Clocks
//
// Expiry times are computed on the acquirer's wall clock (now + lease),
// and a permit is reclaimed when it is behind the clock of whichever
// client next operates on the semaphore, as in Redisson: "now" is a script
// argument, never the server's time. A client whose clock runs ahead
// reclaims other clients' live permits early, and the semaphore then
// hands out more permits than it has; one whose clock runs behind keeps
// dead holders' permits out longer. Keep the clocks of every client of an
// expirable semaphore, Go and Java, synchronized (NTP) to well within the
// shortest lease.
//
// # Receipts
//
// Some scripts count: run twice, they take or give permits twice. Each
// such call from Go (acquisition attempts and releases of both kinds,
// ReleaseIfExists, both kinds' AddPermits, and the latch's CountDown)
// carries a receipt: a key interlock_receipt:{N}:<32 hex characters>,
// unique to the call and in N's cluster slot, which the script writes when
// it applies. A copy of the call that finds the receipt changes nothing
// and answers what the first one did, so the client may resend it after a
// connection error without counting twice. When an acquisition attempt's
// reply is lost (its context ended, the connection broke), the Client
// takes it back in the background under the same receipt: it returns the
// permits if the attempt took them, and otherwise leaves a receipt that
// makes a late copy of the attempt take nothing, even one that reaches
// Redis after the take-back on another connection. Once a call has its
// answer the Client deletes its receipt, in batches off the caller's path,
// so receipts do not pile up; one whose answer never came expires after
// 30s. Redisson has no receipts; Java never reads these keys, and a call
// whose receipt is left out runs exactly Redisson's script.
//
// TrySetPermits, TrySetPermitsTTL and Drain carry no receipt and are never
// resent: a resend would answer differently. When their reply is lost the
// caller gets the error and may read the count to learn what happened.
// Likewise, a Release or AddPermits whose context ends before its reply
// returns the context's error, and may or may not have been applied.
//
// # Safe mode
//
// With interlock.WithReplicaAcks, every acquisition attempt is followed by
// WAIT, and an attempt that fewer replicas acknowledged is taken back, as
// after a lost reply, and fails with an error wrapping
// interlock.ErrReplication. Releases, additions and queries are not
// followed by WAIT.
//
// # Errors
//
// Bad arguments are rejected before anything is sent, with errors
// wrapping interlock.ErrInvalid: a permit count below 1 for an acquisition or
// release, a negative count for TrySetPermits or SetPermits, a negative
// wait, a TTL or lease under 1ms (other than the leases 0 and NoExpiry), a
// malformed permit id, a bad name or a nil client. A key of N or
// {N}:timeout that holds another type of data (a lock's hash, say), or an
// N that is no integer, gives an error wrapping interlock.ErrInvalid too, naming the
// key and what it holds, and changes nothing (Expirable.AddPermits reads
// only N). Release, ReleaseIfExists and Expirable's Release and
// TryRelease still release given a context that has ended, as
// interlock.Locker's Unlock does; an acquisition whose context has ended
// already sends nothing.
//
// Expirable.Release fails with ErrPermitExpired for a permit whose lease
// ran out before its release: for a permit this Client acquired, whether
// or not another client reclaimed it since (the Client remembers a lost
// permit for up to ten minutes); for another client's, while it is not
// yet reclaimed (it is given back all the same, as Redisson does). It
// fails with ErrUnknownPermit for any other id that is not acquired: never
// acquired, released already, found gone by this Client's renewal, or
// another client's that expired and was reclaimed. TryRelease reports both
// as false. A context's error comes back as itself, every call after the
// Client's Close returns interlock.ErrClosed, and any other failure is an
// *interlock.Error naming the kind, the operation and the semaphore.
package semaphore
