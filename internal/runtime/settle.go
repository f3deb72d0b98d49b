package runtime

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// settler runs the clean-up steps that an acquisition leaves behind when it
// cannot finish them itself: taking back a hold whose reply was lost, or
// leaving a fair queue, after the caller's context has ended. Lock must
// return by its caller's deadline even when Redis is frozen, so these steps
// run here, retried until they succeed or their lease has run out on the
// server anyway. Steps are kept per lock and owner, and the next attempt by
// the same owner on the same lock waits for them first (Settle), so an old
// clean-up never lands on a newer hold. One goroutine per Client.
type settler struct {
	mu      sync.Mutex
	pending map[settleKey]*settleEntry
	n       atomic.Int64 // len(pending), read without mu on every attempt
	stopped bool         // under mu: steps added now run at once
	wake    chan struct{}

	errClosed error // returned by wait once the settler has stopped

	cancel  context.CancelFunc
	done    chan struct{}
	closeBy time.Time // set by close: the deadline of the last flush
}

type settleKey struct{ key, owner string }

// settleEntry is the queue of one lock and owner: steps run in order.
type settleEntry struct {
	steps []settleStep
	next  time.Time     // when the runner tries the first step again
	delay time.Duration // the backoff after the last failure
	done  chan struct{} // closed when the queue is empty and removed
	fail  chan struct{} // closed, and replaced, when a try fails
}

type settleStep struct {
	run   func(ctx context.Context) error
	until time.Time // after this the step is dropped: the server forgot it
}

const (
	// CleanupGrace is how long past the caller's deadline AwaitCleanup
	// still waits for clean-up steps: enough for a healthy server to
	// answer, little beside the deadline when none answers.
	CleanupGrace = 20 * time.Millisecond
	// settleTimeout bounds one try of one step.
	settleTimeout = time.Second
	// The backoff between failed tries.
	settleMinDelay = 50 * time.Millisecond
	settleMaxDelay = time.Second
)

func newSettler(errClosed error) *settler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &settler{pending: map[settleKey]*settleEntry{}, wake: make(chan struct{}, 1), errClosed: errClosed, cancel: cancel, done: make(chan struct{})}
	go s.run(ctx)
	return s
}

// close stops the goroutine after giving the steps still queued one try
// each, all by deadline.
func (s *settler) close(deadline time.Time) {
	s.closeBy = deadline
	s.cancel()
	<-s.done
}

func (s *settler) add(key, owner string, until time.Time, run func(ctx context.Context) error) {
	k := settleKey{key, owner}
	s.mu.Lock()
	if s.stopped {
		// The Client is closing: one bounded try, on the caller's
		// goroutine, as the last flush gives the steps already queued.
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
		defer cancel()
		_ = run(ctx)
		return
	}
	e := s.pending[k]
	if e == nil {
		e = &settleEntry{done: make(chan struct{}), fail: make(chan struct{})}
		s.pending[k] = e
		s.n.Add(1)
	}
	e.steps = append(e.steps, settleStep{run: run, until: until})
	e.next = time.Time{} // try at once
	s.mu.Unlock()
	s.poke()
}

func (s *settler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// wait returns once nothing is pending for key and owner, or with ctx's
// error; it asks the runner to try at once. With untilFail it also returns,
// with errCleanupFailed, when a try fails.
func (s *settler) wait(ctx context.Context, key, owner string, untilFail bool) error {
	if s.n.Load() == 0 {
		return nil
	}
	s.mu.Lock()
	e := s.pending[settleKey{key, owner}]
	var fail chan struct{}
	if e != nil {
		e.next, e.delay = time.Time{}, 0
		if untilFail {
			fail = e.fail
		}
	}
	s.mu.Unlock()
	if e == nil {
		return nil
	}
	s.poke()
	select {
	case <-e.done:
		return nil
	case <-fail:
		return errCleanupFailed
	case <-s.done:
		return s.errClosed
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (s *settler) run(ctx context.Context) {
	defer close(s.done)
	defer s.flush()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := s.runDue(ctx)
		if ctx.Err() != nil {
			return
		}
		d := time.Hour
		if !next.IsZero() {
			d = max(time.Until(next), 0)
		}
		timer.Reset(d)
		select {
		case <-s.wake:
		case <-timer.C:
		case <-ctx.Done():
			return
		}
	}
}

// flush gives every step still queued one bounded try, in order, until
// closeBy, and ends every queue: the Client is closing.
func (s *settler) flush() {
	s.mu.Lock()
	s.stopped = true
	pending := s.pending
	s.pending = map[settleKey]*settleEntry{}
	s.n.Store(0)
	s.mu.Unlock()
	by, cancelBy := context.WithDeadline(context.Background(), s.closeBy)
	defer cancelBy()
	for _, e := range pending {
		for _, st := range e.steps {
			if time.Now().Before(st.until) && by.Err() == nil {
				ctx, cancel := context.WithTimeout(by, settleTimeout)
				_ = st.run(ctx)
				cancel()
			}
		}
		close(e.done)
	}
}

// runDue tries the first step of every queue that is due, and returns
// when the earliest queue is due next (zero: none pending).
func (s *settler) runDue(ctx context.Context) time.Time {
	now := time.Now()
	s.mu.Lock()
	var due []settleKey
	for k, e := range s.pending {
		if !e.next.After(now) {
			due = append(due, k)
		}
	}
	s.mu.Unlock()
	for _, k := range due {
		if ctx.Err() != nil {
			return time.Time{}
		}
		s.runQueue(ctx, k)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var next time.Time
	for _, e := range s.pending {
		if next.IsZero() || e.next.Before(next) {
			next = e.next
		}
	}
	return next
}

// runQueue runs the steps of one queue in order until one fails.
func (s *settler) runQueue(ctx context.Context, k settleKey) {
	for {
		s.mu.Lock()
		e := s.pending[k]
		if e == nil {
			s.mu.Unlock()
			return
		}
		if len(e.steps) == 0 {
			delete(s.pending, k)
			s.n.Add(-1)
			close(e.done)
			s.mu.Unlock()
			return
		}
		st := e.steps[0]
		s.mu.Unlock()

		var err error
		if time.Now().Before(st.until) {
			tctx, cancel := context.WithTimeout(ctx, settleTimeout)
			err = st.run(tctx)
			cancel()
		}
		s.mu.Lock()
		if err != nil && ctx.Err() != nil {
			// The Client is closing and the try was cut short: the
			// step stays queued for the flush to try again.
			s.mu.Unlock()
			return
		}
		if err != nil {
			close(e.fail)
			e.fail = make(chan struct{})
			e.delay = min(max(2*e.delay, settleMinDelay), settleMaxDelay)
			e.next = time.Now().Add(e.delay)
			s.mu.Unlock()
			return
		}
		e.steps = e.steps[1:]
		e.delay = 0
		s.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
	}
}

// Cleanup runs a clean-up step for owner's hold on the lock key: a step an
// acquisition could not finish before its caller's context ended (taking
// back a hold whose reply was lost, leaving a fair queue). The clean-up goroutine retries it, with backoff,
// until it returns nil or until passes (by then the server has expired
// what the step would remove). Steps for one key and owner run in order.
//
// Once the Client is closing, a step gets one bounded try at once, and
// the steps still queued get one each before Close returns.
func (r *Runtime) Cleanup(key, owner string, until time.Time, step func(ctx context.Context) error) {
	r.settle.add(key, owner, until, step)
}

// Settle waits until no clean-up step is pending for owner on the lock
// key, or until ctx ends. The engine calls it before an attempt, so that an
// old clean-up never runs after, and undoes, a newer acquisition.
func (r *Runtime) Settle(ctx context.Context, key, owner string) error {
	return r.settle.wait(ctx, key, owner, false)
}

var errCleanupFailed = errors.New("interlock: clean-up step failed; retrying in the background")

// AwaitCleanup waits for the clean-up steps pending for owner on the lock
// key, until they are done or one try fails: for at most limit while ctx
// lives (and not past its end). Once ctx has ended it waits until
// CleanupGrace after ctx's deadline, or CleanupGrace from now when that is
// sooner, so that a caller awaiting several steps is late by CleanupGrace
// at most, not once per step. Steps still pending afterwards go on in the
// background.
func (r *Runtime) AwaitCleanup(ctx context.Context, key, owner string, limit time.Duration) {
	if ctx.Err() != nil {
		end := time.Now().Add(CleanupGrace)
		if d, ok := ctx.Deadline(); ok && d.Add(CleanupGrace).Before(end) {
			end = d.Add(CleanupGrace)
		}
		ctx, limit = context.WithoutCancel(ctx), time.Until(end)
		if limit <= 0 {
			return
		}
	}
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	_ = r.settle.wait(wctx, key, owner, true)
}
