// Package fenced is a reentrant distributed lock that hands out fencing
// tokens, and is on the wire Redisson's RFencedLock; it also has the
// resource-side checks that make the tokens useful (Fence, RedisFence).
//
// # Why fencing
//
// A lease lock can be lost while its holder believes it holds it. The
// holder checks that it still holds the lock and is then paused (a long GC
// pause, a stalled VM, SIGSTOP) for longer than its lease. The lock expires,
// another process takes it and writes; then the first one runs again and
// finishes the write it had started. Neither the lock nor its Guard can stop
// a write that is already on its way: the paused process cannot learn
// anything until it runs again, and by then it is writing.
//
// A fencing token closes that hole. Every acquisition gets a token larger
// than every token handed out for the lock before it. The holder sends its
// token with each write, and the resource refuses a write whose token is
// older than one it has already seen. The late write of the paused holder
// carries an older token than the new holder's, and is refused.
//
// # Tokens
//
//   - Tokens are per lock name: a counter in the Redis key
//     redisson_lock_token:{name}, which never expires. Java and Go clients
//     of one name share it, so their tokens are comparable.
//   - Every successful acquisition increments it, re-entries included, so
//     an owner that re-enters gets a new, larger token; use the latest.
//     Lock and TryLock take a token too, as in Redisson; Token reads the
//     counter. A failed attempt takes none.
//   - The counter survives unlocks, expiry and ForceUnlock. Only deleting
//     the key resets it (Redisson's RFencedLock.delete() does; interlock
//     never does). After a reset, fences that admitted larger tokens refuse
//     every new holder until their fence keys are reset too: they fail safe.
//   - When the reply to an acquisition is lost (its context ends while the
//     script runs, the connection breaks), the hold it may have taken is
//     released, but the token it took cannot be given back; a token is then
//     skipped. Tokens only need to increase, so that is harmless.
//   - One counter stays in Redis for each lock name ever used. Keep the set
//     of names bounded (Redisson users have reported millions of leftover
//     counters).
//
// # Using the tokens
//
// The resource must be the one that checks. For data in Redis, write it
// through a RedisFence, which compares, records and writes in one Lua
// script:
//
//	token, err := m.LockToken(ctx)
//	if err != nil { ... }
//	defer func() {
//		if err := m.Unlock(ctx); err != nil { ... }
//	}()
//	fence := fenced.NewRedisFence(rc, "{ledger}:fence")
//	err = fence.Set(ctx, token, "{ledger}:balance", "100")
//	// errors.Is(err, fenced.ErrStale) if a newer holder has written
//	// meanwhile: nothing was written.
//
// For a resource inside one process, wrap its writes in Fence.Do. Any other
// resource must make the same comparison itself, atomically with the write:
// a database's "UPDATE ... SET token = $1, ... WHERE token <= $1", a storage
// system's conditional write. A new holder that reads the resource before writing it
// should first admit its token (Fence.Admit, RedisFence.Admit) so that
// older holders are shut out before it reads.
//
// # Fences
//
// A fence admits a token only if it is at least the highest token it has
// admitted, which it then records: once a holder with token t is admitted,
// no holder with a token below t ever is again. Tokens equal to the highest
// pass (the same holder writing again). Feed one fence the tokens of one
// lock name only: tokens of different locks are not comparable. A fence
// protects only the writes that go through it; a check the writer makes
// itself before writing has the same race the lock has.
//
// Fence is for a resource inside one process. Do admits and writes under
// the Fence's mutex, so no newer token is admitted between the check and
// the write, and writes never overlap: keep write short and do not call
// the Fence from it. Admit alone is a check, for a resource that already
// serialises its writes, or to shut older holders out as soon as a new
// holder has its token.
//
// RedisFence is for data in Redis, on any server the caller's client
// reaches. Its fence key holds the highest admitted token, and every write
// runs in one script (lua/fence_write.lua) that compares, records and
// writes, or refuses and changes nothing. The fence key never expires and
// must not be written by anything else; on a cluster it and every data key
// must share a slot (one hash tag, such as "{ledger}:fence" and
// "{ledger}:balance"), or the write is refused before anything is sent. A
// write that fails on the server (WRONGTYPE) leaves the token and the
// writes before it applied, as MULTI/EXEC does; a lost reply leaves it
// unknown, and Exec is never resent automatically (an INCRBY must not run
// twice).
//
// # Data
//
// Everything but the counter is RLock's: the lock is a hash named after the
// lock, with one field "<client id>:<owner id>" holding the hold count and
// the holder's lease as its TTL; a release publishes "0" on
// redisson_lock__channel:{name}. Unlock, ForceUnlock and the watchdog are
// the reentrant lock's, so Redisson RLock and RFencedLock clients of one
// name exclude each other too. docs/protocol.md has the scripts.
//
// # Owners, leases and waiting
//
// These are the same as in package rlock. Mutex has interlock.Locker's
// methods, and LockToken, LockLeaseToken and TryLockToken, which return the
// token; LockToken and TryLockToken with a lease of 0 take a watchdog hold.
// Unlock never touches the counter. LockLeaseToken honours its lease; Redisson's lockAndGetToken(leaseTime,
// unit) ignores it and takes a watchdog hold, which nobody can rely on, so
// interlock does not copy that. Waiters subscribe, re-try, and wait for a
// release message or the holder's TTL.
//
// # Guarantees and limits
//
// While the Redis primary keeps the keys, at most one owner holds the lock
// and tokens strictly increase. Holds can still be lost (pauses,
// partitions longer than the lease, a server clock jump); Guard reports a
// loss when this process learns of it, and fenced writes stay safe. What
// fences cannot survive is a token handed out twice: a failover to a
// replica that had not received the latest increments does that, and a
// fence cannot tell two holders with one token apart.
//
// Holds, Guard, Remaining and errors are as the interlock package
// documentation says ("Holds", "Errors"). The fences' errors are
// *interlock.Errors of interlock.KindFenced and interlock.OpFence: a stale
// token's wraps ErrStale in both (Fence.Do, RedisFence's writes), and
// Admit reports it as false in both. Fence.Do and RedisFence refuse token
// 0 with an error wrapping interlock.ErrInvalid; Fence.Admit never admits
// it.
package fenced
