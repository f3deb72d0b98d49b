// Package spin is a reentrant distributed lock that is, on the wire,
// Redisson's RSpinLock: RLock's hash, acquire script and renewal, with
// waiters that poll instead of subscribing. It suits large clusters, where
// every classic PUBLISH is broadcast to every node.
//
// # Waiting
//
// A waiter tries, pauses, and tries again until acquired, its wait runs
// out or its context ends; it holds no subscription. The pauses follow
// Redisson's defaults: exponential from 1ms, doubling with a little
// jitter, up to 128ms (WithExponentialBackoff), or constant
// (WithConstantBackoff, 64ms in Redisson). Unlike Redisson's, a pause is
// cut short at TryLock's deadline, where one last attempt is made, so a
// TryLock never overruns its wait.
//
// # Mixing with RLock
//
// A spin lock, an RLock and a non-reentrant lock of one name share one
// hash, so they exclude each other in both languages. On release:
//
//   - A Go spin unlock publishes RLock's release message, "0" on
//     redisson_lock__channel:{name}, where Redisson's spin unlock publishes
//     nothing. Spin waiters, which do not listen, are unaffected; an RLock
//     waiter of either language on the same name is woken at once.
//   - A Java spin unlock publishes nothing, so an RLock waiter on that name
//     (Go or Java) learns of the release only when it tries again: after
//     the holder's remaining TTL, up to the watchdog timeout (30s by
//     default). Go waiters that share names with Java spin locks should
//     use this package too, or rlock.WithPollInterval.
//
// Holds, leases, Guard, Remaining and errors are as the interlock package
// documentation says ("Holds", "Errors").
package spin
