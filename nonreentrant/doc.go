// Package nonreentrant holds the two non-reentrant locks of Java Redisson
// 4.4 and later, on the wire: Mutex is RNonReentrantLock and FairMutex is
// RNonReentrantFairLock. Where re-entry is a bug to catch, an owner's
// second acquisition fails with ErrReentered instead of counting a hold.
//
// # Data
//
// Each uses the keys, channels, messages, unlock and renewal of its
// reentrant twin (rlock, fairlock): a Mutex and an RLock of one name, in
// either language, exclude each other, and so do a FairMutex and an
// RFairLock. Only the acquire scripts differ: where the twin's would
// re-enter, they answer the error reply "ERR NON_REENTRANT_REACQUIRE",
// Redisson's, passed to them as an argument. Redisson's Java client throws
// IllegalMonitorStateException on it; interlock returns ErrReentered,
// whose text carries the same token, so logs of both sides match. A
// FairMutex refuses before its owner is queued, leaving the queue as it
// was, as Redisson's does.
//
// Non-reentrancy lives in the acquire scripts alone: an RLock acquisition
// by an owner that holds the name through a Mutex re-enters, in Go as in
// Java.
//
// # Owners
//
// The owner is the calling goroutine, unless the context carries one from
// interlock.WithOwner, as for every lock. ErrReentered comes back at once,
// whatever the acquisition's wait. Holds, leases, Guard, Remaining and
// errors are as the interlock package documentation says ("Holds",
// "Errors"); waiting is the twin's (see rlock and fairlock).
package nonreentrant
