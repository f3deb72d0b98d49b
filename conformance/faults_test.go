package conformance_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/runtime"
	"github.com/interlock-go/interlock/internal/script"
)

// ackTimeout is the WAIT timeout of the safe-mode test: long enough for a
// healthy replica of a loaded machine to acknowledge in time (it once
// took more than 200ms in the container matrix).
const ackTimeout = time.Second

// safeMode: with WithReplicaAcks, an acquisition too few replicas
// acknowledged is taken back and fails; an unacknowledged unlock still
// releases, and says so.
func (s *suite) safeMode(t *testing.T) {
	if s.Cluster || s.Slotted {
		t.Skip("safe mode runs against a standalone master and its replica")
	}
	master, replica := redistest.Replicated(t)
	rc := redistest.NewClient(t, master.Addr())
	c := client(t, rc, interlock.WithReplicaAcks(1, ackTimeout))
	ctx := testCtx(t)
	name := s.lockName(t)
	m := s.New(c, name)
	exists := func() bool { t.Helper(); return s.exists(t, rc, name) }

	// caughtUp waits until the replica acknowledges; its first
	// acknowledgements after a sync or a pause can be slow.
	caughtUp := func() {
		t.Helper()
		res := rc.DoMulti(ctx, rc.B().Set().Key("warm").Value("1").Build(), rc.B().Wait().Numreplicas(1).Timeout(10000).Build())
		require.NoError(t, res[1].Error())
		require.EqualValues(t, 1, must[int64](t)(res[1].AsInt64()), "the replica did not acknowledge within 10s")
	}

	// The replica acknowledges: nothing changes. A Client that waits
	// longer for it tells this apart from a replica that a loaded machine
	// left behind for a second.
	caughtUp()
	hm := s.New(client(t, rc, interlock.WithReplicaAcks(1, 10*time.Second)), name)
	for range s.depth() {
		require.NoError(t, hm.Lock(ctx))
	}
	for range s.depth() {
		require.NoError(t, hm.Unlock(ctx))
	}
	assert.False(t, exists())

	// The replica is frozen: a fresh acquisition is taken back and fails,
	// after about the timeout, with nothing left behind.
	require.NoError(t, replica.Pause())
	t.Cleanup(func() { _ = replica.Resume() })
	start := time.Now()
	err := m.Lock(ctx)
	took := time.Since(start)
	require.ErrorIs(t, err, interlock.ErrReplication)
	assert.Contains(t, err.Error(), "0 of 1 replicas")
	assert.GreaterOrEqual(t, took, ackTimeout)
	// One wait for the acknowledgement and the take-back; a Lock that went
	// on trying would end with the context's error instead. The 3 s are
	// latency: the matrix's containers, beside the package tests, answered
	// this 1.4-1.6 s after the start.
	assert.Less(t, took, ackTimeout+3*time.Second, "Lock must fail, not retry")
	assert.False(t, exists(), "state left on the master")
	assert.Zero(t, c.Stats().Holds, "renewal entry left")
	ok, err := m.TryLock(ctx, 0, time.Minute)
	require.ErrorIs(t, err, interlock.ErrReplication)
	assert.False(t, ok)
	assert.False(t, exists())

	// A re-entry is taken back to the count before it (a non-reentrant
	// kind refuses it before any replica matters).
	require.NoError(t, replica.Resume())
	caughtUp()
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, replica.Pause())
	if s.Reentered != nil {
		require.ErrorIs(t, m.Lock(ctx), s.Reentered)
	} else {
		require.ErrorIs(t, m.Lock(ctx), interlock.ErrReplication)
	}
	assert.Equal(t, 1, must[int](t)(m.HoldCount(ctx)))

	// An unlock the replica did not acknowledge still releases.
	err = m.Unlock(ctx)
	require.ErrorIs(t, err, interlock.ErrReplication)
	assert.NotErrorIs(t, err, interlock.ErrNotHeld)
	assert.False(t, exists())
	assert.Zero(t, c.Stats().Holds)
	assert.ErrorIs(t, m.Unlock(ctx), interlock.ErrNotHeld)
	s.nothingLeft(t, c, rc, name)
}

// maxHold: WithMaxHold ends a hold, renewed or not, at the maximum: its
// guard with ErrMaxHold, its late Unlock with it too.
func (s *suite) maxHold(t *testing.T) {
	// A watchdog timeout of 2s, renewed every 667ms, once before MaxHold:
	// renewals survive the scheduling delays of a loaded 2-core machine,
	// and once MaxHold stops them the key still has a second or more (the
	// lease less MaxHold) for the Unlock at the end.
	const (
		lease   = 2 * time.Second
		maxHold = time.Second
	)
	c, rc := s.newClient(t, interlock.WithWatchdogTimeout(lease), interlock.WithMaxHold(maxHold))
	ctx := testCtx(t)
	name := s.lockName(t)
	m := s.New(c, name)

	start := time.Now()
	require.NoError(t, m.Lock(ctx))
	locked := time.Since(start)
	g := m.Guard(ctx)
	<-g.Done()
	at := time.Since(start)
	// MaxHold counts from when the acquire was sent, between start and
	// locked: the guard ends no sooner, and within two seconds of it, for
	// the late timers of a loaded machine (latency, not safety).
	assert.GreaterOrEqual(t, at, maxHold)
	assert.LessOrEqual(t, at, maxHold+locked+2*time.Second, "lost at %v", at)
	assert.ErrorIs(t, context.Cause(g), interlock.ErrLockLost)
	assert.ErrorIs(t, context.Cause(g), interlock.ErrMaxHold)
	assert.Zero(t, m.Remaining(ctx))
	// Renewal stopped: the key runs out within a lease of MaxHold. The
	// seconds on top are latency: the last renewal, sent before MaxHold,
	// may reach a loaded server late; renewals that went on would keep
	// the key.
	require.Eventually(t, func() bool {
		n, err := rc.Do(ctx, rc.B().Exists().Key(name).Build()).AsInt64()
		return err == nil && n == 0
	}, maxHold+lease+3*time.Second-time.Since(start), 5*time.Millisecond, "key not gone")
	err := m.Unlock(ctx)
	assert.ErrorIs(t, err, interlock.ErrLockLost)
	assert.ErrorIs(t, err, interlock.ErrMaxHold)

	// Unlocked before the key ran out, the hold is released normally. The
	// Unlock of a hold known lost waits 200 ms for the server's answer; one
	// that comes later (a loaded machine: latency) leaves the release to
	// the clean-up queue, and the Unlock says the hold was lost.
	start = time.Now()
	require.NoError(t, m.Lock(ctx))
	g = m.Guard(ctx)
	<-g.Done()
	assert.ErrorIs(t, context.Cause(g), interlock.ErrMaxHold)
	if err := m.Unlock(ctx); err != nil {
		require.ErrorIs(t, err, interlock.ErrMaxHold)
		t.Logf("the server answered the Unlock after its 200 ms: %v", err)
		// Released by the clean-up queue, or run out as above: within
		// the same bound (a renewal sent before MaxHold was seen to reach
		// a loaded server seconds late).
		require.Eventually(t, func() bool {
			n, err := rc.Do(ctx, rc.B().Exists().Key(name).Build()).AsInt64()
			return err == nil && n == 0
		}, maxHold+lease+3*time.Second-time.Since(start), 5*time.Millisecond, "key not released")
	}
	assert.False(t, must[bool](t)(m.IsLocked(ctx)))
	s.nothingLeft(t, c, rc, name)
}

// lostUnlockReply: an unlock whose reply is lost is sent again under the
// same latch, and the server applies it once.
func (s *suite) lostUnlockReply(t *testing.T) {
	ctx := testCtx(t)
	h := &redistest.Hooked{Client: redistest.NewClient(t, s.Addr)}
	var lost atomic.Int32
	h.Set(func(ctx context.Context, cmd rueidis.Completed, next func() rueidis.RedisResult) rueidis.RedisResult {
		if !runs(cmd, s.Unlock) {
			return next()
		}
		res := next() // the script runs on the server ...
		if script.IsNoScript(res.Error()) || !lost.CompareAndSwap(0, 1) {
			return res
		}
		return rueidis.NewErrorResult(errors.New("connection reset (test)")) // ... and its reply is lost
	})
	c := client(t, h)
	name := s.lockName(t)
	m := s.New(c, name)
	require.NoError(t, m.Lock(ctx))
	if s.depth() == 2 {
		require.NoError(t, m.Lock(ctx))
		require.NoError(t, m.Unlock(ctx), "the resent unlock finds the latch")
		assert.Equal(t, int32(1), lost.Load())
		assert.Equal(t, 1, must[int](t)(m.HoldCount(ctx)), "one logical unlock released one hold")
		assert.True(t, must[bool](t)(m.IsLocked(ctx)))
	}

	// The last hold's release, lost and resent, releases once.
	lost.Store(0)
	require.NoError(t, m.Unlock(ctx), "the resent unlock finds the latch")
	assert.Equal(t, int32(1), lost.Load())
	assert.False(t, must[bool](t)(m.IsLocked(ctx)))
	assert.ErrorIs(t, m.Unlock(ctx), interlock.ErrNotHeld)
	s.nothingLeft(t, c, h.Client, name)
}

// lateAcquire: an acquisition still waiting to go out when its caller's
// deadline passes is taken back once it has run. rueidis answers such a
// caller at its deadline and writes the command later, on the connection
// it picked, which is any of those it keeps to the node when it keeps
// several: a take-back sent at once, on another, could run first and find
// nothing to take back. Outside a cluster the Client sends its scripts on
// one connection in call order (script.Ordered), and the hook keeps that
// order for commands built so: one built so after the late command waits
// for it. A cluster client keeps one connection per node unless told
// otherwise, and the hook then keeps the order of every command; with two
// per node (PipelineMultiplex 1), of none.
func (s *suite) lateAcquire(t *testing.T) {
	t.Run("default client", func(t *testing.T) { s.lateAcquireOn(t, 0) })
	t.Run("PipelineMultiplex 1", func(t *testing.T) { s.lateAcquireOn(t, 1) })
}

func (s *suite) lateAcquireOn(t *testing.T, multiplex int) {
	ctx := testCtx(t)
	rc0, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr}, PipelineMultiplex: multiplex})
	require.NoError(t, err)
	t.Cleanup(rc0.Close)
	h := &redistest.Hooked{Client: rc0}
	cluster := rc0.Mode() == rueidis.ClientModeCluster
	ref := script.Ordered(h, "PING", nil)
	ordered := func(cmd rueidis.Completed) bool {
		if cluster {
			return multiplex == 0
		}
		return cmd.Slot() == ref.Slot()
	}
	var late atomic.Bool
	var wg sync.WaitGroup
	var busy sync.RWMutex // write-held while a late command is queued on the one connection
	h.Set(func(ctx context.Context, cmd rueidis.Completed, next func() rueidis.RedisResult) rueidis.RedisResult {
		if !late.Load() || !runs(cmd, s.Acquire...) {
			if ordered(cmd) {
				busy.RLock()
				defer busy.RUnlock()
			}
			return next()
		}
		queued := ordered(cmd)
		if queued {
			busy.Lock()
		}
		out := make(chan rueidis.RedisResult, 1)
		wg.Go(func() {
			time.Sleep(200 * time.Millisecond) // queued behind a busy connection
			out <- h.Client.Do(context.WithoutCancel(ctx), cmd)
			if queued {
				busy.Unlock()
			}
		})
		select {
		case r := <-out:
			return r
		case <-ctx.Done():
			return rueidis.NewErrorResult(ctx.Err()) // answered now, sent later
		}
	})
	c := client(t, h)
	rc := h.Client
	name := s.lockName(t)
	m := s.New(c, name)
	// Loaded scripts: a late EVALSHA must not be answered NOSCRIPT, which
	// only its caller, gone by then, would follow with EVAL.
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Unlock(ctx))
	if cluster && multiplex == 0 {
		// The acquisition is then not sent detached: the order is all
		// that keeps the take-back behind it.
		require.Eventually(t, runtime.Of(c).Ordered, 5*time.Second, time.Millisecond)
	}

	late.Store(true)
	lctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	assert.ErrorIs(t, m.Lock(lctx), context.DeadlineExceeded)
	cancel()
	require.Eventually(t, func() bool { return c.Stats().UndoQueue == 0 }, 5*time.Second, time.Millisecond,
		"the late acquisition is still being taken back")
	late.Store(false)
	wg.Wait()
	assert.False(t, must[bool](t)(m.IsLocked(ctx)), "a late acquisition is taken back")
	assert.Empty(t, s.state(t, rc, name))
	assert.Zero(t, c.Stats().Holds)

	// The owner's next acquisition is its own.
	require.NoError(t, m.Lock(ctx))
	assert.Equal(t, 1, must[int](t)(m.HoldCount(ctx)))
	require.NoError(t, m.Unlock(ctx))
	s.nothingLeft(t, c, rc, name)
}

// lostAcquireReply: when an acquisition's reply is lost to the deadline,
// whatever the script did is taken back: a first hold, a re-entry's extra
// hold, another owner's hold or place in a queue.
func (s *suite) lostAcquireReply(t *testing.T) {
	ctx := testCtx(t)
	h := &redistest.Hooked{Client: redistest.NewClient(t, s.Addr)}
	var lose atomic.Bool
	// The caller's deadline, which the lost reply outlasts: the engine
	// sends with a context of its own that ends later.
	var deadline atomic.Pointer[context.Context]
	h.Set(func(ctx context.Context, cmd rueidis.Completed, next func() rueidis.RedisResult) rueidis.RedisResult {
		if !lose.Load() || !runs(cmd, s.Acquire...) {
			return next()
		}
		res := next() // the script runs on the server ...
		if script.IsNoScript(res.Error()) {
			return res
		}
		caller := *deadline.Load()
		select {
		case <-caller.Done():
		case <-ctx.Done():
		}
		return rueidis.NewErrorResult(caller.Err()) // ... and its reply is lost to the caller's deadline
	})
	c := client(t, h)
	rc := h.Client
	name := s.lockName(t)
	m := s.New(c, name)
	lost := func(acquire func(ctx context.Context) error) {
		t.Helper()
		lose.Store(true)
		defer lose.Store(false)
		lctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		deadline.Store(&lctx)
		assert.ErrorIs(t, acquire(lctx), context.DeadlineExceeded)
		// The take-back runs in the background, within the lease; on a
		// healthy server it is usually done as the caller returns.
		require.Eventually(t, func() bool { return c.Stats().UndoQueue == 0 }, 5*time.Second, time.Millisecond,
			"the lost acquisition is still being taken back")
	}
	tryLock := func(ctx context.Context) error {
		_, err := m.TryLock(ctx, 0, 0)
		return err
	}

	// A lost first acquisition, waiting and single-attempt.
	lost(m.Lock)
	lost(tryLock)
	assert.False(t, must[bool](t)(m.IsLocked(ctx)), "a lost first acquisition is released")
	assert.Empty(t, s.state(t, rc, name))
	assert.Zero(t, c.Stats().Holds)

	// A lost re-entry takes back only the hold it added.
	require.NoError(t, m.Lock(ctx))
	held := s.state(t, rc, name)
	lost(m.Lock)
	lost(tryLock)
	assert.Equal(t, 1, must[int](t)(m.HoldCount(ctx)))
	assert.Equal(t, held, s.state(t, rc, name))

	// Another owner's lost acquisition (shared, busy, or queued) leaves
	// the lock as it was.
	id := interlock.NewOwnerID()
	o := interlock.WithOwner(ctx, id)
	lost(func(ctx context.Context) error { return m.Lock(interlock.WithOwner(ctx, id)) })
	assert.False(t, must[bool](t)(m.IsHeld(o)))
	assert.Equal(t, held, s.state(t, rc, name))

	require.NoError(t, m.Unlock(ctx))
	assert.False(t, must[bool](t)(m.IsLocked(ctx)))
	s.nothingLeft(t, c, rc, name)
}

// closedClient: once the Client is closed its guards end with ErrClosed
// and every acquisition and release returns ErrClosed.
func (s *suite) closedClient(t *testing.T) {
	c, _ := s.newClient(t)
	ctx := testCtx(t)
	m := s.New(c, s.lockName(t))
	require.NoError(t, m.Lock(ctx))
	guard := m.Guard(ctx)
	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "a second Close")
	assert.ErrorIs(t, context.Cause(guard), interlock.ErrClosed)
	assert.ErrorIs(t, m.Lock(ctx), interlock.ErrClosed)
	assert.ErrorIs(t, m.LockLease(ctx, time.Second), interlock.ErrClosed)
	_, err := m.TryLock(ctx, 0, 0)
	assert.ErrorIs(t, err, interlock.ErrClosed)
	_, err = m.TryLock(ctx, time.Second, time.Second)
	assert.ErrorIs(t, err, interlock.ErrClosed)
	assert.ErrorIs(t, m.Unlock(ctx), interlock.ErrClosed)
	_, err = m.ForceUnlock(ctx)
	assert.ErrorIs(t, err, interlock.ErrClosed)
	assert.ErrorIs(t, s.rival(c, m.Name()).Lock(other(ctx)), interlock.ErrClosed)
}

// closeWakesWaiters: Close ends the waits in progress with ErrClosed, and
// a waiter it ends leaves nothing of itself on the server.
func (s *suite) closeWakesWaiters(t *testing.T) {
	c, rc := s.newClient(t)
	ctx := testCtx(t)
	name := s.lockName(t)
	m, rival := s.New(c, name), s.rival(c, name)
	holder := other(ctx)
	require.NoError(t, rival.Lock(holder))
	guard := rival.Guard(holder)
	before := s.state(t, rc, name)

	waits := []func() error{func() error { return m.Lock(ctx) }}
	if s.Shared != nil {
		// A read half's waiters share a channel with the write half's.
		waits = append(waits, func() error { return rival.Lock(other(ctx)) })
	}
	done := make(chan error, len(waits))
	for _, w := range waits {
		go func() { done <- w() }()
	}
	if s.Polls {
		time.Sleep(200 * time.Millisecond) // the waiter is between two attempts
		assert.Zero(t, c.Stats().Channels, "a polling waiter subscribes to nothing")
	} else {
		require.Eventually(t, func() bool { return c.Stats().Channels == 1 }, 5*time.Second, 5*time.Millisecond, "waiters not subscribed")
	}
	if s.Fair {
		require.Eventually(t, func() bool {
			return !assert.ObjectsAreEqual(before, s.state(t, rc, name))
		}, 5*time.Second, 5*time.Millisecond, "the waiter did not queue")
	}
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, c.Close())
	for range waits {
		select {
		case err := <-done:
			assert.ErrorIs(t, err, interlock.ErrClosed)
		case <-time.After(5 * time.Second):
			t.Fatal("a waiter hangs after Close")
		}
	}
	assert.Equal(t, before, s.state(t, rc, name), "a waiter woken by Close left something behind")
	assert.ErrorIs(t, context.Cause(guard), interlock.ErrClosed)
}
