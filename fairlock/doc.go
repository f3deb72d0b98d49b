// Package fairlock is a fair, reentrant distributed lock that is, on the
// wire, Redisson's RFairLock: waiters acquire it in the order they started
// waiting, whether they run in Go or in Java, and a Go process and a Java
// process that lock the same name exclude each other, queue behind each
// other and wake each other up.
//
// # Data
//
// The lock is a Redis hash named after the lock, exactly as for rlock: its
// one field is the holder's owner string, "<client id>:<owner id>", its
// value the hold count, its TTL the holder's lease. Two more keys hold the
// waiters: the list redisson_lock_queue:{name} (owners in arrival order)
// and the sorted set redisson_lock_timeout:{name} (each waiting owner's
// deadline, in epoch milliseconds). Neither ever has a TTL; both vanish
// when the last waiter leaves. A release publishes "0" only on the channel
// of the waiter at the head of the queue, redisson_lock__channel:{name}:<owner>
// (SPUBLISH on a cluster in sharded mode). Every key and channel of a lock
// is in the lock's cluster slot.
//
// # Policy
//
// The lock is granted in FIFO order among waiters. A waiter joins the
// queue with its first attempt; while anyone is queued, a free lock goes
// only to the waiter at the head of the queue, and a newcomer queues
// behind the others even when the lock happens to be free. The order is
// the order in which the attempts reached Redis, across every process and
// language that uses the lock. A holder that releases the lock wakes
// exactly the head waiter.
//
// Only waiters queue. TryLock with a wait of 0 is a single attempt that
// never queues or subscribes: it acquires only a free lock that nobody is
// queued for (or whose queue the caller heads). A positive wait queues the
// caller with that wait as its grace (see below). ForceUnlock deletes the
// lock and tells the head waiter its turn has come; the queue is kept. An
// owner that holds the lock re-enters at once, whoever waits (the lock is
// reentrant; every acquisition resets the TTL to its own lease, and the
// owner must unlock as many times as it locked).
//
// The owner is the calling goroutine, unless the context carries an owner
// from interlock.WithOwner. A goroutine that did not lock gets interlock.ErrNotHeld
// from Unlock: to unlock elsewhere, take an interlock.Hold, or carry the
// owner in the context (see "Owners" in package interlock).
//
// # Leaving the queue, and dead waiters
//
// A waiter that stops waiting for any reason (its wait ran out, its context
// ended, an error) takes itself out of the queue before it returns, on a
// short context of its own, and the waiters behind it move up; when it was
// the one whose turn had come, the next waiter is woken. (Redisson skips
// this clean-up when a thread is interrupted; interlock always runs it.)
//
// A waiter that dies without leaving (its process crashed or was cut off)
// keeps its place until its deadline: the deadline of the waiter ahead of
// it (or, at the front, the end of the holder's lease at the time it
// queued) plus its wait timeout, WithWaitTimeout, 5 minutes by default, or
// TryLock's wait. When a dead waiter reaches the head, the lock stays free
// for everyone else until that deadline passes; then the next attempt by
// anyone drops it. The waiters behind a dead head find the lock free at
// their next retry (at the latest when the lease they were last told about
// runs out), and from then on check again at growing intervals, up to a
// second apart, instead of waiting for a message only the dead head would
// have received. No queued waiter waits longer than that second, or a
// quarter of its wait timeout when that is shorter, before it asks again:
// a waiter whose turn came in a message it never received (a reconnect, a
// proxy) still takes its turn before its deadline drops it.
//
// Deadlines are never extended while a waiter waits. A live waiter whose
// deadline passes, because the holders ahead of it together kept the lock
// longer than that, is dropped like a dead one and queues again, at the
// back, on its next attempt. So choose a wait timeout longer than a turn
// normally takes, and shorter than you are willing to let a dead waiter
// block the queue. When the head acquires, or a waiter leaves, every
// deadline behind it moves earlier by the acquirer's (or leaver's) wait
// timeout, as in Redisson; clients that queue with different wait
// timeouts therefore see surprising deadlines, so use one value across the
// fleet, Go and Java.
//
// # Clocks
//
// Deadlines are computed from the clock of the client that sends each
// script, not the server's: "now" is an argument, as in Redisson. A client
// whose clock is ahead drops live waiters early, one whose clock is behind
// keeps dead waiters longer. Keep the clocks of every client of a lock, Go
// and Java, synchronized (NTP) to well within the wait timeout. A Client
// made with interlock.WithClockSkewLimit compares its clock with the Redis
// server's before it queues a waiter, and refuses to queue (an error
// wrapping interlock.ErrClockSkew) when they differ by more than the limit.
//
// # Leases and the watchdog
//
// Holds are as the interlock package documentation says ("Holds"). When a
// hold with a lease ends by itself, the next waiter acquires when its own retry timer, set to the holder's
// remaining lease, fires, since an expiry publishes nothing. The queue and
// its deadlines are never renewed.
//
// # Waiting
//
// A waiter tries once (which queues it); subscribes to its own channel and
// waits for the server's confirmation; tries again; then waits for a
// message on its channel, for the holder's remaining TTL, or for its
// context, and tries again. Every waiting owner has a channel and a
// subscription of its own, as in Redisson, because a release wakes one
// particular owner; all of a process's subscriptions share the Client's
// pub/sub connection (one per node for sharded pub/sub), and each ends when
// its owner stops waiting.
//
// # Unlocking an expired lock
//
// Unlock releases one hold and returns interlock.ErrNotHeld when the owner holds
// nothing. When the lock does not exist at all, because its lease ran out
// (or it was never taken), Redisson's unlock reports success and still
// wakes the head waiter. interlock's Unlock does the same on the wire (it
// wakes the head and writes the unlock latch), but its script answers
// "nothing was held" in that case, and Unlock returns interlock.ErrNotHeld: the
// caller's hold had already ended, and its critical section may not have
// been exclusive. This is the same answer rlock gives.
//
// # Guarantees and limits
//
// While the Redis primary keeps the keys, at most one owner holds the lock,
// and an Unlock that released it happens before the Lock (or successful
// TryLock) that acquires it next returns: whatever the releasing holder
// wrote before Unlock is visible, in any store that orders its writes, to
// the next holder, as long as no hold is lost (see the interlock package
// documentation, "Holds").
//
// Bad arguments give errors wrapping interlock.ErrInvalid (see its
// package documentation), here also a wait timeout, or a TryLock wait
// other than 0, below 1ms.
package fairlock
