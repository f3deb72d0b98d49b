package reliability

// Helpers of the semaphore and latch fault tests (T27 to T30): the two
// semaphores behind one small interface with the scripts the proxy
// matches, a poll that waits for a count to settle and catches a double
// count on the way, and a round of waiters parked on a channel, woken
// after a fault.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/lockcore"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/script"
	"github.com/interlock-go/interlock/semaphore"
)

// sfHeld is what one acquisition took: n permits, and their ids for the
// expirable semaphore.
type sfHeld struct {
	n   int
	ids []semaphore.PermitID
}

// sfSem is one named semaphore of either kind on one Client. lease is the
// expirable semaphore's (0: the watchdog); the plain one ignores it.
type sfSem interface {
	TrySet(ctx context.Context, permits int) (bool, error)
	TryAcquire(ctx context.Context, n int, lease time.Duration) (sfHeld, bool, error)
	Acquire(ctx context.Context, n int, lease time.Duration) (sfHeld, error)
	Release(ctx context.Context, h sfHeld) error
	Available(ctx context.Context) (int64, error)
	Channel() string
}

// sfKind is a semaphore kind with the scripts its acquisitions and
// releases send.
type sfKind struct {
	name    string
	acquire []*script.Script
	release []*script.Script
	open    func(c *interlock.Client, name string) sfSem
}

// sfKinds are the two semaphores, in subtest order.
var sfKinds = []sfKind{
	{"semaphore", []*script.Script{script.SemAcquire()}, []*script.Script{script.SemRelease()},
		func(c *interlock.Client, n string) sfSem { return sfPlain{semaphore.New(c, n)} }},
	{"expirable", []*script.Script{script.PESAcquire()}, []*script.Script{script.PESReleaseOne(), script.PESRelease()},
		func(c *interlock.Client, n string) sfSem { return sfExpirable{semaphore.NewExpirable(c, n)} }},
}

// sfPlain adapts semaphore.Semaphore.
type sfPlain struct{ s *semaphore.Semaphore }

func (p sfPlain) TrySet(ctx context.Context, permits int) (bool, error) {
	return p.s.TrySetPermits(ctx, permits)
}

func (p sfPlain) TryAcquire(ctx context.Context, n int, _ time.Duration) (sfHeld, bool, error) {
	ok, err := p.s.TryAcquire(ctx, n, 0)
	if !ok {
		return sfHeld{}, false, err
	}
	return sfHeld{n: n}, true, err
}

func (p sfPlain) Acquire(ctx context.Context, n int, _ time.Duration) (sfHeld, error) {
	if err := p.s.Acquire(ctx, n); err != nil {
		return sfHeld{}, err
	}
	return sfHeld{n: n}, nil
}

func (p sfPlain) Release(ctx context.Context, h sfHeld) error  { return p.s.Release(ctx, h.n) }
func (p sfPlain) Available(ctx context.Context) (int64, error) { return p.s.Available(ctx) }
func (p sfPlain) Channel() string                              { return keys.SemaphoreChannel(p.s.Name()) }

// sfExpirable adapts semaphore.Expirable.
type sfExpirable struct{ e *semaphore.Expirable }

func (x sfExpirable) TrySet(ctx context.Context, permits int) (bool, error) {
	return x.e.TrySetPermits(ctx, permits)
}

func (x sfExpirable) TryAcquire(ctx context.Context, n int, lease time.Duration) (sfHeld, bool, error) {
	ids, ok, err := x.e.TryAcquire(ctx, n, 0, lease)
	if !ok {
		return sfHeld{}, false, err
	}
	return sfHeld{n: n, ids: ids}, true, err
}

func (x sfExpirable) Acquire(ctx context.Context, n int, lease time.Duration) (sfHeld, error) {
	ids, err := x.e.Acquire(ctx, n, lease)
	if err != nil {
		return sfHeld{}, err
	}
	return sfHeld{n: n, ids: ids}, nil
}

func (x sfExpirable) Release(ctx context.Context, h sfHeld) error  { return x.e.Release(ctx, h.ids...) }
func (x sfExpirable) Available(ctx context.Context) (int64, error) { return x.e.Available(ctx) }
func (x sfExpirable) Channel() string                              { return keys.SemaphoreChannel(x.e.Name()) }

// sfSettled is what sfSettle saw.
type sfSettled struct {
	got    int64         // the last value read
	over   bool          // a value above want was read: counted twice
	waited time.Duration // until the value was want and no clean-up pending
}

// sfSettle reads the count with read until it is want and c (the faulted
// Client, whose clean-up gives back lost acquisitions in the background)
// has no clean-up pending, or within passes. A value above want ends it at
// once: the clean-up only ever raises a count back towards want, so more
// means something was counted twice. It may run on any goroutine.
func sfSettle(c *interlock.Client, read func(ctx context.Context) (int64, error), want int64, within time.Duration) (sfSettled, error) {
	start := time.Now()
	deadline := start.Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		got, err := read(ctx)
		cancel()
		if err != nil {
			return sfSettled{got: got}, err
		}
		s := sfSettled{got: got, over: got > want, waited: time.Since(start)}
		if s.over || (got == want && c.Stats().UndoQueue == 0) || time.Now().After(deadline) {
			return s, nil
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// sfFault is what a waiter round breaks just before it wakes its waiters.
type sfFault string

const (
	// sfRestart kills redis-server with SIGKILL and restarts it on the
	// same port after sfDown; its append-only file (fsynced on every
	// write) brings the data back.
	sfRestart sfFault = "restart"
	// sfDropped makes the proxy drop every pub/sub message to the waiters'
	// Client: the wake-up is never heard.
	sfDropped sfFault = "dropped"
	// sfSubKill kills the waiters' subscription connection on the server
	// (CLIENT KILL TYPE pubsub) right before the wake-up, which is then
	// published while the Client reconnects.
	sfSubKill sfFault = "subkill"
)

// sfFaults are the faults, in subtest order.
var sfFaults = []sfFault{sfRestart, sfDropped, sfSubKill}

const (
	// sfDown is how long a restarted server stays down.
	sfDown = 300 * time.Millisecond
	// sfWakeBound bounds a waiter's wake-up after the release or the
	// count-down that frees it, whatever the fault, in the nightly tier:
	// a waiter that heard nothing reads again after lockcore.Repoll, and a
	// reconnection wakes every waiter. The second on top is for the
	// waiters' scheduling. See sfWakeLimit for the PR gate.
	sfWakeBound = lockcore.Repoll + time.Second
	// sfHung is how long a waiter may take before it counts as hung.
	sfHung = 20 * time.Second
	// sfRetry is how long a waiter whose call failed (the server is down)
	// waits before calling again.
	sfRetry = 20 * time.Millisecond
)

// sfWakeLimit is sfWakeBound in the tier that runs: how soon a waiter
// wakes states no safety property (a waiter that returns before its
// wake-up, or hangs, fails in every tier), and in the PR gate, where
// three packages share two cores under the race detector, the repoll's
// timer and the waiter's return can each wake hundreds of milliseconds
// late, so there the second on top of the repoll gets latencyBound's
// headroom. The nightly tier keeps Repoll + 1 s (3 s).
func sfWakeLimit() time.Duration { return lockcore.Repoll + latencyBound(time.Second) }

// sfEnv is the server of a waiter test, a proxy in front of it, the
// waiters' Client through the proxy and the waker's Client straight to the
// server.
type sfEnv struct {
	*netEnv
	waker *interlock.Client
}

// sfStart starts the environment for fault f: the server keeps an
// append-only file for sfRestart.
func sfStart(t *testing.T, f sfFault) *sfEnv {
	t.Helper()
	redistest.RequireProcess(t)
	var args []string
	if f == sfRestart {
		args = []string{"--appendonly", "yes", "--appendfsync", "always"}
	}
	srv := redistest.Standalone(t, args...)
	direct := srv.Client(t)
	e := &sfEnv{netEnv: netAttach(t, srv, direct)}
	var err error
	e.waker, err = interlock.New(direct)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.waker.Close() })
	return e
}

// sfRoundResult is what one round of waiters saw.
type sfRoundResult struct {
	delays []time.Duration // from the wake-up call to each waiter's return
	hung   int             // waiters that had not returned after sfHung
	early  int             // waiters that returned before the wake-up
	errs   netErrTally     // failed calls, each tried again
	killed int64           // subscription connections killed (sfSubKill)
	pushes int64           // pub/sub messages the proxy dropped (sfDropped)
	took   time.Duration   // the fault itself (the restart)
}

// sfRound parks n waiters, each calling wait(ctx, i) until it returns nil
// (a failed call, when the server is down, is counted and made again after
// sfRetry); once they are subscribed to channel, it injects f, calls wake
// (which must free them all) and times each waiter's return from wake's
// call.
func sfRound(t *testing.T, e *sfEnv, f sfFault, channel string, n int,
	wait func(ctx context.Context, i int) error, wake func(ctx context.Context) error,
) sfRoundResult {
	t.Helper()
	var (
		res    sfRoundResult
		mu     sync.Mutex
		done   = make([]time.Time, n)
		wakeAt time.Time // set before wake is called, under mu
		wg     sync.WaitGroup
	)
	wctx, cancel := context.WithTimeout(context.Background(), sfHung+30*time.Second)
	defer cancel()
	for i := range n {
		wg.Go(func() {
			for {
				err := wait(wctx, i)
				now := time.Now()
				mu.Lock()
				if err == nil {
					done[i] = now
					if wakeAt.IsZero() {
						res.early++
					}
					mu.Unlock()
					return
				}
				if wctx.Err() != nil {
					mu.Unlock()
					return
				}
				res.errs.add(err)
				mu.Unlock()
				time.Sleep(sfRetry)
			}
		})
	}
	// Parked: the channel has its subscriber, and every waiter has had
	// time for its tries.
	require.Eventually(t, func() bool { return sfSubscribers(t, e.direct, channel) > 0 }, 10*time.Second, 5*time.Millisecond,
		"the waiters never subscribed to %s", channel)
	time.Sleep(300 * time.Millisecond)

	ctx, cancelOp := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelOp()
	start := time.Now()
	pushes := e.proxy.Stats().PushesDropped
	switch f {
	case sfRestart:
		require.NoError(t, e.srv.RestartAfter(ctx, sfDown))
	case sfDropped:
		e.proxy.DropPushes(true)
		defer e.proxy.DropPushes(false)
	case sfSubKill:
		k, err := e.direct.Do(ctx, e.direct.B().Arbitrary("CLIENT", "KILL").Args("TYPE", "pubsub").Build()).AsInt64()
		require.NoError(t, err)
		res.killed = k
	}
	res.took = time.Since(start)
	mu.Lock()
	wakeAt = time.Now()
	mu.Unlock()
	require.NoError(t, wake(ctx), "the wake-up")

	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()
	hung := time.NewTimer(time.Until(wakeAt.Add(sfHung)))
	defer hung.Stop()
	select {
	case <-finished:
	case <-hung.C:
		cancel()
		<-finished
	}
	res.pushes = e.proxy.Stats().PushesDropped - pushes
	for _, d := range done {
		if d.IsZero() {
			res.hung++
			continue
		}
		res.delays = append(res.delays, d.Sub(wakeAt))
	}
	return res
}

// sfSubscribers returns how many subscribers channel has on the server.
func sfSubscribers(t *testing.T, rc rueidis.Client, channel string) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := rc.Do(ctx, rc.B().PubsubNumsub().Channel(channel).Build()).AsIntMap()
	if err != nil {
		t.Errorf("PUBSUB NUMSUB %s: %v", channel, err)
		return 0
	}
	return m[channel]
}

// sfCheckRound reports a round's failures: a hung waiter, one that
// returned before its wake-up, one woken later than sfWakeLimit, and (for
// sfSubKill) a kill that found no subscription connection.
func sfCheckRound(t *testing.T, what string, f sfFault, n int, r sfRoundResult) {
	t.Helper()
	if r.hung > 0 {
		t.Errorf("%s %s: %d of %d waiters hung (not woken within %v)", what, f, r.hung, n, sfHung)
	}
	if r.early > 0 {
		t.Errorf("%s %s: %d waiters returned before the wake-up", what, f, r.early)
	}
	if f == sfSubKill && r.killed == 0 {
		t.Errorf("%s %s: CLIENT KILL TYPE pubsub killed no connection", what, f)
	}
	if f == sfDropped && r.pushes == 0 {
		t.Errorf("%s %s: the proxy dropped no message", what, f)
	}
	for _, d := range r.delays {
		if d > sfWakeLimit() {
			t.Errorf("%s %s: a waiter returned %v after the wake-up, want <= %v", what, f, d.Round(time.Millisecond), sfWakeLimit())
		}
	}
}

// sfDurations is procDurations with the count in front.
func sfDurations(ds []time.Duration) string {
	return fmt.Sprintf("%d: %s", len(ds), procDurations(ds))
}

// sfAddErr counts err in tl, the permit errors by their sentinel (their
// text names the permit).
func sfAddErr(tl *netErrTally, err error) {
	switch {
	case errors.Is(err, semaphore.ErrUnknownPermit):
		tl.addText("ErrUnknownPermit", err.Error(), 1)
	case errors.Is(err, semaphore.ErrPermitExpired):
		tl.addText("ErrPermitExpired", err.Error(), 1)
	default:
		tl.add(err)
	}
}

// sfRetryConn calls f until it returns nil or an error other than a
// broken connection's, at most 5 times. After a restart, the first command
// on each of a rueidis client's connections fails with the end of the old
// one; rueidis sends it again only if it is idempotent, and a test's set-up
// (a non-idempotent acquisition, a try-set) needs that too.
func sfRetryConn(f func() error) error {
	var err error
	for range 5 {
		if err = f(); err == nil || !netIsConnErr(err) {
			return err
		}
	}
	return err
}
