package interlock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/rlock"
	"github.com/interlock-go/interlock/semaphore"
)

// lossReasons are the reasons a loss's cause gives, one of them each.
var lossReasons = []error{interlock.ErrLeaseExpired, interlock.ErrNotRenewed, interlock.ErrKeyGone,
	interlock.ErrForceUnlocked, interlock.ErrMaxHold}

// assertLoss checks that cause is a lock loss for reason, and for no other.
func assertLoss(t *testing.T, cause, reason error) {
	t.Helper()
	assert.ErrorIs(t, cause, interlock.ErrLockLost)
	for _, r := range lossReasons {
		if r == reason {
			assert.ErrorIs(t, cause, r)
		} else {
			assert.NotErrorIs(t, cause, r)
		}
	}
}

// stalledRenewals is a rueidis client whose DoMulti, the watchdog's
// rounds, fails at once while stalled is set (a script carrying the
// Client's queued deletions passes); single commands pass.
type stalledRenewals struct {
	rueidis.Client
	stalled atomic.Bool
}

func (s *stalledRenewals) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	if s.stalled.Load() && !redistest.CarriesDeletes(cmds) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		ctx = cctx
	}
	return s.Client.DoMulti(ctx, cmds...)
}

// TestLossCauses: each way a hold is lost gives its guard, its Observer's
// lost event and its late Unlock a cause that wraps ErrLockLost and says
// why: the lease ran out, no renewal was confirmed in time, the key was
// deleted or taken by another owner, ForceUnlock through this Client,
// WithMaxHold.
func TestLossCauses(t *testing.T) {
	rec := &recorder{}
	// Renewals every 300ms; a hold whose renewals fail is lost 900ms after
	// its last confirmed one.
	const watchdog = 900 * time.Millisecond
	rc := &stalledRenewals{Client: redistest.NewClient(t, addr)}
	c, err := interlock.New(rc, interlock.WithObserver(rec), interlock.WithWatchdogTimeout(watchdog))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	maxHold := newClient(t, interlock.WithObserver(rec), interlock.WithMaxHold(300*time.Millisecond))
	admin := redistest.NewClient(t, addr)
	ctx := interlock.WithOwner(context.Background(), interlock.NewOwnerID())

	for _, tc := range []struct {
		name   string
		reason error
		lose   func(t *testing.T, m *rlock.Mutex)
		c      *interlock.Client
	}{
		{"lease", interlock.ErrLeaseExpired, func(t *testing.T, m *rlock.Mutex) {}, c},
		{"stalled", interlock.ErrNotRenewed, func(t *testing.T, m *rlock.Mutex) { rc.stalled.Store(true) }, c},
		{"deleted", interlock.ErrKeyGone, func(t *testing.T, m *rlock.Mutex) {
			require.NoError(t, admin.Do(ctx, admin.B().Del().Key(m.Name()).Build()).Error())
		}, c},
		{"taken", interlock.ErrKeyGone, func(t *testing.T, m *rlock.Mutex) {
			// Another owner's hash in its place, in one step.
			require.NoError(t, admin.Do(ctx, admin.B().Eval().Script(
				"redis.call('del', KEYS[1]); redis.call('hset', KEYS[1], 'someone:1', 1); return redis.call('pexpire', KEYS[1], 30000)").
				Numkeys(1).Key(m.Name()).Build()).Error())
		}, c},
		{"forced", interlock.ErrForceUnlocked, func(t *testing.T, m *rlock.Mutex) {
			ok, err := m.ForceUnlock(context.Background())
			require.NoError(t, err)
			require.True(t, ok)
		}, c},
		{"max-hold", interlock.ErrMaxHold, func(t *testing.T, m *rlock.Mutex) {}, maxHold},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "loss:" + tc.name
			_, _ = admin.Do(ctx, admin.B().Del().Key(name).Build()).AsInt64()
			m := rlock.New(tc.c, name)
			if tc.reason == interlock.ErrLeaseExpired {
				require.NoError(t, m.LockLease(ctx, 300*time.Millisecond))
			} else {
				require.NoError(t, m.Lock(ctx))
			}
			g := m.Guard(ctx)
			tc.lose(t, m)
			select {
			case <-g.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the hold was not lost")
			}
			rc.stalled.Store(false)
			assertLoss(t, context.Cause(g), tc.reason)
			assert.NotErrorIs(t, context.Cause(g), context.Canceled, "only a release's cause")

			require.Eventually(t, func() bool { return len(rec.of(interlock.KindRLock, name)) > 1 }, 10*time.Second,
				5*time.Millisecond, "the Observer hears of the loss")
			es := rec.of(interlock.KindRLock, name)
			lost := es[len(es)-1]
			require.Equal(t, interlock.OpLost, lost.Op)
			assertLoss(t, lost.Err, tc.reason)

			err := m.Unlock(ctx)
			switch tc.name {
			case "max-hold":
				// The key is still there until its TTL runs out: the
				// Unlock releases it.
				require.NoError(t, err)
			case "stalled":
				// The server's TTL, set when the last renewal arrived,
				// may outlive the Client's count by a moment.
				if err != nil {
					require.ErrorIs(t, err, interlock.ErrNotHeld)
					assertLoss(t, err, tc.reason)
				}
			case "lease":
				// The hold may not be forgotten yet: the server answers.
				require.ErrorIs(t, err, interlock.ErrNotHeld)
			default:
				// Known lost: the Unlock says why.
				require.ErrorIs(t, err, interlock.ErrNotHeld)
				assertLoss(t, err, tc.reason)
			}
			_, _ = admin.Do(ctx, admin.B().Del().Key(name).Build()).AsInt64()
		})
	}
}

// TestPermitLossIsItsOwn: a permit's loss wraps semaphore.ErrPermitLost,
// which is not ErrLockLost but wraps it, and the reason; a lock's loss is
// no permit's.
func TestPermitLossIsItsOwn(t *testing.T) {
	assert.NotEqual(t, interlock.ErrLockLost, semaphore.ErrPermitLost)
	assert.ErrorIs(t, semaphore.ErrPermitLost, interlock.ErrLockLost)
	assert.NotErrorIs(t, interlock.ErrLockLost, semaphore.ErrPermitLost)

	c := newClient(t)
	ctx := interlock.WithOwner(context.Background(), interlock.NewOwnerID())
	s := semaphore.NewExpirable(c, "loss:permit")
	_, _ = s.Delete(ctx)
	_, err := s.TrySetPermits(ctx, 2)
	require.NoError(t, err)
	leased, err := s.Acquire(ctx, 1, 200*time.Millisecond)
	require.NoError(t, err)
	deleted, err := s.Acquire(ctx, 1, 0)
	require.NoError(t, err)
	lg, dg := s.Guard(ctx, leased...), s.Guard(ctx, deleted...)
	lost := func(g context.Context) error {
		t.Helper()
		select {
		case <-g.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the permit was not lost")
		}
		return context.Cause(g)
	}
	cause := lost(lg)
	assert.ErrorIs(t, cause, semaphore.ErrPermitLost)
	assertLoss(t, cause, interlock.ErrLeaseExpired)
	_, err = s.Delete(ctx)
	require.NoError(t, err)
	cause = lost(dg)
	assert.ErrorIs(t, cause, semaphore.ErrPermitLost)
	assertLoss(t, cause, interlock.ErrForceUnlocked)

	m := rlock.New(c, "loss:not-a-permit")
	require.NoError(t, m.LockLease(ctx, 100*time.Millisecond))
	g := m.Guard(ctx)
	<-g.Done()
	assertLoss(t, context.Cause(g), interlock.ErrLeaseExpired)
	assert.NotErrorIs(t, context.Cause(g), semaphore.ErrPermitLost)
	assert.False(t, errors.Is(context.Cause(g), context.Canceled))
}

// Dedicate dedicates a connection whose renewal rounds and latch sweeps
// go through stalledRenewals's DoMulti (redistest.Aside).
func (s *stalledRenewals) Dedicate() (rueidis.DedicatedClient, func()) {
	dc, release := s.Client.Dedicate()
	return redistest.Aside(dc, s.DoMulti), release
}
