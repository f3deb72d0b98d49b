package lockcore

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/renewal"
	"github.com/interlock-go/interlock/internal/report"
	"github.com/interlock-go/interlock/internal/runtime"
	"github.com/interlock-go/interlock/internal/wait"
)

const (
	// unlockResendFor is how long after its first send an unlock without a
	// reply is sent again, while ctx allows: a quarter of latchTTL, so
	// every resend finds the latch an earlier send may have written.
	unlockResendFor = latchTTL / 4
	// The pause before a resend doubles from unlockPauseMin to
	// unlockPauseMax.
	unlockPauseMin = 50 * time.Millisecond
	unlockPauseMax = time.Second
)

// Unlock releases one hold of the calling owner, as interlock.Locker says:
// detached from ctx's end (Detach). The Observer, if any, hears of it
// once it ended.
func (l *Common) Unlock(ctx context.Context) error {
	owner, holder, err := l.owner(ctx, report.OpRelease)
	if err != nil {
		return err
	}
	rctx, cancel := Detach(ctx)
	defer cancel()
	if l.obs == nil {
		_, _, _, err := l.unlock(rctx, owner, holder)
		return err
	}
	start := time.Now()
	since := l.rt.Renewal.HeldSince(l.name, holder)
	outcome, sends, passed, err := l.unlock(rctx, owner, holder)
	e := report.Event{Op: report.OpRelease, Duration: time.Since(start), Attempts: sends, Err: err}
	switch outcome {
	case renewal.Released, renewal.Decremented:
		e.Outcome = report.OutcomeReleased
		switch {
		case outcome == renewal.Decremented:
			e.Outcome = report.OutcomeDecremented
		case passed:
			e.Outcome = report.OutcomeTransferred
		}
		if !since.IsZero() {
			e.Held = start.Sub(since)
		}
	case renewal.NotHeld:
		e.Outcome, e.Err = report.OutcomeNotHeld, nil
		if _, wrong := errors.AsType[*OtherOwnerError](err); wrong {
			e.Err = err // worth telling: the caller is likely the wrong goroutine
		} else if errors.Is(err, report.ErrInvalid) {
			e.Outcome, e.Err = report.OutcomeError, err
		}
	default:
		e.Outcome = report.OutcomeError
	}
	l.observe(ctx, e)
	return err
}

// unlock is Unlock with the owner resolved: it returns what the server
// did, how many times the script was sent, and whether the lock went to
// a waiter of this Client.
func (l *Common) unlock(ctx context.Context, owner, holder string) (outcome renewal.Outcome, sends int, passed bool, err error) {
	// The owner's last hold may go to a waiter of this Client.
	last := l.transfers() && l.rt.Transfers.Standing() && l.holds(holder) == 1
	lease, held, end := l.rt.Renewal.Release(l.name, holder)
	defer func() { end(outcome) }()
	var lost error
	if !held {
		lost = l.rt.Renewal.LostCause(l.name, holder)
	}
	lostErr := func() error { return l.OpErr(report.OpRelease, fmt.Errorf("%w: %w", report.ErrNotHeld, lost)) }
	pub, err := l.rt.PublishCommand(ctx)
	switch {
	case err != nil && lost != nil:
		return renewal.NotHeld, 0, false, lostErr()
	case err != nil:
		return renewal.Unknown, 0, false, l.OpErr(report.OpRelease, err)
	}
	v := &vals{owner: owner, holder: holder, lease: lease, publish: pub,
		latch: keys.NewUnlockLatch(l.name)}
	var acks runtime.Acks
	var res rueidis.RedisResult
	if lost != nil {
		// Known lost: one short wait for the answer, since the owner may
		// hold the lock again through another Client; the answer waits
		// for nothing more.
		var answered bool
		if res, answered = l.releaseLost(ctx, v); !answered {
			return renewal.NotHeld, 1, false, lostErr()
		}
		sends = 1
	} else if o, yield := l.claim(last, owner); o != nil {
		v.yield = yield
		return l.transfer(ctx, v, o)
	} else {
		res, sends = l.resend(ctx, &acks, &l.kind.Unlock, v)
	}
	// The script may have written the latch whatever it answered.
	l.rt.DeleteLater(v.latch)
	n, err := res.AsInt64()
	if err == nil && n == l.kind.ExpiredReply && n != 0 {
		err = rueidis.Nil
	}
	switch {
	case rueidis.IsRedisNil(err) && lost != nil:
		outcome = renewal.NotHeld
		return outcome, sends, false, lostErr()
	case rueidis.IsRedisNil(err):
		outcome = renewal.NotHeld
		return outcome, sends, false, l.notHeld(ctx, owner)
	case err != nil:
		return renewal.Unknown, sends, false, l.Fail(ctx, report.OpRelease, err)
	case n == 1:
		outcome = renewal.Released
	default:
		outcome = renewal.Decremented
	}
	err = l.rt.CheckAcks(&acks)
	if n == 1 && l.kind.Upgrade != nil && l.holds(owner) > 0 && (err == nil || errors.Is(err, report.ErrReplication)) {
		l.rt.WakeAll(ctx, l.channel) // a downgrade: readers may enter, and nothing was published
	}
	return outcome, sends, false, l.opErrIf(report.OpRelease, err)
}

// resend sends the unlock until a reply comes back: a connection error
// leaves it unknown whether the server ran it, so the same request goes
// again under the same latch, which makes the repeats harmless. A
// partition's connection can fail several sends in a row while it is
// being replaced. It returns the last reply and how many sends there were;
// the Observer hears of every send after the first.
func (l *Common) resend(ctx context.Context, acks *runtime.Acks, call *Call, v *vals) (rueidis.RedisResult, int) {
	first := time.Now()
	for n, gap := 1, unlockPauseMin; ; n, gap = n+1, min(2*gap, unlockPauseMax) {
		res := l.exec(ctx, acks, call, v)
		replied := runtime.Answered(res) // nil ("not held") included
		if n > 1 && l.obs != nil {
			e := report.Event{Op: report.OpResend, Outcome: report.OutcomeOK, Attempts: n}
			if !replied {
				e.Outcome, e.Err = report.OutcomeError, res.Error()
			}
			l.observe(ctx, e)
		}
		if replied || ctx.Err() != nil || time.Since(first)+gap > unlockResendFor || wait.Pause(ctx, gap) != nil {
			return res, n
		}
	}
}

// lostUnlockWait bounds the wait for the answer to the Unlock of a hold
// known lost.
const lostUnlockWait = 200 * time.Millisecond

// releaseLost sends the unlock v of a hold known lost from the clean-up
// queue, in case the server still keeps it (a lost reply, a renewal the
// server ran late), and returns its answer if one comes within
// lostUnlockWait. The queue sends it until a watchdog timeout after the
// loss, by when the hold has expired anyway; the latch makes repeats
// harmless. The call is not made inline because rueidis holds a call
// that finds its connection being redialed until the dial ends, past the
// call's context: up to its dial timeout against a frozen server.
func (l *Common) releaseLost(ctx context.Context, caller *vals) (rueidis.RedisResult, bool) {
	v := *caller // the queue's own copy, so that an unlock's vals stay off the heap
	answer := make(chan rueidis.RedisResult, 1)
	l.rt.Cleanup(l.name, v.holder, time.Now().Add(l.rt.Cfg.Watchdog), func(ctx context.Context) error {
		res := l.exec(ctx, &runtime.Acks{}, &l.kind.Unlock, &v)
		if !runtime.Answered(res) {
			return res.Error()
		}
		l.rt.DeleteLater(v.latch)
		answer <- res // the only send: the step ends here
		return nil
	})
	l.rt.AwaitCleanup(ctx, l.name, v.holder, lostUnlockWait)
	select {
	case res := <-answer:
		return res, true
	default:
		return rueidis.RedisResult{}, false
	}
}

// claim returns the waiter of this Client to pass the owner's last hold
// to (last: l transfers, and this is the owner's last hold), if one stands
// ready, and whether the claim ends a run of transfers; never for a
// writer that keeps read holds (its release is a downgrade).
func (l *Common) claim(last bool, owner string) (*runtime.Offer, bool) {
	if !last || (l.kind.Upgrade != nil && l.holds(owner) > 0) {
		return nil, false
	}
	return l.rt.Transfers.Claim(l.name, l.kindName, time.Now(), l.kind.Fair == nil)
}

// transfer is unlock's release of the owner's last hold by passing it to
// the waiter of o, resent under its latch as an unlock is. Whatever the
// outcome, o's waiter hears it: the lock, a reason to try (the lock is not
// held as the Client thought), an unknown outcome to take back, or
// nothing at all when it is to go on waiting (the owner's holds remain,
// or the lock went to another waiter, who was told).
func (l *Common) transfer(ctx context.Context, v *vals, o *runtime.Offer) (outcome renewal.Outcome, sends int, passed bool, err error) {
	v.next, v.nextLease, v.nextGrace = o.Holder, o.Lease, o.Grace
	g, keep := runtime.Grant{Sent: time.Now()}, false
	defer func() {
		if keep {
			l.rt.Transfers.Unclaim(o)
		} else {
			l.rt.Transfers.Resolve(o, g)
			if g.Passed {
				// The new holder is next on this P, behind whatever the
				// caller does until it blocks (often: queue for the lock
				// again). It runs first, since it holds the lock now.
				goruntime.Gosched()
			}
		}
	}()
	res, sends := l.resend(ctx, &runtime.Acks{}, l.kind.Transfer, v)
	l.rt.DeleteLater(v.latch)
	if !runtime.Answered(res) {
		g.Unknown = true
		return renewal.Unknown, sends, false, l.OpErr(report.OpRelease, res.Error())
	}
	if reply, err := res.ToArray(); err == nil {
		code, token, ok := transferReply(reply)
		if !ok {
			// Not this script's answer: whatever ran, take it back.
			g.Unknown = true
			return renewal.Unknown, sends, false, l.OpErr(report.OpRelease, fmt.Errorf("transfer script answered %d values, {%d, %d}", len(reply), code, token))
		}
		g.Passed, g.Token = true, uint64(token)
		return renewal.Released, sends, true, nil
	}
	n, err := res.AsInt64()
	if err == nil && n == l.kind.ExpiredReply && n != 0 {
		err = rueidis.Nil
	}
	switch {
	case rueidis.IsRedisNil(err):
		return renewal.NotHeld, sends, false, l.notHeld(ctx, v.owner)
	case err != nil:
		g.Unknown = true
		return renewal.Unknown, sends, false, l.Fail(ctx, report.OpRelease, err)
	}
	keep = true
	switch n {
	case 0:
		return renewal.Decremented, sends, false, nil
	case 3:
		// Released, with its message, for another process's waiter.
		l.rt.Transfers.Yield(o, time.Now())
		return renewal.Released, sends, false, nil
	}
	if l.kind.Upgrade != nil {
		l.rt.WakeAll(ctx, l.channel) // a downgrade: readers may enter
	}
	return renewal.Released, sends, false, nil
}

// notHeld is the error of an unlock that the server answered "not held"
// for owner: an OtherOwnerError when this Client holds the lock for other
// owners of the kind, the error about a key that holds no lock (Misfit),
// or else one wrapping ErrNotHeld.
func (l *Common) notHeld(ctx context.Context, owner string) error {
	if holders := l.otherHolders(owner); len(holders) > 0 {
		return l.OpErr(report.OpRelease, &OtherOwnerError{Owner: ownerID(owner), Holders: holders})
	}
	if err := l.Misfit(ctx, report.OpRelease); err != nil {
		return err
	}
	return l.OpErr(report.OpRelease, report.ErrNotHeld)
}

// otherHolders returns the ids of the owners other than owner that this
// Client records as holding l: holds of l's kind (a read/write lock's
// readers for its read half, writers for its write half).
func (l *Common) otherHolders(owner string) []int64 {
	var ids []int64
	for _, holder := range l.rt.Renewal.Owners(l.name) {
		rest, ok := strings.CutPrefix(holder, l.rt.ID+":")
		if !ok || holder == owner+l.kind.Suffix {
			continue
		}
		if l.kind.Suffix != "" {
			if rest, ok = strings.CutSuffix(rest, l.kind.Suffix); !ok {
				continue
			}
		}
		if id, err := strconv.ParseInt(rest, 10, 64); err == nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// ownerID is the owner id at the end of an owner string.
func ownerID(owner string) int64 {
	id, _ := strconv.ParseInt(owner[strings.LastIndexByte(owner, ':')+1:], 10, 64)
	return id
}

// OtherOwnerError is the error of an Unlock by an owner that holds
// nothing of a lock that its Client holds for other owners: most often,
// a goroutine other than the one that locked. It wraps ErrNotHeld.
type OtherOwnerError struct {
	Owner   int64   // the owner that called Unlock
	Holders []int64 // the owners the Client holds the lock for
}

// Error names both owners and the ways to unlock from another goroutine.
func (e *OtherOwnerError) Error() string {
	held := "owner " + strconv.FormatInt(e.Holders[0], 10)
	if len(e.Holders) > 1 {
		ids := make([]string, len(e.Holders))
		for i, id := range e.Holders {
			ids[i] = strconv.FormatInt(id, 10)
		}
		held = "owners " + strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%v: owner %d holds nothing, but this Client holds the lock for %s "+
		"(an owner is the goroutine that locked, unless its context says otherwise); "+
		"unlock from the goroutine that locked, or lock with interlock.Lock and release the Hold it returns, "+
		"or lock and unlock with interlock.WithOwner(ctx, id): either works from any goroutine",
		report.ErrNotHeld, e.Owner, held)
}

// Unwrap returns ErrNotHeld.
func (e *OtherOwnerError) Unwrap() error { return report.ErrNotHeld }

// transferReply reads the transfer script's answer of a passed lock, {2,
// token}, without copying it: ok is false for anything else.
func transferReply(reply []rueidis.RedisMessage) (code, token int64, ok bool) {
	if len(reply) != 2 {
		return 0, 0, false
	}
	code, err1 := reply[0].AsInt64()
	token, err2 := reply[1].AsInt64()
	return code, token, err1 == nil && err2 == nil && code == 2 && token >= 0
}
