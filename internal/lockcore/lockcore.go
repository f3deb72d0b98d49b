// Package lockcore is what every interlock lock kind does the same way:
// argument checks, owners, recording holds with the renewal Scheduler, one
// acquire attempt that takes back a lost acquisition, the unlock that is
// resent under its latch, guards, and error wrapping. A lock package
// supplies its scripts, keys and sentinel errors.
package lockcore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/lua"
	"github.com/interlock-go/interlock/pubsub"
	"github.com/interlock-go/interlock/renewal"
)

const (
	// LatchTTL bounds how long the server remembers an unlock's outcome,
	// longer than all of an unlock's attempts together.
	LatchTTL = 20 * time.Second
	// unlockResendFor is how long after its first send an unlock is sent
	// again when no reply comes back, while the caller's context allows:
	// a quarter of LatchTTL, so every resend finds the latch an earlier
	// send may have written, and the repeats stay harmless.
	unlockResendFor = LatchTTL / 4
	// The pause before a resend doubles from unlockPauseMin to
	// unlockPauseMax.
	unlockPauseMin = 50 * time.Millisecond
	unlockPauseMax = time.Second
	// undoTimeout bounds the clean-up after an acquisition whose reply was
	// lost.
	undoTimeout = time.Second
)

// Kind describes a lock package to the core.
type Kind struct {
	// Name prefixes error messages ("rlock").
	Name string
	// NotHeld and Lost are the package's sentinels.
	NotHeld, Lost error
	// Task renews the kind's watchdog holds; its Lost is Lost.
	Task *renewal.Task
}

// Invalid returns an error about a bad argument, wrapping
// interlock.ErrInvalid and prefixed with the kind's name.
func (k *Kind) Invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s: "+format, append([]any{interlock.ErrInvalid, k.Name}, args...)...)
}

// Lock is one named lock of one kind on one Client.
type Lock struct {
	C    *interlock.Client
	Kind *Kind
	Name string
	// Err is the argument error found by New, returned by every operation.
	Err error
}

// New checks the client and the name (keys.Check) and returns the lock.
func New(c *interlock.Client, kind *Kind, name string) Lock {
	l := Lock{C: c, Kind: kind, Name: name}
	switch err := keys.Check(name); {
	case c == nil:
		l.Err = fmt.Errorf("%w: %s: nil client", interlock.ErrInvalid, kind.Name)
	case err != nil:
		l.Err = fmt.Errorf("%w: %s: %w", interlock.ErrInvalid, kind.Name, err)
	}
	return l
}

// Ready returns the argument error, or interlock.ErrClosed once the Client
// is closed.
func (l *Lock) Ready() error {
	if l.Err != nil {
		return l.Err
	}
	if l.C.Closed() {
		return interlock.ErrClosed
	}
	return nil
}

// OpErr wraps err from operation op: context errors and ErrClosed are
// returned as they are, anything else with the kind, operation and name,
// once: an error OpErr already wrapped is returned as it is.
func (l *Lock) OpErr(op string, err error) error {
	var wrapped *opError
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, pubsub.ErrClosed) || errors.Is(err, renewal.ErrClosed):
		return interlock.ErrClosed
	case errors.As(err, &wrapped):
		return err
	}
	return &opError{context: fmt.Sprintf("%s: %s %s", l.Kind.Name, op, l.Name), err: err}
}

// opError is an error with the operation and lock it came from.
type opError struct {
	context string
	err     error
}

func (e *opError) Error() string { return e.context + ": " + e.err.Error() }
func (e *opError) Unwrap() error { return e.err }

// Holds returns how many holds holder has on the lock in this Client's
// records.
func (l *Lock) Holds(holder string) int {
	if e := l.C.Renewal().Lookup(l.Name, holder); e != nil {
		return e.Holds()
	}
	return 0
}

// Exec runs one acquire or unlock script: EVALSHA, then EVAL after
// NOSCRIPT. In safe mode (interlock.WithReplicaAcks) each is pipelined
// with WAIT on the same connection; the Attempt or Unlock that handed out
// the Exec reads the WAIT's answer.
type Exec func(ctx context.Context, s *lua.Script, keys, args []string) rueidis.RedisResult

// acks is the WAIT answer of the last script one Exec ran.
type acks struct {
	want    int
	timeout time.Duration
	ran     bool
	got     int64
	err     error
}

// exec returns an Exec that records its WAIT answers in a.
func (l *Lock) exec(a *acks) Exec {
	a.want, a.timeout = l.C.ReplicaAcks()
	return func(ctx context.Context, s *lua.Script, keys, args []string) rueidis.RedisResult {
		rc := l.C.Redis()
		if a.want == 0 {
			return s.Exec(ctx, rc, keys, args)
		}
		// rueidis sends a DoMulti that holds a blocking command (WAIT is
		// one) on one dedicated connection, and a cluster client sends the
		// keyless WAIT to the node of the script's slot: the WAIT counts
		// the replicas that have this script's writes.
		res := rc.DoMulti(ctx, s.EvalSHA(rc, keys, args), l.waitCmd(a))
		if lua.IsNoScript(res[0].Error()) {
			res = rc.DoMulti(ctx, s.Eval(rc, keys, args), l.waitCmd(a))
		}
		a.ran = true
		a.got, a.err = res[1].AsInt64()
		return res[0]
	}
}

func (l *Lock) waitCmd(a *acks) rueidis.Completed {
	rc := l.C.Redis()
	return rc.B().Wait().Numreplicas(int64(a.want)).Timeout(a.timeout.Milliseconds()).Build()
}

// check returns an error wrapping interlock.ErrReplication when the last
// script ran in safe mode and fewer replicas than wanted acknowledged it,
// or the WAIT failed; a context error is returned as it is.
func (a *acks) check() error {
	switch {
	case a.want == 0 || !a.ran:
		return nil
	case errors.Is(a.err, context.Canceled) || errors.Is(a.err, context.DeadlineExceeded):
		return a.err
	case a.err != nil:
		return fmt.Errorf("%w: WAIT %d %d failed: %w", interlock.ErrReplication, a.want, a.timeout.Milliseconds(), a.err)
	case a.got < int64(a.want):
		return fmt.Errorf("%w: %d of %d replicas acknowledged within %v", interlock.ErrReplication, a.got, a.want, a.timeout)
	}
	return nil
}

// Attempt runs one acquire script for holder: run sends it with exec and
// parse reads its reply as acquired, or busy with a bound for the next
// wait. An acquisition is recorded with lease (0: a watchdog hold). When
// the reply is lost (the context ended, or the connection broke after the
// write), the script may have run: undo is called with the hold count
// that acquisition would have made, at once if ctx still allows, else by
// the Client's clean-up goroutine, which the holder's next Attempt on this
// lock waits for. Either way the error returns by ctx's end. In safe mode an acquisition that too few replicas
// acknowledged is taken back the same way, and the error wraps
// interlock.ErrReplication.
func (l *Lock) Attempt(ctx context.Context, holder string, lease time.Duration,
	run func(ctx context.Context, exec Exec) rueidis.RedisResult,
	parse func(rueidis.RedisResult) (acquired bool, retryIn time.Duration, err error),
	undo func(ctx context.Context, expected int) error,
) (bool, time.Duration, error) {
	if l.C.Closed() {
		return false, 0, interlock.ErrClosed
	}
	if err := l.C.Settle(ctx, l.Name, holder); err != nil {
		return false, 0, l.OpErr("acquire", fmt.Errorf("taking back an earlier attempt: %w", err))
	}
	var a acks
	sent := time.Now()
	res := run(ctx, l.exec(&a))
	if err := res.Error(); err != nil && !rueidis.IsRedisNil(err) {
		if _, isRedisErr := rueidis.IsRedisErr(err); !isRedisErr {
			l.undo(ctx, holder, lease, undo, l.Holds(holder)+1)
		}
		return false, 0, l.OpErr("acquire", err)
	}
	ok, retryIn, err := parse(res)
	if err != nil || !ok {
		return false, retryIn, err
	}
	if err := a.check(); err != nil {
		l.undo(ctx, holder, lease, undo, l.Holds(holder)+1)
		return false, 0, l.OpErr("acquire", err)
	}
	if _, err := l.C.Renewal().Hold(l.Name, holder, l.Kind.Task, lease, sent); err != nil {
		l.undo(ctx, holder, lease, undo, 1)
		return false, 0, interlock.ErrClosed
	}
	return true, retryIn, nil
}

// undo takes back what an Attempt may have acquired for holder. The
// Client's clean-up goroutine runs it, retrying until the hold would have
// expired anyway; the caller waits for it as AwaitCleanup says, so that it
// returns by its deadline (give or take a few milliseconds) even when
// Redis does not answer (a rueidis call can outlive its context while a
// connection is being set up). The holder's next Attempt on this lock waits for it
// (interlock.Client.Settle), so it never lands on a newer hold.
func (l *Lock) undo(ctx context.Context, holder string, lease time.Duration, undo func(context.Context, int) error, expected int) {
	if lease <= 0 {
		lease = l.C.WatchdogTimeout()
	}
	l.C.Cleanup(l.Name, holder, time.Now().Add(lease), func(ctx context.Context) error {
		return undo(ctx, expected)
	})
	l.C.AwaitCleanup(ctx, l.Name, holder, undoTimeout)
}

// Done returns the error of a script's reply; a nil reply is no error.
func Done(r rueidis.RedisResult) error {
	if err := r.Error(); err != nil && !rueidis.IsRedisNil(err) {
		return err
	}
	return nil
}

// Unlock releases one hold of holder. send runs the kind's unlock script
// with exec, a latch key (the same one on every resend), the lease the
// remaining holds should keep, and the publish command. The script answers
// nil (not held: an error wrapping Kind.NotHeld, and also Kind.Lost and
// interlock.ErrMaxHold when WithMaxHold ended the hold), 0 (a hold
// released, others remain) or 1 (released); Unlock returns that answer. In
// safe mode a release that too few replicas acknowledged still counts, and
// the error returned with the answer wraps interlock.ErrReplication.
func (l *Lock) Unlock(ctx context.Context, holder string,
	send func(ctx context.Context, exec Exec, latch string, lease time.Duration, publish string) rueidis.RedisResult,
) (int64, error) {
	if err := l.Ready(); err != nil {
		return 0, err
	}
	pub, err := l.C.PublishCommand(ctx)
	if err != nil {
		return 0, l.OpErr("unlock", err)
	}
	lease := l.C.WatchdogTimeout()
	outcome := renewal.Unknown
	e := l.C.Renewal().Lookup(l.Name, holder)
	if e != nil {
		lease = e.BeginRelease()
		defer func() { e.EndRelease(outcome) }()
	}
	latch := keys.UnlockLatch(l.Name, keys.RequestID())
	var (
		a    acks
		exec = l.exec(&a)
		res  rueidis.RedisResult
	)
	// A connection error leaves it unknown whether the server ran the
	// script, so the same request goes again, under the same latch, until
	// a reply comes back: a partition's connection can fail several sends
	// in a row while it is being replaced.
	first := time.Now()
	for pause := unlockPauseMin; ; pause = min(2*pause, unlockPauseMax) {
		res = send(ctx, exec, latch, lease, pub)
		// Any reply from the server ends the loop, a nil one ("not held")
		// included: rueidis.IsRedisErr is false for rueidis.Nil.
		_, isRedisErr := rueidis.IsRedisErr(res.Error())
		replied := res.Error() == nil || isRedisErr || rueidis.IsRedisNil(res.Error())
		if replied || ctx.Err() != nil || time.Since(first)+pause > unlockResendFor {
			break
		}
		if Pause(ctx, pause) != nil {
			break
		}
	}
	// The script may have written the latch whatever it answered: some of
	// Redisson's unlock scripts write one even for "not held".
	l.C.DeleteLater(latch)
	n, err := res.AsInt64()
	var maxHeld error
	if e == nil && (err == nil || rueidis.IsRedisNil(err)) {
		maxHeld = l.C.Renewal().MaxHeld(l.Name, holder)
	}
	switch {
	case rueidis.IsRedisNil(err) && maxHeld != nil:
		outcome = renewal.NotHeld
		return 0, fmt.Errorf("%w: %s: %w", l.Kind.NotHeld, l.Name, maxHeld)
	case rueidis.IsRedisNil(err):
		outcome = renewal.NotHeld
		return 0, fmt.Errorf("%w: %s", l.Kind.NotHeld, l.Name)
	case err != nil:
		return 0, l.OpErr("unlock", err)
	}
	if n == 1 {
		outcome = renewal.Released
	} else {
		outcome = renewal.Decremented
	}
	if err := a.check(); err != nil {
		return n, l.OpErr("unlock", err)
	}
	return n, nil
}

// Guard returns a context derived from ctx that ends with the hold of the
// caller's owner (see renewal.Entry.Guard); suffix is appended to the
// owner string (":write" for a write lock). It is already cancelled, with
// the argument error or with a cause wrapping Kind.NotHeld, when the lock
// is unusable or the owner holds nothing.
func (l *Lock) Guard(ctx context.Context, suffix string) context.Context {
	if l.Err != nil {
		return Cancelled(ctx, l.Err)
	}
	owner, err := l.C.Owner(ctx)
	if err != nil {
		return Cancelled(ctx, err)
	}
	e := l.C.Renewal().Lookup(l.Name, owner+suffix)
	if e == nil {
		return Cancelled(ctx, fmt.Errorf("%w: %s", l.Kind.NotHeld, l.Name))
	}
	return e.Guard(ctx)
}

// Remaining returns how long the hold of the caller's owner is still
// certainly valid (renewal.Entry.Remaining): 0 when this Client records no
// hold of it, or the hold was lost or has expired. suffix is appended to
// the owner string (":write" for a write lock). It sends nothing.
func (l *Lock) Remaining(ctx context.Context, suffix string) time.Duration {
	if l.Err != nil {
		return 0
	}
	owner, err := l.C.Owner(ctx)
	if err != nil {
		return 0
	}
	e := l.C.Renewal().Lookup(l.Name, owner+suffix)
	if e == nil {
		return 0
	}
	return e.Remaining()
}

// HoldCount returns the count of the caller's owner in the lock hash, as
// the server keeps it (0 when absent); suffix is appended to the owner
// string (":write" for a write lock).
func (l *Lock) HoldCount(ctx context.Context, suffix string) (int, error) {
	if l.Err != nil {
		return 0, l.Err
	}
	owner, err := l.C.Owner(ctx)
	if err != nil {
		return 0, err
	}
	rc := l.C.Redis()
	n, err := rc.Do(ctx, rc.B().Hget().Key(l.Name).Field(owner+suffix).Build()).AsInt64()
	switch {
	case rueidis.IsRedisNil(err):
		return 0, nil
	case err != nil:
		return 0, l.OpErr("hold count", err)
	}
	return int(n), nil
}

// Exists reports whether the lock's key exists.
func (l *Lock) Exists(ctx context.Context) (bool, error) {
	if l.Err != nil {
		return false, l.Err
	}
	rc := l.C.Redis()
	n, err := rc.Do(ctx, rc.B().Exists().Key(l.Name).Build()).AsInt64()
	if err != nil {
		return false, l.OpErr("is locked", err)
	}
	return n == 1, nil
}

// TTL returns the lock key's remaining TTL: 0 when it does not exist, a
// negative duration when it has no expiry.
func (l *Lock) TTL(ctx context.Context) (time.Duration, error) {
	if l.Err != nil {
		return 0, l.Err
	}
	rc := l.C.Redis()
	n, err := rc.Do(ctx, rc.B().Pttl().Key(l.Name).Build()).AsInt64()
	switch {
	case err != nil:
		return 0, l.OpErr("ttl", err)
	case n == -2:
		return 0, nil
	case n < 0:
		return -1, nil
	}
	return time.Duration(n) * time.Millisecond, nil
}

// RenewArgs builds the KEYS and ARGV of lua.Renew() (Redisson's LockTask)
// for a chunk of holds: reentrant, fair, fenced and write locks.
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

// Cancelled returns a context derived from parent, already cancelled with
// cause.
func Cancelled(parent context.Context, cause error) context.Context {
	ctx, cancel := context.WithCancelCause(parent)
	cancel(cause)
	return ctx
}

// MS formats d as whole milliseconds, the unit of every script argument.
func MS(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// Millis converts a PTTL reply; a negative one (no TTL) stays negative.
func Millis(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// Pause waits for d or until ctx ends.
func Pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
