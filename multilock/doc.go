// Package multilock holds several locks as one, as Redisson's
// RedissonMultiLock (all members) and RedissonRedLock (a majority of
// members on independent masters) do. A Go Mutex and a Java multi-lock
// over the same names exclude each other: the members are ordinary locks
// of any kinds (rlock, fairlock, rwlock halves, fenced, nonreentrant,
// spin), on one Client or several, and a multi-lock adds no keys and no
// messages of its own.
//
// # The algorithm
//
// Members are tried one at a time, in the order given, each with the
// calling owner. TryLock(wait, lease) gives each member what is left of
// wait (a RedLock: wait divided by the number of members); when a member
// fails and no failure is allowed (a RedLock allows a minority), the
// members taken so far are unlocked and, while wait lasts, the gathering
// starts again from the first member. With a lease and a wait, members are
// taken with a lease of twice the wait, so that early ones outlive the
// gathering, and each is given lease once all are held; without a lease
// each member is a watchdog hold, renewed by its Client's watchdog like
// any other. Lock and LockLease run such rounds, 1.5s per member, until
// they acquire or the context ends. A gathering that fails, whatever the
// reason, unlocks what it took.
//
// A member's attempt is bounded by its wait, plus a quarter of it (at
// least 20ms, at most 250ms) for its last try, so that a frozen master
// cannot hold the gathering past its wait. The member's first try is made
// on its own: a master that answers nothing within the bound fails the
// member with an error ("no answer within the member's wait"), while a
// member that answered busy and whose last try is still unanswered when
// the bound ends, as on a loaded machine, is busy.
//
// # Member order
//
// Two owners that take overlapping sets in different orders can each hold
// a member the other waits for until their waits run out. Give every
// process, Go and Java, the same order: sort the names. The order is never
// changed here, because Redisson does not change it either.
//
// # Holding
//
// Unlock releases one hold of every member, going on past failures
// (Redisson's Java unlock stops at the first). Its error, as any other
// of a Mutex's, is a member's own when one member failed, and an
// *interlock.Error of KindMultiLock (KindRedLock) wrapping them all,
// each whole, when several did, or a gathering and its undo both failed.
// Guard ends when a member's hold ends (a RedLock's: when more than a
// minority have), with that member's cause, which names a lost member: an
// *interlock.Error of the member's Kind and name, with Op OpLost, wrapping
// interlock.ErrLockLost and the reason it was lost; Remaining is the time the
// members (a RedLock: a majority) are all still certainly held. Extend
// gives every member the new lease, side by side, and fails with
// interlock.ErrNotHeld when a member is gone (a RedLock: when fewer than a
// majority are still held): with nothing sent when this process knows it
// already; otherwise the members still held keep the new lease, and Unlock
// releases them.
//
// # A Locker
//
// A Mutex is an interlock.Locker, so it can be a member of another
// multi-lock or be taken with interlock.Lock. Redisson's multi-locks throw
// on the queries below; here they answer for the set as a whole, which is
// either taken (an acquisition would wait) or held (by the calling owner):
// IsLocked and TTL count the members locked by anyone, and the lock is
// taken as soon as one is (a RedLock: more than a minority); TTL is how
// long until none is (a RedLock: until only a minority is), unless they
// are renewed or released. IsHeld, HoldCount and Remaining count the
// calling owner's holds, and the lock is held only while every member is
// (a RedLock: a majority). ForceUnlock force-unlocks every member. Members
// are asked side by side; one that fails matters only when the answer
// depends on it, and then its error comes back.
//
// # RedLock
//
// A RedLock needs at least 3 members, each through its own Client, and
// holds when a majority acquired within the wait: with one master of
// three frozen or down, acquisitions go on; with two down, they fail and
// leave nothing held. Redisson deprecates it in favour of an RLock on a
// replicated deployment with replica sync (interlock.WithReplicaAcks),
// which is simpler to run; it is here for fleets that already use it.
//
// Give each member's rueidis client a dial timeout (ClientOption.Dialer.
// Timeout) well under a member's wait. Once a frozen master's connection
// is closed, a call that meets its redial waits for the redial whatever
// its own context says, up to that timeout (rueidis's default is 5s), and
// that overrun comes out of the other members' wait: with the default, a
// TryLock(750ms) failed on 6–10% of uncontended names while one master
// of three was frozen for 20s; with 150ms, none did.
package multilock
