package lockcore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/report"
	"github.com/interlock-go/interlock/internal/runtime"
	"github.com/interlock-go/interlock/internal/wait"
)

// Request is an acquisition's terms: the lease its hold gets (0: the
// watchdog's, renewed), and how long it waits for it: Forever, until it
// holds it or its context ends, or else up to Wait (0: one try).
type Request struct {
	Lease   time.Duration
	Wait    time.Duration
	Forever bool
}

// waits reports whether r may wait at all.
func (r Request) waits() bool { return r.Forever || r.Wait > 0 }

// Acquire acquires as Lock (Forever) or TryLock do, and returns the fencing
// token of a ReplyToken kind's acquisition.
func Acquire(ctx context.Context, l *Common, r Request) (uint64, bool, error) {
	if !r.Forever {
		if err := l.checkTry(r.Wait, r.Lease); err != nil {
			return 0, false, err
		}
	} else if r.Lease != 0 && r.Lease < time.Millisecond {
		return 0, false, l.Invalid(report.OpAcquire, "lease %v must be at least 1ms", r.Lease)
	}
	return l.acquire(ctx, r)
}

// attempt is one acquisition's state across its tries.
type attempt struct {
	l             *Common
	owner, holder string
	lease, grace  time.Duration
	call          *Call          // the acquire script to send
	queues        bool           // call may queue the owner (a fair waiter)
	queued        bool           // a call that may have queued the owner was sent
	sends         int32          // acquire scripts sent (in the bools' padding)
	token         uint64         // the token of a ReplyToken acquisition
	offer         *runtime.Offer // standing for a transfer, made on first use
	// pending is the try whose caller stopped waiting for its reply: the
	// take-back and the leaving of the queue wait for it to be done.
	pending *runtime.Pending
}

// sendBound is a detached try's deadline (runtime.SendDetached): the lease
// or the watchdog timeout, whichever is longer, so that a short lease does not
// cut short a reply that a loaded server sends late.
func (a *attempt) sendBound() time.Duration { return max(a.lease, a.l.rt.Cfg.Watchdog) }

// execAcquire sends an acquire script so that a take-back cannot overtake
// it. Outside a cluster every script goes on one connection in the order
// of the calls (runtime.Ordered), so it is sent as it is; on a cluster it
// is sent detached from ctx's end when that can come
// (runtime.SendDetached). The pipelines of safe and replica-sync modes
// need neither: rueidis sends them on a dedicated connection, which it
// closes when ctx ends.
func (l *Common) execAcquire(ctx context.Context, acks *runtime.Acks, call *Call, v *vals, bound time.Duration) (rueidis.RedisResult, *runtime.Pending) {
	if ctx.Done() == nil || l.rt.Ordered() || l.rt.Cfg.ReplicaAcks > 0 || l.rt.Cfg.ReplicaSync {
		return l.exec(ctx, acks, call, v), nil
	}
	ks, args := l.fill(nil, call, v) // the send may outlive this call
	return l.rt.SendDetached(ctx, bound, func(ctx context.Context) rueidis.RedisResult {
		return l.rt.Send(ctx, call.Script(), ks, args)
	})
}

// awaitSent waits until p, a try whose caller stopped waiting for its
// reply, is done, or until ctx ends (errSendPending).
func awaitSent(ctx context.Context, p *runtime.Pending) error {
	if p == nil {
		return nil
	}
	select {
	case <-p.Done():
		return nil
	case <-ctx.Done():
		return errSendPending
	}
}

// errSendPending is the clean-up step's "try again" while the acquisition
// it takes back has not answered yet.
var errSendPending = errors.New("the acquisition to take back has not answered yet")

// acquire runs the waiting algorithm of internal/wait with the kind's
// acquire script; a fair kind takes acquireFair instead. The Observer, if
// any, hears of it once it ended.
func (l *Common) acquire(ctx context.Context, r Request) (uint64, bool, error) {
	owner, holder, err := l.owner(ctx, report.OpAcquire)
	if err != nil {
		return 0, false, err
	}
	a := &attempt{l: l, owner: owner, holder: holder, lease: r.Lease, call: &l.kind.Acquire}
	if l.obs == nil {
		return a.run(ctx, r)
	}
	start := time.Now()
	token, ok, err := a.run(ctx, r)
	outcome, cause := acquireOutcome(ok, err, !r.waits())
	l.observe(ctx, report.Event{Op: report.OpAcquire, Outcome: outcome, Duration: time.Since(start), Attempts: int(a.sends), Err: cause})
	return token, ok, err
}

// acquireOutcome is the Event outcome of an acquisition that returned ok
// and err, and the error the Event carries; try: it was not to wait.
func acquireOutcome(ok bool, err error, try bool) (string, error) {
	switch {
	case ok:
		return report.OutcomeAcquired, nil
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return report.OutcomeCancelled, nil
	case err != nil:
		return report.OutcomeError, err
	case try:
		return report.OutcomeBusy, nil
	}
	return report.OutcomeTimedOut, nil
}

// run is the acquisition, with the owner resolved. A ctx that has ended
// already ends it before anything is sent.
func (a *attempt) run(ctx context.Context, r Request) (uint64, bool, error) {
	l := a.l
	if err := ctx.Err(); err != nil {
		return 0, false, err
	}
	if err := l.rt.CheckPubSub(ctx); err != nil {
		return 0, false, l.OpErr(report.OpAcquire, err) // before a hold no release could end
	}
	if l.kind.Fair != nil {
		ok, err := a.acquireFair(ctx, r)
		return 0, ok, err
	}
	if err := a.refuseUpgrade(); err != nil {
		return 0, false, err
	}
	waits := r.waits()
	// A holder re-enters at once; a reader may share with readers that
	// this process's parked writers wait behind.
	first := l.holds(a.holder) == 0
	spec := wait.Spec{
		Hub:     l.rt.Hub,
		Channel: l.channel,
		Forever: r.Forever,
		Queue:   !l.kind.ReadHalf && first,
		Spin:    l.backoff,
		MaxWait: l.poll,
		Try:     a.try,
		Waiters: l.rt.Waiters(),
	}
	if !r.Forever {
		spec.Deadline = time.Now().Add(r.Wait)
	}
	if first && l.transfers() {
		spec.Transfer = a
	}
	var err error
	if waits && l.backoff == nil {
		if spec.Sharded, err = l.rt.Sharded(ctx); err != nil {
			return 0, false, l.OpErr(report.OpAcquire, err)
		}
		if l.kind.Upgrade != nil {
			l.rt.CountWait(l.name, a.owner, 1)
			defer l.rt.CountWait(l.name, a.owner, -1)
		}
	}
	ok, err := wait.Acquire(ctx, spec)
	if err != nil || !ok {
		return 0, false, l.opErrIf(report.OpAcquire, err)
	}
	return a.token, true, nil
}

// transfers reports whether a releasing holder of this Client may pass
// the lock to this attempt while it waits: the lock transfers, and the
// owner holds none of it.
func (a *attempt) transfers() bool { return a.l.transfers() && a.l.holds(a.holder) == 0 }

// transfers reports whether releases of l may pass it to a waiter of this
// Client: a kind with a transfer script, outside safe and replica-sync
// modes (whose acks a transfer would have to wait for on the waiter's
// behalf).
func (l *Common) transfers() bool {
	return l.kind.Transfer != nil && l.rt.Cfg.ReplicaAcks == 0 && !l.rt.Cfg.ReplicaSync
}

// Stand offers this attempt to a releasing holder of this Client
// (wait.Transfer).
func (a *attempt) Stand(wake func()) {
	a.l.rt.Transfers.Stand(a.newOffer(), a.l.name, a.l.kindName, wake)
}

// newOffer returns the attempt's offer, made on first use.
func (a *attempt) newOffer() *runtime.Offer {
	if a.offer == nil {
		lease := a.lease
		if lease == 0 {
			lease = a.l.rt.Cfg.Watchdog
		}
		a.offer = &runtime.Offer{Holder: a.holder, Lease: lease, Grace: a.grace}
	}
	return a.offer
}

// Taken withdraws the offer and takes what a claim of it gave
// (wait.Transfer): a passed lock is recorded as a successful try's is; a
// transfer without an answer is taken back like a lost acquisition, and
// the wait goes on. A caller whose ctx ends before the outcome leaves it
// to the clean-up queue, which takes back a lock passed too late.
func (a *attempt) Taken(ctx context.Context) (bool, error) {
	l, t := a.l, a.l.rt.Transfers
	if a.offer == nil || !t.Withdraw(a.offer) {
		return false, nil
	}
	g, ok := t.Await(ctx, a.offer)
	if !ok {
		o := a.offer
		a.offer = nil
		l.rt.Cleanup(l.name, a.holder, time.Now().Add(o.Lease+unlockResendFor), func(ctx context.Context) error {
			g, done := t.Result(o)
			switch {
			case !done:
				return errTransferPending
			case g.Passed || g.Unknown:
				_, err := a.undoNow(ctx, 1)
				return err
			}
			return nil
		})
		return false, ctx.Err()
	}
	switch {
	case g.Unknown:
		a.undo(ctx, l.holds(a.holder)+1)
		return false, nil
	case !g.Passed:
		return false, nil
	}
	if err := l.rt.Renewal.HoldLabeled(l.name, a.holder, l.kind.Renew, a.lease, g.Sent, l.label); err != nil {
		a.undo(ctx, 1)
		return false, report.ErrClosed
	}
	a.token = g.Token
	a.queued = false // a fair waiter left the queue with the lock
	return true, nil
}

// HoldOff is what is left of a yield of this lock (wait.Transfer).
func (a *attempt) HoldOff() time.Duration { return a.l.rt.Transfers.HoldOff(a.l.name, a.l.kindName) }

// errTransferPending is the clean-up step's "try again" while the
// outcome of a transfer its waiter left is still to come.
var errTransferPending = errors.New("a transfer to a waiter that left has not answered yet")

// opErrIf is opErr for a possibly nil error.
func (l *Common) opErrIf(op report.Op, err error) error {
	if err == nil {
		return nil
	}
	return l.OpErr(op, err)
}

// refuseUpgrade returns the kind's Upgrade error when this Client records
// read holds of the owner but no write hold.
func (a *attempt) refuseUpgrade() error {
	l := a.l
	if l.kind.Upgrade != nil && l.holds(a.owner) > 0 && l.holds(a.holder) == 0 {
		return l.OpErr(report.OpAcquire, l.kind.Upgrade)
	}
	return nil
}

// try sends the acquire script once. An acquisition is recorded with the
// renewal Scheduler. When the reply is lost (ctx ended, or the connection
// broke after the write) the script may have run: undo takes it back. In
// safe mode an acquisition too few replicas acknowledged is taken back too.
func (a *attempt) try(ctx context.Context) (bool, time.Duration, error) {
	l := a.l
	if err := a.refuseUpgrade(); err != nil {
		return false, 0, err
	}
	if l.rt.Closed() {
		return false, 0, report.ErrClosed
	}
	if err := l.rt.Settle(ctx, l.name, a.holder); err != nil {
		return false, 0, l.OpErr(report.OpAcquire, fmt.Errorf("taking back an earlier attempt: %w", err))
	}
	var acks runtime.Acks
	lease := a.lease
	if lease == 0 {
		lease = l.rt.Cfg.Watchdog
	}
	if a.queues {
		a.queued = true
	}
	sent := time.Now()
	a.sends++
	res, pending := l.execAcquire(ctx, &acks, a.call, &vals{owner: a.owner, holder: a.holder, lease: lease, grace: a.grace}, a.sendBound())
	if err := res.Error(); err != nil && !rueidis.IsRedisNil(err) {
		re, isRedisErr := rueidis.IsRedisErr(err)
		switch {
		case !isRedisErr:
			a.pending = pending
			a.undo(ctx, l.holds(a.holder)+1)
		case l.kind.Reentered != nil && strings.Contains(re.Error(), ReenterToken):
			a.queued = false // the script refused before queueing anyone
			return false, 0, l.OpErr(report.OpAcquire, l.kind.Reentered)
		}
		return false, 0, l.Fail(ctx, report.OpAcquire, err)
	}
	ok, retryIn, err := a.parse(ctx, res)
	if err != nil || !ok {
		return false, retryIn, err
	}
	if err := l.rt.CheckAcks(&acks); err != nil {
		a.undo(ctx, l.holds(a.holder)+1)
		err = l.OpErr(report.OpAcquire, err)
		if l.obs != nil && errors.Is(err, report.ErrReplication) {
			l.observe(ctx, report.Event{Op: report.OpRefused, Outcome: report.OutcomeError, Err: err})
		}
		return false, 0, err
	}
	if err := l.rt.Renewal.HoldLabeled(l.name, a.holder, l.kind.Renew, a.lease, sent, l.label); err != nil {
		a.undo(ctx, 1)
		return false, 0, report.ErrClosed
	}
	if l.kind.ReadHalf && l.rt.Waiting(l.name, a.owner) {
		// This owner's write acquisition waits, now for this very hold:
		// wake it to fail with the upgrade error.
		l.rt.WakeAll(ctx, l.channel)
	}
	return true, retryIn, nil
}

// parse reads the acquire script's reply. Busy without a TTL, which no
// live lock of a Redisson client has, may be a hash that is no lock at
// all: that is refused rather than waited for.
func (a *attempt) parse(ctx context.Context, r rueidis.RedisResult) (bool, time.Duration, error) {
	if a.l.kind.Reply == ReplyToken {
		return a.parseToken(ctx, r)
	}
	ttl, err := r.AsInt64()
	switch {
	case rueidis.IsRedisNil(err):
		return true, 0, nil
	case err != nil:
		return false, 0, a.l.OpErr(report.OpAcquire, err)
	case ttl < 0:
		if err := a.l.Misfit(ctx, report.OpAcquire); err != nil {
			return false, 0, err
		}
	}
	return false, time.Duration(ttl) * time.Millisecond, nil
}

// parseToken reads {-1, token} (acquired) or {pttl, -1} (busy). Only keys
// written by something other than a lock client give anything else:
// {-1, -1} is busy on a hash without a TTL, or acquired with token -1 from
// a counter set to -2; any other token below 1 is unusable. The
// count-checked undo tells them apart, releasing only a hold this attempt
// took.
func (a *attempt) parseToken(ctx context.Context, r rueidis.RedisResult) (bool, time.Duration, error) {
	l := a.l
	reply, err := r.AsIntSlice()
	if err == nil && len(reply) != 2 {
		err = fmt.Errorf("acquire script answered %d values, want 2", len(reply))
	}
	if err != nil {
		return false, 0, l.OpErr(report.OpAcquire, err)
	}
	pttl, t := reply[0], reply[1]
	switch {
	case pttl == -1 && t >= 1:
		a.token = uint64(t)
		return true, 0, nil
	case t == -1 && pttl != -1:
		return false, time.Duration(pttl) * time.Millisecond, nil
	}
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
	defer cancel()
	took, err := a.undoNow(uctx, l.holds(a.holder)+1)
	switch {
	case err != nil:
		return false, 0, l.OpErr(report.OpAcquire, fmt.Errorf("unclear reply {%d, %d}, and taking it back failed: %w", pttl, t, err))
	case t == -1 && !took:
		if err := l.Misfit(ctx, report.OpAcquire); err != nil {
			return false, 0, err
		}
		return false, -1, nil // busy, and the lock has no TTL: wait for a message
	}
	return false, 0, l.OpErr(report.OpAcquire, fmt.Errorf("the token counter %s gave token %d; fencing tokens start at 1 (was the key overwritten?)", l.keys[0], t))
}

// undo takes back what a try may have acquired, if the holder's count on
// the server is expected. The Client's clean-up goroutine runs it, retrying
// until the hold would have expired anyway, and the holder's next try waits
// for it, so it never lands on a newer hold. The caller waits for it at
// most until its deadline (runtime.AwaitCleanup), even when Redis is
// frozen.
func (a *attempt) undo(ctx context.Context, expected int) {
	lease := a.lease
	if lease <= 0 {
		lease = a.l.rt.Cfg.Watchdog
	}
	until := time.Now().Add(lease)
	pending := a.pending
	if pending != nil {
		// It may run as late as its send gives up, and hold for a lease
		// from then.
		until = until.Add(a.sendBound())
	}
	a.l.rt.Cleanup(a.l.name, a.holder, until, func(ctx context.Context) error {
		if err := awaitSent(ctx, pending); err != nil {
			return err
		}
		_, err := a.undoNow(ctx, expected)
		if a.l.obs != nil {
			a.l.observe(context.Background(), undoEvent(err))
		}
		return err
	})
	a.l.rt.AwaitCleanup(ctx, a.l.name, a.holder, undoTimeout)
}

// undoEvent is the Event of one try of the undo queue that ended with err.
func undoEvent(err error) report.Event {
	if err != nil {
		return report.Event{Op: report.OpUndo, Outcome: report.OutcomeError, Err: err}
	}
	return report.Event{Op: report.OpUndo, Outcome: report.OutcomeOK}
}

// undoNow sends the undo script and reports whether it released a hold.
// A token the acquisition took stays taken: tokens only need to increase.
func (a *attempt) undoNow(ctx context.Context, expected int) (bool, error) {
	pub, err := a.l.rt.PublishCommand(ctx)
	if err != nil {
		return false, err
	}
	r := a.l.send(ctx, &a.l.kind.Undo, &vals{owner: a.owner, holder: a.holder, publish: pub, expected: expected})
	if err := Done(r); err != nil {
		return false, err
	}
	n, _ := r.AsInt64()
	return n == 1, nil
}

// Token reads a ReplyToken kind's counter: the latest token handed out,
// 0 when none was.
func Token(ctx context.Context, l *Common) (uint64, error) {
	if l.err != nil {
		return 0, l.OpErr(report.OpInspect, l.err)
	}
	res, err := l.probeOne(ctx, l.rt.RC.B().Get().Key(l.keys[0]).Build())
	if err != nil {
		return 0, l.OpErr(report.OpInspect, err)
	}
	s, err := res.ToString()
	switch {
	case rueidis.IsRedisNil(err):
		return 0, nil
	case err != nil:
		return 0, l.Fail(ctx, report.OpInspect, err)
	}
	t, err := strconv.ParseUint(s, 10, 64)
	if err != nil || t == 0 {
		return 0, l.OpErr(report.OpInspect, fmt.Errorf("%w: %s holds %s, not a fencing token", report.ErrInvalid, l.keys[0], quote(s)))
	}
	return t, nil
}
