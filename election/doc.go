// Package election is leader election on the fenced lock: the leader is
// whoever holds the fenced lock of the election's name (Redisson's
// RFencedLock), and each term's fencing token is the epoch that the
// resources the leader writes use to refuse a deposed leader's late
// writes.
//
//	e := election.New(client, "orders-scheduler")
//	lead, err := e.Campaign(ctx, "host-a:8080") // blocks until this candidate leads
//	if err != nil { ... }
//	work(lead.Context(), lead.Token()) // ends when leadership is lost
//	_ = e.Resign(ctx)
//
// # Terms
//
// Campaign takes the lock with a watchdog hold and its token, as
// fenced.Mutex.LockToken does, and returns the term: its token, its value,
// and a context that ends when the term ends (cause interlock.ErrLockLost
// when it was lost: the lock expired while this process could not renew
// it, or was deleted or taken). Resign releases the lock, which wakes the
// candidates waiting here and in Java. A process that dies or pauses past
// the Client's watchdog timeout stops renewing; the lock expires within one
// watchdog timeout, and a waiting candidate leads then.
//
// Believing that one leads is not enough to write safely: a paused leader
// runs again before it learns that its term ended. Pass Token to the
// resource, through a fenced.Fence or fenced.RedisFence, or a check of
// your own, so that writes of an older term are refused.
//
// # Java
//
// The lock, its token counter and its release channel are those of the
// fenced lock (see package fenced): a Java RFencedLock holder of the name
// is the leader for Go, with an empty value, and Java sees a Go leader as
// the lock's holder. A Java election built on an RLock of the same name
// works too, but takes no token: Leader then reports the counter as the
// last fenced acquisition left it.
//
// # Values and observation
//
// A Go leader's value lives in a key of interlock's own,
// interlock_leader:{name}, a hash of the leader's owner, token and value,
// written by the acquisition, renewed with the lock and deleted by Resign;
// it expires with the lock when the leader dies. Leader reports a value
// only when that key belongs to the lock's current holder and token.
//
// Observe sends the leader it reads, then every new term. It shares the
// Client's one subscription per channel and reads the leader again when
// woken by: a release on the lock's channel (Go and Java unlocks publish
// there), a Go leader's announcement of a new term on
// interlock_leader__channel:{name}, the lock's expiry (its PTTL, read with
// the leader), or, as a backstop for changes that announce nothing (a Java
// acquisition that follows an expiry, a Java holder's re-entry), a
// re-check after WithRecheck's interval; after a vacancy it re-checks
// sooner, from 5ms up to that interval. Where it cannot subscribe (an ACL
// without the channels, a connection down) it polls, as lock waiters do,
// from 5ms up to that interval. A term that begins and ends between two
// reads is not reported (nor one that begins and ends while the process is
// stopped); the terms Observe reports have increasing tokens unless a Java
// RLock holder took no token.
//
// # Owners
//
// Each Election is one candidate, with an owner id of its own
// (interlock.NewOwnerID): its term belongs to it, not to a goroutine, and
// any goroutine may Resign. Two Elections of one name, on one Client or
// several, compete.
package election
