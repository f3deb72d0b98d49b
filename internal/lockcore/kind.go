package lockcore

import (
	"strconv"
	"time"

	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/renewal"
	"github.com/interlock-go/interlock/internal/report"
	"github.com/interlock-go/interlock/internal/script"
)

// Kind declares a lock kind to the engine: its scripts with their keys and
// arguments, its channel, its renew task, and the named variations of the
// common algorithm it uses. The engine reads it; it never calls into the
// kind's package.
type Kind struct {
	// Event is the kind in errors and in the Observer's events
	// (interlock.KindRLock).
	Event string
	// Suffix is appended to the owner string in hash fields (":write").
	Suffix string
	// Channel derives the release channel from the lock's name.
	Channel func(name string) string
	// Keys derive the kind's other keys from the name, for Key(i).
	Keys []func(name string) string
	// KeyShapes says what each of Keys keeps (ShapeNone, or missing: not
	// a key of its own), for the checks of keys that hold something else.
	KeyShapes []Shape

	// Acquire is the acquire script; Reply says how to read its answer.
	Acquire Call
	Reply   Reply
	// Unlock releases one hold, latched; it answers nil (not held), 0 (a
	// hold released, others remain), 1 (released) or ExpiredReply.
	Unlock Call
	// ExpiredReply, when not 0, is Unlock's answer for a lock that no
	// longer existed: reported as not held.
	ExpiredReply int64
	// Undo takes back the hold a lost acquisition may have taken, when
	// the holder's count is Expected.
	Undo Call
	// Transfer, when set, is Unlock that passes the owner's last hold to
	// Next with NextLease instead of releasing it, latched too: it answers
	// nil, 0 or 1 as Unlock does when it passes nothing, 3 when, with
	// Yield, it released the lock for another process's waiter, and
	// {2, token} (token 0 but for a ReplyToken kind) when it passed it.
	// Unless it is Fair, Yield ends runs of transfers (runtime.TransferRun).
	Transfer *Call
	// Force deletes the lock whoever holds it and answers 1 if it did.
	Force Call
	// Extend sets the TTL of the owner's holds to Lease if it still holds
	// the lock, and answers 1 (or {1}) when it did, 0 (or {0}) when the
	// owner holds nothing; it must be idempotent.
	Extend Call
	// IsLocked, when set, answers 1 when the lock is held; without it
	// IsLocked is EXISTS, or with LockedMode, HGET mode == LockedMode.
	IsLocked   *Call
	LockedMode string
	// Renew renews the kind's watchdog holds.
	Renew *renewal.Task

	// Fair makes waiters queue on the server, each on its own channel.
	Fair *Fair
	// ReadHalf: holds are shared, acquisitions never queue behind this
	// process's waiters, and one wakes this owner's waiting writes.
	ReadHalf bool
	// Upgrade, on a write half, is the error of an owner that holds the
	// read half but not this one; a released write hold that leaves read
	// holds wakes this process's waiters (a downgrade publishes nothing).
	Upgrade error
	// Reentered, when set, makes the kind non-reentrant: its acquire
	// scripts answer an error reply naming ReenterToken to an owner that
	// already holds the lock, and the engine returns this error, at once.
	Reentered error
}

// ReenterToken is the error a non-reentrant acquire script answers with
// (Redisson 4.4's NON_REENTRANT_REACQUIRE), passed to it as an argument.
const ReenterToken = script.NonReentrantToken

// Fair is what a fair lock adds: the single-attempt acquire, which never
// queues, and the script that leaves the queue.
type Fair struct {
	TryAcquire Call
	GiveUp     Call
}

// Reply is how an acquire script answers.
type Reply int

const (
	// ReplyTTL: nil when acquired, else the holder's PTTL.
	ReplyTTL Reply = iota
	// ReplyToken: {-1, token} when acquired, {pttl, -1} when busy; Key(0)
	// is the token counter.
	ReplyToken
)

// Call is one script call: the script, and its KEYS and ARGV as the engine
// fills them in.
type Call struct {
	Script     func() *script.Script
	Keys, Args []Arg
}

// Arg is one KEYS or ARGV entry of a Call.
type Arg struct {
	src  source
	i    int
	text string
}

type source uint8

const (
	srcText source = iota
	srcName
	srcChannel
	srcKey
	srcOwnerKey
	srcOwner
	srcOwnerPlus
	srcLease
	srcGrace
	srcNow
	srcPublish
	srcLatch
	srcLatchTTL
	srcExpected
	srcNext
	srcNextLease
	srcNextGrace
	srcYield
)

// The values the engine knows at each call.
var (
	Name     = Arg{src: srcName}     // the lock's name, its hash key
	Channel  = Arg{src: srcChannel}  // Kind.Channel of the name
	Owner    = Arg{src: srcOwner}    // the holder: owner string + Kind.Suffix
	Lease    = Arg{src: srcLease}    // lease in ms (watchdog timeout for watchdog holds)
	Grace    = Arg{src: srcGrace}    // a fair waiter's wait timeout in ms
	Now      = Arg{src: srcNow}      // the Client's wall clock in epoch ms
	Publish  = Arg{src: srcPublish}  // "PUBLISH" or "SPUBLISH"
	Latch    = Arg{src: srcLatch}    // the unlock's latch key
	LatchTTL = Arg{src: srcLatchTTL} // the latch's lifetime in ms
	Expected = Arg{src: srcExpected} // the hold count an undo expects
	// Next and NextLease are a transfer's next holder and its lease in ms.
	Next      = Arg{src: srcNext}
	NextLease = Arg{src: srcNextLease}
	// NextGrace is a fair transfer's next holder's wait in ms.
	NextGrace = Arg{src: srcNextGrace}
	// Yield is "1" when a transfer is to release for real if another
	// process waits, else "0".
	Yield = Arg{src: srcYield}
)

// Lit is a fixed argument.
func Lit(s string) Arg { return Arg{src: srcText, text: s} }

// Key is the i-th of Kind.Keys.
func Key(i int) Arg { return Arg{src: srcKey, i: i} }

// OwnerKey is Key(i) + ":" + owner string + suffix.
func OwnerKey(i int, suffix string) Arg { return Arg{src: srcOwnerKey, i: i, text: suffix} }

// OwnerPlus is the owner string + suffix, whatever Kind.Suffix is.
func OwnerPlus(suffix string) Arg { return Arg{src: srcOwnerPlus, text: suffix} }

// Prefixed derives Redisson's "prefix:{name}" key (keys.Prefix).
func Prefixed(prefix string) func(string) string {
	return func(name string) string { return keys.Prefix(prefix, name) }
}

// RenewTask renews holds whose hash field is the holder (Redisson's
// LockTask): reentrant, fair, fenced and write locks.
var RenewTask = &renewal.Task{Script: script.Renew(), Args: RenewArgs, Lost: report.ErrLockLost, KeepLosses: true}

// ExtendOne extends one holder's hold whose hash field is the holder:
// script.Renew (Redisson's LockTask) for one lock, with the given lease.
var ExtendOne = Call{Script: script.Renew, Keys: []Arg{Name}, Args: []Arg{Lease, Owner}}

// RenewArgs builds the KEYS and ARGV of script.Renew for a chunk of holds.
func RenewArgs(lease time.Duration, chunk []*renewal.Entry) (keys, argv []string) {
	keys = make([]string, len(chunk))
	argv = make([]string, len(chunk)+1)
	argv[0] = MS(lease)
	for i, e := range chunk {
		keys[i] = e.Key
		argv[i+1] = e.Owner
	}
	return keys, argv
}

// Reentrant declares Redisson's RLock as the kind event. Kinds that share
// its protocol (the fenced lock) start from it.
func Reentrant(event string) Kind {
	return Kind{
		Event:   event,
		Channel: keys.LockChannel,
		Acquire: Call{Script: script.Acquire, Keys: []Arg{Name}, Args: []Arg{Lease, Owner}},
		Unlock: Call{Script: script.Unlock, Keys: []Arg{Name, Channel, Latch},
			Args: []Arg{Lit("0"), Lease, Owner, Publish, LatchTTL}},
		Undo:   Call{Script: script.UndoAcquire, Keys: []Arg{Name, Channel}, Args: []Arg{Lit("0"), Owner, Expected, Publish}},
		Force:  Call{Script: script.ForceUnlock, Keys: []Arg{Name, Channel}, Args: []Arg{Lit("0"), Publish}},
		Extend: ExtendOne,
		Transfer: &Call{Script: script.Transfer, Keys: []Arg{Name, Latch, Channel},
			Args: []Arg{Lease, Owner, LatchTTL, Next, NextLease, Publish, Yield}},
		Renew: RenewTask,
	}
}

// FairKind declares Redisson's RFairLock as the kind event: a reentrant
// lock whose waiters queue in redisson_lock_queue:{name}, with deadlines in
// redisson_lock_timeout:{name}, each woken on
// redisson_lock__channel:{name}:<owner>. Kinds that share its protocol
// (the non-reentrant fair lock) start from it.
func FairKind(event string) Kind {
	queue, timeouts := Key(0), Key(1)
	return Kind{
		Event:     event,
		Channel:   keys.LockChannel,
		Keys:      []func(string) string{Prefixed(keys.FairQueuePrefix), Prefixed(keys.FairTimeoutPrefix)},
		KeyShapes: []Shape{ShapeList, ShapeZSet},
		Acquire:   Call{Script: script.FairAcquire, Keys: []Arg{Name, queue, timeouts}, Args: []Arg{Lease, Owner, Grace, Now}},
		Fair: &Fair{
			TryAcquire: Call{Script: script.FairTryAcquire, Keys: []Arg{Name, queue, timeouts}, Args: []Arg{Lease, Owner, Now, Grace}},
			GiveUp:     Call{Script: script.FairAcquireFailed, Keys: []Arg{queue, timeouts, Name, Channel}, Args: []Arg{Owner, Grace, Lit("0"), Publish}},
		},
		Unlock: Call{Script: script.FairUnlock, Keys: []Arg{Name, queue, timeouts, Channel, Latch},
			Args: []Arg{Lit("0"), Lease, Owner, Now, Publish, LatchTTL}},
		ExpiredReply: 2,
		Transfer: &Call{Script: script.FairTransfer, Keys: []Arg{Name, queue, timeouts, Channel, Latch},
			Args: []Arg{Lit("0"), Lease, Owner, Now, Publish, LatchTTL, Next, NextLease, NextGrace}},
		Undo:   Call{Script: script.FairUndoAcquire, Keys: []Arg{Name, queue, timeouts, Channel}, Args: []Arg{Lit("0"), Owner, Expected, Publish, Now}},
		Force:  Call{Script: script.FairForceUnlock, Keys: []Arg{Name, queue, timeouts, Channel}, Args: []Arg{Lit("0"), Now, Publish}},
		Extend: ExtendOne,
		Renew:  RenewTask,
	}
}

// MS formats d as whole milliseconds, the unit of every script argument.
func MS(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// latchTTLMS is MS(latchTTL), formatted once.
var latchTTLMS = MS(latchTTL)

// vals are the values of one call.
type vals struct {
	owner, holder string
	lease, grace  time.Duration
	publish       string
	latch         string
	expected      int
	next          string        // a transfer's next holder
	nextLease     time.Duration // the lease its hold gets
	nextGrace     time.Duration // and a fair waiter's wait
	yield         bool          // a transfer that ends a run
}

// callBuf holds the KEYS and ARGV strings of one call on its sender's
// stack: no call has more.
type callBuf [16]string

// fill builds the KEYS and ARGV strings of c for lock l in buf, or in one
// allocation when buf is nil (strings that outlive the caller's frame).
func (l *Common) fill(buf *callBuf, c *Call, v *vals) (ks, args []string) {
	n, m := len(c.Keys), len(c.Keys)+len(c.Args)
	var out []string
	if buf != nil && m <= len(buf) {
		out = buf[:m]
	} else {
		out = make([]string, m)
	}
	l.fillInto(out[:n], c.Keys, v)
	l.fillInto(out[n:], c.Args, v)
	return out[:n:n], out[n:]
}

// fillInto writes the strings of args for lock l into out, which has
// their length.
func (l *Common) fillInto(out []string, args []Arg, v *vals) {
	for i, a := range args {
		switch a.src {
		case srcText:
			out[i] = a.text
		case srcName:
			out[i] = l.name
		case srcChannel:
			out[i] = l.channel
		case srcKey:
			out[i] = l.keys[a.i]
		case srcOwnerKey:
			out[i] = l.keys[a.i] + ":" + v.owner + a.text
		case srcOwner:
			out[i] = v.holder
		case srcOwnerPlus:
			out[i] = v.owner + a.text
		case srcLease:
			out[i] = l.rt.LeaseMS(v.lease)
		case srcGrace:
			out[i] = MS(v.grace)
		case srcNow:
			out[i] = strconv.FormatInt(l.rt.WallNow().UnixMilli(), 10)
		case srcPublish:
			out[i] = v.publish
		case srcLatch:
			out[i] = v.latch
		case srcLatchTTL:
			out[i] = latchTTLMS
		case srcExpected:
			out[i] = strconv.Itoa(v.expected)
		case srcNext:
			out[i] = v.next
		case srcNextLease:
			out[i] = l.rt.LeaseMS(v.nextLease)
		case srcNextGrace:
			out[i] = MS(v.nextGrace)
		case srcYield:
			out[i] = "0"
			if v.yield {
				out[i] = "1"
			}
		}
	}
}
