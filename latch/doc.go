// Package latch is Java Redisson's count-down latch, RCountDownLatch, on
// the wire: a Go process and a Java process that open a latch of the same
// name (Redisson's getCountDownLatch(name)) count it down together, and
// each side's waiters are released when either side brings it to zero.
//
//	l := latch.New(c, "batch:7")
//	l.TrySetCount(ctx, 3)               // once, by whoever starts the batch
//	...
//	l.CountDown(ctx)                    // by each of the three workers
//	...
//	err := l.Await(ctx)                 // nil once all three are done
//
// # Data
//
// A latch called N is the Redis string N holding its count. It is open
// when its count is 0 or the key does not exist, so a latch that was never
// set is open. The key never expires (its TTL is interlock.NoExpiry): no
// latch operation, here or in Redisson, gives it one. Changes are announced on
// redisson_countdownlatch__channel__{N} (SPUBLISH on a cluster in sharded
// mode): "1" when TrySetCount closes the latch or Delete removes it, "0"
// when CountDown brings it to zero.
//
// TrySetCount closes an open latch with a count, and does nothing to a
// latch that exists. CountDown takes one from the count; at zero it
// deletes the key and announces "0". A CountDown on an open latch does
// nothing. A count of 0 is stored as it is, as in Redisson; such a latch
// is already open.
//
// # Waiting
//
// Await reads the count; if the latch is closed it subscribes to the
// channel and waits for the server's confirmation, reads the count again
// (a CountDown in between is not missed), and then reads it again when a
// "0" arrives, after every reconnection, and at least every 2s, until the
// latch is open or its context ends. All awaiters of a latch in one Client
// share one subscription; a "0" wakes every one of them and a "1" none.
// Await has no timeout of its own: give it a context with a
// deadline, and it returns that context's error when the latch is still
// closed then.
//
// Delete removes the key, which opens the latch, and announces "1", which
// wakes nobody, exactly as Redisson's delete does. Go awaiters find the
// latch open at their next periodic read, within 2s. A Java thread in
// await() is not woken at all until a later "0", and await(timeout)
// returns true only at its deadline; to release Java awaiters, count the
// latch down rather than deleting it.
//
// # Names on a cluster
//
// Unlike every other Redisson channel, the latch's always wraps the name
// in braces. For a name that itself contains braces, such as {g}:lat, the
// channel redisson_countdownlatch__channel__{{g}:lat} then hashes to
// another cluster slot than the key: Redisson's scripts, which declare
// both, fail there with CROSSSLOT. On a Redis Cluster, New therefore
// refuses a name with a brace: every method returns an error wrapping
// interlock.ErrInvalid, before anything is sent. On a standalone server or with
// sentinel such names work, as they do in Java.
//
// # Guarantees and errors
//
// CountDown carries a receipt (see the semaphore package, "Receipts"), so
// a resend after a connection error counts down once. TrySetCount and
// Delete are never resent: when their reply is lost the caller gets the
// error. A negative count, a bad name, a nil client, and a key that holds
// another type of data or no integer give errors wrapping interlock.ErrInvalid, and
// change nothing. CountDown still counts down given a context that has ended, as
// interlock.Locker's Unlock does; Await with a context that has ended
// already sends nothing. A context's error
// comes back as itself, every call after the Client's Close returns
// interlock.ErrClosed, and any other failure is an *interlock.Error naming the
// kind, the operation and the latch.
package latch
