package lockcore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/pubsub"
	"github.com/interlock-go/interlock/internal/renewal"
	"github.com/interlock-go/interlock/internal/report"
	"github.com/interlock-go/interlock/internal/runtime"
	"github.com/interlock-go/interlock/internal/script"
	"github.com/interlock-go/interlock/internal/wait"
)

// ReceiptTTL is how long the server remembers a receipt: longer than every
// resend of the operation it belongs to, and than its clean-up's retries.
const ReceiptTTL = 30 * time.Second

// Object is a named synchronizer that is not a lock (a semaphore, a latch)
// on one Client: what it shares with the locks, from argument checks to
// errors, scripts, receipts and waiting. Kinds embed it.
type Object struct {
	base
}

// NewObject returns the object called name of kind (interlock.KindSemaphore)
// on client (an *interlock.Client), announced on the channel that channel
// derives from name as the Client's NameMapper maps it. A bad (mapped)
// name or a nil client is reported by every method, before anything is
// sent.
func NewObject(client any, kind, name string, channel func(string) string) Object {
	o := Object{newBase(client, kind, name)}
	o.channel = channel(o.name)
	o.Expect(o.name, ShapeCount)
	return o
}

// NewObjectShaped is NewObject for an object whose key keeps shape (a
// rate limiter's config hash) rather than a count. Its other keys are
// added with Expect.
func NewObjectShaped(client any, kind, name string, channel func(string) string, shape Shape) Object {
	o := Object{newBase(client, kind, name)}
	o.channel = channel(o.name)
	o.Expect(o.name, shape)
	return o
}

// Key returns the object's Redis key, from which its other keys derive.
func (o *Object) Key() string { return o.name }

// Channel returns the channel the object's changes are announced on.
func (o *Object) Channel() string { return o.channel }

// RT returns the Client's runtime.
func (o *Object) RT() *runtime.Runtime { return o.rt }

// Label returns the label of the object's holds (an expirable semaphore's
// permits), which names their losses; nil without an Observer.
func (o *Object) Label() *renewal.Label { return o.label }

// Begin returns when an operation that Released reports began: the zero
// time, read from no clock, when the Client has no Observer.
func (o *Object) Begin() time.Time {
	if o.obs == nil {
		return time.Time{}
	}
	return time.Now()
}

// Released tells the Observer, if any, of a release of permits begun at
// start (Begin), of holds this Client recorded since since (zero: none):
// released when ok, not held when not (there was nothing to release), an
// error when err is not nil.
func (o *Object) Released(ctx context.Context, start, since time.Time, permits int, ok bool, err error) {
	if o.obs == nil {
		return
	}
	e := report.Event{Op: report.OpRelease, Outcome: report.OutcomeReleased, Duration: time.Since(start), Permits: permits}
	switch {
	case err != nil:
		e.Outcome, e.Err = report.OutcomeError, err
	case !ok:
		e.Outcome = report.OutcomeNotHeld
	case !since.IsZero():
		e.Held = start.Sub(since)
	}
	o.observe(ctx, e)
}

// Acquired tells the Observer, if any, of an acquisition of permits that
// the object waited for by itself, not through Wait (a rate limiter's):
// begun at start (Begin), after tries attempts, a single attempt when
// try, with its outcome ok and err.
func (o *Object) Acquired(ctx context.Context, start time.Time, tries, permits int, try, ok bool, err error) {
	if o.obs == nil {
		return
	}
	outcome, cause := acquireOutcome(ok, err, try)
	o.observe(ctx, report.Event{Op: report.OpAcquire, Outcome: outcome, Duration: time.Since(start),
		Attempts: tries, Permits: permits, Err: cause})
}

// Publish returns the command the object's scripts announce with.
func (o *Object) Publish(ctx context.Context) (string, error) {
	return o.rt.PublishCommand(ctx)
}

// Run sends one script, never followed by WAIT.
func (o *Object) Run(ctx context.Context, s *script.Script, keys []string, args ...string) rueidis.RedisResult {
	return o.rt.Send(ctx, s, keys, args)
}

// RunAcked sends one acquiring script, followed by WAIT in safe mode; the
// error is the replicas' shortfall, for the caller to undo (the Observer
// hears of it as a refusal).
func (o *Object) RunAcked(ctx context.Context, s *script.Script, keys []string, args ...string) (rueidis.RedisResult, func() error) {
	var acks runtime.Acks
	res := o.rt.Exec(ctx, &acks, s, keys, args)
	if o.obs == nil {
		return res, func() error { return o.rt.CheckAcks(&acks) }
	}
	return res, func() error {
		err := o.rt.CheckAcks(&acks)
		if errors.Is(err, report.ErrReplication) {
			o.observe(ctx, report.Event{Op: report.OpRefused, Outcome: report.OutcomeError, Err: err})
		}
		return err
	}
}

// Receipt returns a new receipt key: the script that carries it runs at
// most once, however often it is sent.
func (o *Object) Receipt() string { return keys.NewReceipt(o.name) }

// RunCounted sends a script that counts (adds or gives permits, counts a
// latch down) under a fresh receipt, appended to its KEYS with the
// receipt's lifetime appended to its ARGV, so that rueidis may resend it;
// the receipt is dropped once the script has answered.
func (o *Object) RunCounted(ctx context.Context, s *script.Script, keys []string, args ...string) rueidis.RedisResult {
	receipt := o.Receipt()
	res := o.Run(ctx, s, append(keys, receipt), append(args, MS(ReceiptTTL))...)
	if !Lost(res.Error()) {
		o.Answered(receipt)
	}
	return res
}

// Answered drops a receipt whose operation has answered: no resend of it
// can follow. The Client deletes such receipts in batches, off the
// caller's path, so that they do not pile up on the server.
func (o *Object) Answered(receipt string) { o.rt.DeleteLater(receipt) }

// UndoLater runs step, which takes back an acquisition whose outcome is
// unknown, on the Client's clean-up goroutine, retried until it succeeds
// or until; a caller's next operation never waits for it. The Observer
// hears of every try.
func (o *Object) UndoLater(id string, until time.Time, step func(ctx context.Context) error) {
	if o.obs != nil {
		inner := step
		step = func(ctx context.Context) error {
			err := inner(ctx)
			o.observe(context.Background(), undoEvent(err))
			return err
		}
	}
	o.rt.Cleanup(o.name, id, until, step)
}

// Lost reports whether err leaves it unknown whether a script ran: no
// reply came back. A Redis error reply means the script did not run.
func Lost(err error) bool {
	if err == nil || rueidis.IsRedisNil(err) {
		return false
	}
	_, isRedisErr := rueidis.IsRedisErr(err)
	return !isRedisErr
}

// Int reads an integer reply, which a script may send as a number or as
// a string it read with GET; nil reads as 0. Another string is a count
// that holds something else (Fail reports it).
func Int(r rueidis.RedisResult) (int64, error) {
	n, err := r.AsInt64()
	switch {
	case rueidis.IsRedisNil(err):
		return 0, nil
	case err != nil && r.Error() == nil:
		s, _ := r.ToString()
		return 0, fmt.Errorf("%w: %s", errNotInteger, quote(s))
	}
	return n, err
}

// Repoll bounds each wait for a message: messages are hints, and one lost
// (Redisson's waiters would hang on it) costs at most this long.
const Repoll = 2 * time.Second

// objectPace paces wake-ups that led nowhere: at most 8 at once and one per
// 10ms after that, so that a waiter that lost the race for the permits a
// message announced tries again soon, while spoofed messages still cost
// at most 100 attempts a second per waiter.
var objectPace = wait.Pace{Burst: 8, Interval: 10 * time.Millisecond}

// Await is one wait of an Object: for Permits (0: a latch's await), woken
// under Policy, passing on the wake-ups it could not use when HandOn
// (wait.Spec.HandOn), Forever or else for up to Wait (0: one try).
type Await struct {
	Permits int
	Policy  pubsub.Policy
	HandOn  bool
	Wait    time.Duration
	Forever bool
}

// Wait runs the locks' waiting algorithm (internal/wait) for one Await of
// the object, trying with try; a ctx that has ended already ends it before
// anything is sent. The Observer, if any, hears of it once it ended.
func (o *Object) Wait(ctx context.Context, w Await, try wait.Attempt) (bool, error) {
	if o.obs == nil {
		return o.wait(ctx, w, try)
	}
	start, tries := time.Now(), 0
	ok, err := o.wait(ctx, w, func(ctx context.Context) (bool, time.Duration, error) {
		tries++
		return try(ctx)
	})
	outcome, cause := acquireOutcome(ok, err, !w.Forever && w.Wait == 0)
	o.observe(ctx, report.Event{Op: report.OpAcquire, Outcome: outcome, Duration: time.Since(start),
		Attempts: tries, Permits: w.Permits, Err: cause})
	return ok, err
}

func (o *Object) wait(ctx context.Context, w Await, try wait.Attempt) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err // ended already: nothing is sent
	}
	if err := o.rt.CheckPubSub(ctx); err != nil {
		return false, err // sharded mode on a server without it
	}
	spec := wait.Spec{
		Hub:      o.rt.Hub,
		Channel:  o.channel,
		Policy:   w.Policy,
		HandOn:   w.HandOn,
		Forever:  w.Forever,
		Deadline: time.Now().Add(w.Wait),
		Queue:    w.Policy == pubsub.WakeCount, // acquisitions queue; a latch's awaiters need not
		MaxWait:  Repoll,
		Pace:     objectPace,
		Try:      try,
		Waiters:  o.rt.Waiters(),
	}
	if w.Forever || w.Wait > 0 {
		var err error
		if spec.Sharded, err = o.rt.Sharded(ctx); err != nil {
			return false, err
		}
	}
	return wait.Acquire(ctx, spec)
}
