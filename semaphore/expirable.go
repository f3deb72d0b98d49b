package semaphore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/lockcore"
	"github.com/interlock-go/interlock/internal/pubsub"
	"github.com/interlock-go/interlock/internal/renewal"
	"github.com/interlock-go/interlock/internal/report"
	"github.com/interlock-go/interlock/internal/runtime"
	"github.com/interlock-go/interlock/internal/script"
)

// NoExpiry is the lease of a permit that never expires (Redisson's -1),
// and what LeaseLeft returns for one: interlock.NoExpiry, which the TTL
// methods return for a semaphore that never expires.
const NoExpiry = interlock.NoExpiry

const (
	// never is the score of a permit without a lease.
	never = script.NeverExpires
	// forever is how long this Client records a NoExpiry permit.
	forever = 100 * 365 * 24 * time.Hour
)

// Expirable is a semaphore whose permits have ids and leases, shared with
// Redisson's RPermitExpirableSemaphore of the same name. A permit whose
// lease ran out comes back the next time any client, Go or Java, operates
// on the semaphore. A permit acquired with lease 0 is held by the watchdog:
// renewed in the Client's renewal tick until it is released, so that it
// comes back by itself one watchdog timeout after its holder died.
type Expirable struct {
	o       lockcore.Object
	timeout string // the zset of acquired permits, {name}:timeout
}

// NewExpirable returns the expirable semaphore called name. A bad name or
// a nil client is reported by every method, before anything is sent.
func NewExpirable(c *interlock.Client, name string) *Expirable {
	e := &Expirable{o: lockcore.NewObject(c, string(interlock.KindExpirable), name, keys.SemaphoreChannel)}
	e.timeout = keys.Suffix(e.o.Key(), keys.PermitsSuffix)
	e.o.Expect(e.timeout, lockcore.ShapeZSet)
	return e
}

// Name returns the semaphore's name as given: its Redis key, unless the
// Client maps names (interlock.WithNameMapper).
func (e *Expirable) Name() string { return e.o.Name() }

// renewTask renews watchdog permits: each entry is a permit id (Owner) in
// a timeout zset (Key), extended from the Client's wall clock.
func renewTask(rt *runtime.Runtime) *renewal.Task {
	return &renewal.Task{
		Script: script.PESRenew(),
		Lost:   ErrPermitLost,
		// A late Release learns from the loss that the lease ran out.
		KeepLosses: true,
		Args: func(lease time.Duration, chunk []*renewal.Entry) (keys, argv []string) {
			now := rt.WallNow().UnixMilli()
			keys = make([]string, len(chunk))
			argv = make([]string, len(chunk)+2)
			argv[0] = strconv.FormatInt(now+lease.Milliseconds(), 10)
			argv[1] = strconv.FormatInt(now, 10)
			for i, e := range chunk {
				keys[i] = e.Key
				argv[i+2] = e.Owner
			}
			return keys, argv
		},
	}
}

func (e *Expirable) task() *renewal.Task { return e.o.RT().Task("semaphore.permit", renewTask) }

// now is the Client's wall clock in epoch ms, the clock leases are kept in.
func (e *Expirable) now() int64 { return e.o.RT().WallNow().UnixMilli() }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TrySetPermits creates the semaphore with permits free, and reports
// whether it did: it changes nothing when the semaphore exists.
func (e *Expirable) TrySetPermits(ctx context.Context, permits int) (bool, error) {
	return trySet(ctx, &e.o, permits, 0)
}

// SetPermits makes permits the total, free and acquired together, freeing
// or taking away the difference; expired permits not yet reclaimed count
// as acquired.
func (e *Expirable) SetPermits(ctx context.Context, permits int) error {
	if err := e.o.Ready(report.OpSet); err != nil {
		return err
	}
	if permits < 0 {
		return e.o.Invalid(report.OpSet, "%d permits: the count must not be negative", permits)
	}
	pub, err := e.o.Publish(ctx)
	if err != nil {
		return e.o.OpErr(report.OpSet, err)
	}
	res := e.o.Run(ctx, script.PESSetPermits(), []string{e.o.Key(), e.o.Channel(), e.timeout}, strconv.Itoa(permits), pub)
	return e.o.Fail(ctx, report.OpSet, lockcore.Done(res))
}

// AddPermits adds delta free permits, or takes them away when delta is
// negative. It clears the key's TTL.
func (e *Expirable) AddPermits(ctx context.Context, delta int) error {
	return add(ctx, &e.o, script.PESAdd(), delta)
}

// Available returns the number of free permits, after reclaiming expired
// ones.
func (e *Expirable) Available(ctx context.Context) (int64, error) {
	return e.count(ctx, script.PESAvailable())
}

// Permits returns the total number of permits, free and acquired, after
// reclaiming expired ones; 0 when the semaphore does not exist.
func (e *Expirable) Permits(ctx context.Context) (int64, error) {
	return e.count(ctx, script.PESPermits())
}

// Acquired returns the number of acquired permits, after reclaiming
// expired ones.
func (e *Expirable) Acquired(ctx context.Context) (int64, error) {
	return e.count(ctx, script.PESAcquired())
}

func (e *Expirable) count(ctx context.Context, s *script.Script) (int64, error) {
	if err := e.o.Ready(report.OpInspect); err != nil {
		return 0, err
	}
	pub, err := e.o.Publish(ctx)
	if err != nil {
		return 0, e.o.OpErr(report.OpInspect, err)
	}
	// Read what the keys hold in the same round trip: pes_acquired reads
	// only the permits' zset.
	res, err := e.o.ProbeScript(ctx, s, []string{e.o.Key(), e.timeout, e.o.Channel()}, []string{itoa(e.now()), pub})
	if err != nil {
		return 0, e.o.OpErr(report.OpInspect, err)
	}
	n, err := lockcore.Int(res)
	if err != nil {
		return 0, e.o.Fail(ctx, report.OpInspect, err)
	}
	return n, nil
}

// checkLease validates an acquisition's lease: 0 (the watchdog), NoExpiry,
// or at least 1ms.
func (e *Expirable) checkLease(op report.Op, lease time.Duration) error {
	if lease != 0 && lease != NoExpiry && lease < time.Millisecond {
		return e.o.Invalid(op, "lease %v must be at least 1ms, 0 (the watchdog) or NoExpiry", lease)
	}
	return nil
}

// expiry returns the score a permit acquired now with lease gets.
func (e *Expirable) expiry(now int64, lease time.Duration) string {
	switch lease {
	case NoExpiry:
		return never
	case 0:
		lease = e.o.RT().Cfg.Watchdog
	}
	return itoa(now + lease.Milliseconds())
}

// Acquire takes n permits with lease (0: held by the watchdog; NoExpiry:
// never expiring), waiting until they are free or ctx ends.
func (e *Expirable) Acquire(ctx context.Context, n int, lease time.Duration) ([]PermitID, error) {
	ids, _, err := e.acquire(ctx, lockcore.Await{Permits: n, Forever: true}, lease)
	return ids, err
}

// TryAcquire is Acquire waiting at most wait (0: one attempt); ok is false
// when the permits were not free in time.
func (e *Expirable) TryAcquire(ctx context.Context, n int, wait, lease time.Duration) (ids []PermitID, ok bool, err error) {
	if wait < 0 {
		return nil, false, e.o.Invalid(report.OpAcquire, "wait %v must not be negative", wait)
	}
	return e.acquire(ctx, lockcore.Await{Permits: n, Wait: wait}, lease)
}

// acquire waits as w says for w.Permits permits, each with lease.
func (e *Expirable) acquire(ctx context.Context, w lockcore.Await, lease time.Duration) ([]PermitID, bool, error) {
	n := w.Permits
	if err := e.o.Ready(report.OpAcquire); err != nil {
		return nil, false, err
	}
	if n < 1 {
		return nil, false, e.o.Invalid(report.OpAcquire, "%d permits: at least 1 is needed", n)
	}
	if err := e.checkLease(report.OpAcquire, lease); err != nil {
		return nil, false, err
	}
	if err := ctx.Err(); err != nil {
		return nil, false, err // ended already: nothing is sent
	}
	pub, err := e.o.Publish(ctx)
	if err != nil {
		return nil, false, e.o.OpErr(report.OpAcquire, err)
	}
	var ids []PermitID
	w.Policy, w.HandOn = pubsub.WakeCount, n > 1
	ok, err := e.o.Wait(ctx, w, func(ctx context.Context) (bool, time.Duration, error) {
		got, ok, retryIn, err := e.try(ctx, n, lease, pub)
		if ok {
			ids = got
		}
		return ok, retryIn, err
	})
	if err != nil || !ok {
		return nil, false, e.o.Fail(ctx, report.OpAcquire, err)
	}
	return ids, true, nil
}

// try sends one acquire attempt with fresh ids, under a fresh receipt.
// When busy it returns how long until the nearest lease runs out (-1: none
// will). A reply that was lost, or too few replicas in safe mode, is taken
// back through the receipt, so the permits are neither kept nor given back
// twice, even when the attempt reaches Redis after its undo.
func (e *Expirable) try(ctx context.Context, n int, lease time.Duration, pub string) ([]PermitID, bool, time.Duration, error) {
	if e.o.RT().Closed() {
		return nil, false, 0, interlock.ErrClosed
	}
	ids := newPermitIDs(n)
	receipt := e.o.Receipt()
	now := e.now()
	args := append(make([]string, 0, 6+n), strconv.Itoa(n), e.expiry(now, lease), itoa(now), never, pub)
	for _, id := range ids {
		args = append(args, id.raw())
	}
	args = append(args, receiptTTL)
	sent := time.Now()
	res, acked := e.o.RunAcked(ctx, script.PESAcquire(), []string{e.o.Key(), e.timeout, e.o.Channel(), receipt}, args...)
	reply, err := res.ToString()
	switch {
	case rueidis.IsRedisNil(err):
		return nil, false, -1, nil
	case lockcore.Lost(err):
		e.undo(receipt, ids, pub)
		return nil, false, 0, err
	case err != nil:
		return nil, false, 0, err
	case strings.HasPrefix(reply, ":"):
		at, perr := strconv.ParseInt(reply[1:], 10, 64)
		if perr != nil {
			return nil, false, 0, fmt.Errorf("acquire script answered %q", reply)
		}
		return nil, false, max(time.Duration(at-e.now())*time.Millisecond, time.Millisecond), nil
	case reply != "OK":
		return nil, false, 0, fmt.Errorf("acquire script answered %q", reply)
	}
	if err := acked(); err != nil {
		e.undo(receipt, ids, pub)
		return nil, false, 0, err
	}
	hold := lease
	if lease == NoExpiry {
		hold = forever
	}
	for _, id := range ids {
		if err := e.o.RT().Renewal.HoldLabeled(e.timeout, id.raw(), e.task(), hold, sent, e.o.Label()); err != nil {
			e.undo(receipt, ids, pub)
			return nil, false, 0, interlock.ErrClosed
		}
	}
	e.o.Answered(receipt)
	return ids, true, 0, nil
}

// undo takes back, in the background, the acquisition of ids under
// receipt, if it happened, and makes sure a late copy of it takes nothing.
func (e *Expirable) undo(receipt string, ids []PermitID, pub string) {
	for _, id := range ids {
		e.forget(id, renewal.Released)
	}
	args := append(make([]string, 0, 3+len(ids)), strconv.Itoa(len(ids)), pub, receiptTTL)
	for _, id := range ids {
		args = append(args, id.raw())
	}
	keys := []string{e.o.Key(), e.o.Channel(), e.timeout, receipt}
	e.o.UndoLater(receipt, time.Now().Add(lockcore.ReceiptTTL), func(ctx context.Context) error {
		return lockcore.Done(e.o.Run(ctx, script.PESUndoAcquire(), keys, args...))
	})
}

// forget ends this Client's record of permit id with outcome o; an
// outcome the server gave also ends the record of its loss, which has
// been reported.
func (e *Expirable) forget(id PermitID, o renewal.Outcome) {
	_, held, end := e.o.RT().Renewal.Release(e.timeout, id.raw())
	if held {
		end(o)
	}
	if o != renewal.Unknown {
		e.o.RT().Renewal.ForgetLoss(e.timeout, id.raw())
	}
}

// releaseCall is Redisson's release of one id, or of a list, under
// receipt, so that a resend answers what the first send did.
func (e *Expirable) releaseCall(ids []PermitID, pub, receipt string) (*script.Script, []string, []string) {
	keys := []string{e.o.Key(), e.o.Channel(), e.timeout, receipt}
	now := itoa(e.now())
	if len(ids) == 1 {
		return script.PESReleaseOne(), keys, []string{ids[0].raw(), "1", now, pub, receiptTTL}
	}
	args := append(make([]string, 0, 4+len(ids)), strconv.Itoa(len(ids)), now, pub)
	for _, id := range ids {
		args = append(args, id.raw())
	}
	return script.PESRelease(), keys, append(args, receiptTTL)
}

// Release gives back every one of ids, or none of them. It fails with
// ErrPermitExpired when one's lease ran out (that permit comes back by the
// reclaim), whether or not someone reclaimed it first, for a permit this
// Client acquired (it remembers a lost permit for up to ten minutes); for
// another's, only while the expired permit is not yet reclaimed. It fails
// with ErrUnknownPermit when one is not acquired otherwise. Like
// interlock.Locker's Unlock it still releases given a ctx that has
// already ended, for up to 5s.
func (e *Expirable) Release(ctx context.Context, ids ...PermitID) error {
	ok, why, err := e.tryRelease(ctx, ids)
	if err == nil && !ok {
		err = e.o.OpErr(report.OpRelease, why)
	}
	return err
}

// TryRelease is Release reporting a permit that is not acquired, or has
// expired, as false rather than as an error; it still releases given an
// ended ctx, as Release does.
func (e *Expirable) TryRelease(ctx context.Context, ids ...PermitID) (bool, error) {
	ok, _, err := e.tryRelease(ctx, ids)
	return ok, err
}

// tryRelease releases ids; when it could not, why says which id was
// unknown or expired.
func (e *Expirable) tryRelease(ctx context.Context, ids []PermitID) (ok bool, why error, err error) {
	if err := e.checkIDs(ids); err != nil {
		return false, nil, err
	}
	rctx, cancel := lockcore.Detach(ctx)
	defer cancel()
	start := e.o.Begin()
	var since time.Time
	if !start.IsZero() {
		since = e.o.RT().Renewal.HeldSince(e.timeout, ids[0].raw())
	}
	ok, why, err = e.release(rctx, ids)
	e.o.Released(ctx, start, since, len(ids), ok, err)
	return ok, why, err
}

// release is tryRelease with the ids checked.
func (e *Expirable) release(ctx context.Context, ids []PermitID) (ok bool, why error, err error) {
	pub, err := e.o.Publish(ctx)
	if err != nil {
		return false, nil, e.o.OpErr(report.OpRelease, err)
	}
	// When the release of one id fails, the id is gone either way: an
	// expired permit is given back, an unknown one was not there. For ids
	// this Client acquired it knows which; for others their scores are
	// read in the same pipeline, before the release.
	rc := e.o.RT().RC
	receipt := e.o.Receipt()
	sc, keys, args := e.releaseCall(ids, pub, receipt)
	known, _ := e.o.RT().Renewal.Expired(e.timeout, ids[0].raw())
	foreign := len(ids) == 1 && !known
	send := func(cmd rueidis.Completed) (score, res rueidis.RedisResult) {
		if !foreign {
			return rueidis.RedisResult{}, rc.Do(ctx, cmd)
		}
		r := rc.DoMulti(ctx, script.Resendable(rc.B().Zscore().Key(e.timeout).Member(ids[0].raw()).Build()), cmd)
		return r[0], r[1]
	}
	score, res := send(sc.EvalSHA(rc, keys, args))
	if script.IsNoScript(res.Error()) {
		score, res = send(sc.Eval(rc, keys, args))
	}
	n, err := lockcore.Int(res)
	if err != nil {
		if !runtime.Answered(res) {
			// No answer: the permits may be back already. Renewing them
			// could keep permits nobody releases; they live out their
			// validity unless a retry answers first.
			for _, id := range ids {
				e.forget(id, renewal.Unknown)
			}
		}
		return false, nil, e.o.Fail(ctx, report.OpRelease, err)
	}
	e.o.Answered(receipt)
	if n == int64(len(ids)) {
		for _, id := range ids {
			e.forget(id, renewal.Released)
		}
		return true, nil, nil
	}
	if err := e.o.Misfit(ctx, report.OpRelease); err != nil {
		return false, nil, err // no permits: the keys hold something else
	}
	switch {
	case foreign:
		why = fmt.Errorf("%w: %s", ErrUnknownPermit, ids[0])
		if at, err := score.AsFloat64(); err == nil && int64(at) <= e.now() {
			why = fmt.Errorf("%w: %s", ErrPermitExpired, ids[0])
		}
	case len(ids) == 1:
		why = fmt.Errorf("%w: %s", ErrPermitExpired, ids[0])
		if _, expired := e.o.RT().Renewal.Expired(e.timeout, ids[0].raw()); !expired {
			// Still valid by this Client's records, or found gone by its
			// renewal: someone else released it.
			why = fmt.Errorf("%w: %s was released by another client", ErrUnknownPermit, ids[0])
		}
		e.forget(ids[0], renewal.NotHeld)
	default:
		why = e.whyNot(ctx, ids)
	}
	return false, why, nil
}

// whyNot explains a failed release of several ids, which changed nothing:
// it names the first id that is unknown or expired.
func (e *Expirable) whyNot(ctx context.Context, ids []PermitID) error {
	raw := make([]string, len(ids))
	for i, id := range ids {
		raw[i] = id.raw()
	}
	scores, err := e.scores(ctx, raw)
	if err != nil {
		return fmt.Errorf("%w: one of %d ids (reading which failed: %w)", ErrUnknownPermit, len(ids), err)
	}
	now := e.now()
	for i, s := range scores {
		at, err := s.AsFloat64()
		switch {
		case err != nil:
			err = fmt.Errorf("%w: %s", ErrUnknownPermit, ids[i])
			if _, expired := e.o.RT().Renewal.Expired(e.timeout, ids[i].raw()); expired {
				err = fmt.Errorf("%w: %s", ErrPermitExpired, ids[i]) // and reclaimed since
			}
			e.forget(ids[i], renewal.NotHeld)
			return err
		case int64(at) <= now:
			e.forget(ids[i], renewal.NotHeld)
			return fmt.Errorf("%w: %s", ErrPermitExpired, ids[i])
		}
	}
	return fmt.Errorf("%w: one of %d ids was released meanwhile", ErrUnknownPermit, len(ids))
}

// scores reads the expiry times of ids in the sorted set of acquired
// permits, a null for an id it lacks: ZMSCORE, or on a server without it
// (Redis 6.0) one ZSCORE per id in a single pipeline.
func (e *Expirable) scores(ctx context.Context, ids []string) ([]rueidis.RedisMessage, error) {
	rc := e.o.RT().RC
	scores, err := rc.Do(ctx, script.Resendable(rc.B().Zmscore().Key(e.timeout).Member(ids...).Build())).ToArray()
	if !script.IsUnknownCommand(err) {
		return scores, err
	}
	cmds := make(rueidis.Commands, len(ids))
	for i, id := range ids {
		cmds[i] = script.Resendable(rc.B().Zscore().Key(e.timeout).Member(id).Build())
	}
	scores = make([]rueidis.RedisMessage, len(ids))
	for i, res := range rc.DoMulti(ctx, cmds...) {
		m, err := res.ToMessage()
		if err != nil && !rueidis.IsRedisNil(err) {
			return nil, err
		}
		scores[i] = m
	}
	return scores, nil
}

// checkIDs validates a list of ids to release.
func (e *Expirable) checkIDs(ids []PermitID) error {
	if err := e.o.Ready(report.OpRelease); err != nil {
		return err
	}
	if len(ids) == 0 {
		return e.o.Invalid(report.OpRelease, "no permit ids")
	}
	seen := make(map[PermitID]bool, len(ids))
	for _, id := range ids {
		if seen[id] {
			return e.o.Invalid(report.OpRelease, "permit id %s given twice", id)
		}
		seen[id] = true
	}
	return nil
}

// UpdateLease gives the acquired permit id a new lease from now (0: the
// watchdog; NoExpiry: none), and reports whether the permit was still
// acquired: an expired one is reclaimed first, so it cannot be extended.
func (e *Expirable) UpdateLease(ctx context.Context, id PermitID, lease time.Duration) (bool, error) {
	if err := e.o.Ready(report.OpSet); err != nil {
		return false, err
	}
	if err := e.checkLease(report.OpSet, lease); err != nil {
		return false, err
	}
	pub, err := e.o.Publish(ctx)
	if err != nil {
		return false, e.o.OpErr(report.OpSet, err)
	}
	now, sent := e.now(), time.Now()
	n, err := lockcore.Int(e.o.Run(ctx, script.PESUpdateLease(), []string{e.o.Key(), e.timeout, e.o.Channel()},
		id.raw(), e.expiry(now, lease), itoa(now), pub))
	if err != nil {
		return false, e.o.Fail(ctx, report.OpSet, err)
	}
	if n != 1 {
		if err := e.o.Misfit(ctx, report.OpSet); err != nil {
			return false, err
		}
		e.forget(id, renewal.NotHeld)
		return false, nil
	}
	hold := lease
	if lease == NoExpiry {
		hold = forever
	}
	e.o.RT().Renewal.Relet(e.timeout, id.raw(), hold, sent)
	return true, nil
}

// Extend gives the acquired permit id a new lease of at least 1ms from
// now, set atomically while it is still acquired (Remaining and Guard
// follow), as interlock.Locker's Extend does for a lock; a permit held by
// the watchdog is renewed at once instead and stays so. A permit that is
// gone fails with an error wrapping interlock.ErrNotHeld and the reason:
// ErrPermitExpired when its lease ran out by this Client's records, else
// ErrUnknownPermit. It is never acquired again. UpdateLease is Redisson's
// form, which reports the permit gone as false.
func (e *Expirable) Extend(ctx context.Context, id PermitID, lease time.Duration) error {
	if err := e.o.Ready(report.OpExtend); err != nil {
		return err
	}
	if lease < time.Millisecond {
		return e.o.Invalid(report.OpExtend, "lease %v must be at least 1ms", lease)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	renewals := e.o.RT().Renewal
	held, watchdog := renewals.Extending(e.timeout, id.raw())
	if known, expired := renewals.Expired(e.timeout, id.raw()); known && !held {
		return e.notExtended(id, expired) // gone by this Client's records: nothing to send
	}
	if watchdog {
		lease = e.o.RT().Cfg.Watchdog
	}
	pub, err := e.o.Publish(ctx)
	if err != nil {
		return e.o.OpErr(report.OpExtend, err)
	}
	now, sent := e.now(), time.Now()
	n, err := lockcore.Int(e.o.Run(ctx, script.PESUpdateLease(), []string{e.o.Key(), e.timeout, e.o.Channel()},
		id.raw(), e.expiry(now, lease), itoa(now), pub))
	if err != nil {
		return e.o.Fail(ctx, report.OpExtend, err)
	}
	if n != 1 {
		if err := e.o.Misfit(ctx, report.OpExtend); err != nil {
			return err
		}
		_, expired := renewals.Expired(e.timeout, id.raw())
		e.forget(id, renewal.NotHeld)
		return e.notExtended(id, expired)
	}
	renewals.Extend(e.timeout, id.raw(), lease, sent)
	return nil
}

// notExtended is the error of an Extend of permit id, which is gone:
// expired, by this Client's records, or else unknown.
func (e *Expirable) notExtended(id PermitID, expired bool) error {
	why := ErrUnknownPermit
	if expired {
		why = ErrPermitExpired
	}
	return e.o.OpErr(report.OpExtend, fmt.Errorf("%w: %w: %s", interlock.ErrNotHeld, why, id))
}

// LeaseLeft returns how long the acquired permit id has left: NoExpiry
// when it never expires. It fails with ErrPermitExpired when id's lease
// ran out by this Client's records (as Release), and with
// ErrUnknownPermit when id is not acquired otherwise.
func (e *Expirable) LeaseLeft(ctx context.Context, id PermitID) (time.Duration, error) {
	if err := e.o.Ready(report.OpInspect); err != nil {
		return 0, err
	}
	pub, err := e.o.Publish(ctx)
	if err != nil {
		return 0, e.o.OpErr(report.OpInspect, err)
	}
	ms, err := lockcore.Int(e.o.Run(ctx, script.PESLease(), []string{e.o.Key(), e.timeout, e.o.Channel()},
		id.raw(), never, itoa(e.now()), pub))
	switch {
	case err != nil:
		return 0, e.o.Fail(ctx, report.OpInspect, err)
	case ms == -1:
		return NoExpiry, nil
	case ms <= 0:
		if _, expired := e.o.RT().Renewal.Expired(e.timeout, id.raw()); expired {
			return 0, e.o.OpErr(report.OpInspect, fmt.Errorf("%w: %s", ErrPermitExpired, id))
		}
		if err := e.o.Misfit(ctx, report.OpInspect); err != nil {
			return 0, err
		}
		return 0, e.o.OpErr(report.OpInspect, fmt.Errorf("%w: %s", ErrUnknownPermit, id))
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// Guard derives from ctx a context cancelled when one of ids, acquired by
// this Client, is lost (a cause wrapping ErrPermitLost and the reason: its
// lease ran out, renewal failed for a whole watchdog timeout or found it
// gone, this Client deleted the semaphore) or released (context.Canceled). It
// is cancelled at once, with a cause wrapping ErrUnknownPermit, for an id
// this Client does not hold, and with the argument error of a bad name or
// a nil client.
func (e *Expirable) Guard(ctx context.Context, ids ...PermitID) context.Context {
	if err := e.o.Refused(report.OpGuard); err != nil {
		return cancelled(ctx, err)
	}
	for _, id := range ids {
		g, ok := e.o.RT().Renewal.Guard(ctx, e.timeout, id.raw())
		if !ok {
			return cancelled(ctx, e.o.OpErr(report.OpGuard, fmt.Errorf("%w: %s is not held by this client", ErrUnknownPermit, id)))
		}
		ctx = g
	}
	return ctx
}

// cancelled returns a context derived from ctx that has ended with cause.
func cancelled(ctx context.Context, cause error) context.Context {
	c, cancel := context.WithCancelCause(ctx)
	cancel(cause)
	return c
}

// Remaining returns how long permit id, acquired by this Client, is still
// certainly valid on the server, from what the Client last set; 0 when
// the Client does not hold it. It sends nothing.
func (e *Expirable) Remaining(id PermitID) time.Duration {
	if e.o.Refused(report.OpInspect) != nil {
		return 0
	}
	return e.o.RT().Renewal.Remaining(e.timeout, id.raw())
}

// TTL returns the semaphore key's time to live: 0 when the semaphore does
// not exist, NoExpiry when it never expires.
func (e *Expirable) TTL(ctx context.Context) (time.Duration, error) {
	return pttl(ctx, &e.o, e.o.Key())
}

// Delete removes the semaphore and its acquired permits, and reports
// whether it existed. This Client's holds of its permits end as lost.
func (e *Expirable) Delete(ctx context.Context) (bool, error) {
	ok, err := del(ctx, &e.o, e.o.Key(), e.timeout)
	if err == nil {
		e.o.RT().Renewal.Drop(e.timeout)
	}
	return ok, err
}
