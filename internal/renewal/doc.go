// Package renewal keeps watchdog-held locks alive and tells holders when a
// lock is gone.
//
// A Scheduler is the one place where a Client records the locks it holds.
// Every hold is an Entry, one per (key, owner), counting re-entries. Holds
// taken without a lease are "watchdog" holds: one goroutine per Scheduler
// renews all of them every lease/3. Each tick groups the entries by hash
// slot (on every server: one behind a proxy or managed endpoint may enforce
// slots without being a cluster to the client), cuts each slot's entries into chunks of at most the batch size,
// builds one EVALSHA per chunk and sends every chunk in a single DoMulti, so
// rueidis pipelines them: one round trip per node per tick, however many
// locks are held.
//
// The package knows nothing of lock kinds. A lock kind describes how its
// entries are renewed with a Task: a script and the KEYS and ARGV it takes
// for a chunk of entries. The script answers 1 or 0 per entry.
//
// Each tick's DoMulti is a round of its own: rounds do not wait for each
// other, so a reply slower than the interval (but faster than the lease)
// delays nothing. A renewal confirmed makes its entry valid for a lease
// from when the round was sent.
//
// An entry whose script answers 0 is lost: its context is cancelled with a
// cause that wraps the Task's Lost error and why (report.Lost; here
// report.ErrKeyGone) and it is forgotten. An entry whose validity ends with
// no renewal confirmed is lost then (report.ErrNotRenewed), or, while a
// round sent before is still unanswered, up to three quarters of an
// interval later (the reply may yet confirm it); a failed round (a network
// error, a timeout) is only the detail of that cause. A lease that ran out
// is report.ErrLeaseExpired, Drop report.ErrForceUnlocked, MaxHold
// Config.MaxHoldErr.
// The Scheduler remembers each loss for the owner's Unlock (LostCause).
// Holds with an explicit lease are never renewed; the Scheduler forgets them
// once the lease has passed, so forgotten unlocks cost no memory.
//
// An unlock goes through Release, which pauses the entry's renewal until
// the unlock's Outcome is recorded, so a tick that races an unlock never
// extends a lock that is being released, and a reply for an entry that was
// released meanwhile is ignored.
package renewal
