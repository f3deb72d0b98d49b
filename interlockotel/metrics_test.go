package interlockotel_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/fenced"
	"github.com/interlock-go/interlock/interlockotel"
	"github.com/interlock-go/interlock/latch"
	"github.com/interlock-go/interlock/nonreentrant"
	"github.com/interlock-go/interlock/rlock"
	"github.com/interlock-go/interlock/rwlock"
	"github.com/interlock-go/interlock/semaphore"
	"github.com/interlock-go/interlock/spin"
)

// tally is what a test did: kind → outcome → count.
type tally map[interlock.Kind]map[string]int64

func (t tally) add(kind interlock.Kind, outcome string) {
	if t[kind] == nil {
		t[kind] = map[string]int64{}
	}
	t[kind][outcome]++
}

// locker is the part of interlock.Locker the kinds test drives.
type locker interface {
	Lock(ctx context.Context) error
	TryLock(ctx context.Context, wait, lease time.Duration) (bool, error)
	Unlock(ctx context.Context) error
}

// TestEveryKindCounts drives every kind through acquisitions that succeed,
// find the object busy, time out and are cancelled, and releases that end
// a hold, end one of several, and find nothing held; the counters and
// histograms must match what was done, kind by kind and outcome by outcome.
func TestEveryKindCounts(t *testing.T) {
	r := newRig(t, nil)
	ctx := context.Background()
	a := interlock.WithOwner(ctx, interlock.NewOwnerID())
	b := interlock.WithOwner(ctx, interlock.NewOwnerID())
	acq, rel := tally{}, tally{}
	name := func(k interlock.Kind) string { return "otel:kinds:" + string(k) }

	// Exclusive locks: held by a, busy, timed out and cancelled for b,
	// released by a, and not held for b.
	exclusive := func(kind interlock.Kind, m locker) {
		t.Helper()
		for range 3 {
			require.NoError(t, m.Lock(a))
			acq.add(kind, interlock.OutcomeAcquired)
			ok, err := m.TryLock(b, 0, 0)
			require.NoError(t, err)
			require.False(t, ok)
			acq.add(kind, interlock.OutcomeBusy)
			require.NoError(t, m.Unlock(a))
			rel.add(kind, interlock.OutcomeReleased)
		}
		require.NoError(t, m.Lock(a))
		acq.add(kind, interlock.OutcomeAcquired)
		ok, err := m.TryLock(b, 30*time.Millisecond, 0)
		require.NoError(t, err)
		require.False(t, ok)
		acq.add(kind, interlock.OutcomeTimedOut)
		cctx, cancel := context.WithTimeout(b, 30*time.Millisecond)
		require.ErrorIs(t, m.Lock(cctx), context.DeadlineExceeded)
		cancel()
		acq.add(kind, interlock.OutcomeCancelled)
		require.NoError(t, m.Unlock(a))
		rel.add(kind, interlock.OutcomeReleased)
		require.ErrorIs(t, m.Unlock(b), interlock.ErrNotHeld)
		rel.add(kind, interlock.OutcomeNotHeld)
	}
	exclusive(interlock.KindRLock, rlock.New(r.c, name("rlock")))
	exclusive(interlock.KindFairLock, fairlock.New(r.c, name("fair")))
	rw := rwlock.New(r.c, name("rw"))
	exclusive(interlock.KindWriteLock, rw.Write())
	exclusive(interlock.KindFenced, fenced.New(r.c, name("fenced")))
	exclusive(interlock.KindNonReentrant, nonreentrant.New(r.c, name("nonreentrant")))
	exclusive(interlock.KindNonReentrantFair, nonreentrant.NewFair(r.c, name("nonreentrant-fair")))
	exclusive(interlock.KindSpin, spin.New(r.c, name("spin")))

	// Reentrancy: the inner release ends one hold of two.
	m := rlock.New(r.c, name("rlock-reentrant"))
	require.NoError(t, m.Lock(a))
	require.NoError(t, m.Lock(a))
	acq.add(interlock.KindRLock, interlock.OutcomeAcquired)
	acq.add(interlock.KindRLock, interlock.OutcomeAcquired)
	require.NoError(t, m.Unlock(a))
	rel.add(interlock.KindRLock, interlock.OutcomeDecremented)
	require.NoError(t, m.Unlock(a))
	rel.add(interlock.KindRLock, interlock.OutcomeReleased)

	// The read half: shared by a and b, busy under the writer.
	rd := rw.Read()
	for range 2 {
		require.NoError(t, rd.Lock(a))
		require.NoError(t, rd.Lock(b))
		acq.add(interlock.KindReadLock, interlock.OutcomeAcquired)
		acq.add(interlock.KindReadLock, interlock.OutcomeAcquired)
		require.NoError(t, rd.Unlock(a))
		require.NoError(t, rd.Unlock(b))
		rel.add(interlock.KindReadLock, interlock.OutcomeDecremented)
		rel.add(interlock.KindReadLock, interlock.OutcomeReleased)
	}
	require.NoError(t, rw.Write().Lock(a))
	acq.add(interlock.KindWriteLock, interlock.OutcomeAcquired)
	ok, err := rd.TryLock(b, 0, 0)
	require.NoError(t, err)
	require.False(t, ok)
	acq.add(interlock.KindReadLock, interlock.OutcomeBusy)
	require.NoError(t, rw.Write().Unlock(a))
	rel.add(interlock.KindWriteLock, interlock.OutcomeReleased)

	// Semaphore of one permit: acquired, busy, released.
	sem := semaphore.New(r.c, name("sem"))
	_, err = sem.Delete(ctx)
	require.NoError(t, err)
	_, err = sem.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	for range 3 {
		require.NoError(t, sem.Acquire(ctx, 1))
		acq.add(interlock.KindSemaphore, interlock.OutcomeAcquired)
		ok, err := sem.TryAcquire(ctx, 1, 0)
		require.NoError(t, err)
		require.False(t, ok)
		acq.add(interlock.KindSemaphore, interlock.OutcomeBusy)
		require.NoError(t, sem.Release(ctx, 1))
		rel.add(interlock.KindSemaphore, interlock.OutcomeReleased)
	}

	// Expirable semaphore of one permit, watchdog-held.
	ex := semaphore.NewExpirable(r.c, name("expirable"))
	_, err = ex.Delete(ctx)
	require.NoError(t, err)
	_, err = ex.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	for range 3 {
		ids, err := ex.Acquire(ctx, 1, 0)
		require.NoError(t, err)
		acq.add(interlock.KindExpirable, interlock.OutcomeAcquired)
		_, ok, err := ex.TryAcquire(ctx, 1, 0, 0)
		require.NoError(t, err)
		require.False(t, ok)
		acq.add(interlock.KindExpirable, interlock.OutcomeBusy)
		require.NoError(t, ex.Release(ctx, ids...))
		rel.add(interlock.KindExpirable, interlock.OutcomeReleased)
	}

	// Latch: an await cancelled while it is closed, two count-downs, an
	// await that passes.
	l := latch.New(r.c, name("latch"))
	_, err = l.Delete(ctx)
	require.NoError(t, err)
	_, err = l.TrySetCount(ctx, 2)
	require.NoError(t, err)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	require.ErrorIs(t, l.Await(cctx), context.DeadlineExceeded)
	cancel()
	acq.add(interlock.KindLatch, interlock.OutcomeCancelled)
	require.NoError(t, l.CountDown(ctx))
	require.NoError(t, l.CountDown(ctx))
	require.NoError(t, l.Await(ctx))
	acq.add(interlock.KindLatch, interlock.OutcomeAcquired)

	rm := r.collect()
	for kind, outcomes := range acq {
		var total int64
		for outcome, n := range outcomes {
			assert.Equal(t, n, sum(rm, "interlock.acquisitions", attrs{interlockotel.KeyKind: string(kind), interlockotel.KeyOutcome: outcome}),
				"acquisitions %s %s", kind, outcome)
			total += n
		}
		assert.Equal(t, total, sum(rm, "interlock.acquisitions", attrs{interlockotel.KeyKind: string(kind)}), "acquisitions %s", kind)
		assert.Equal(t, uint64(total), hist(rm, "interlock.acquire.duration", attrs{interlockotel.KeyKind: string(kind)}).Count,
			"acquire.duration count %s", kind)
	}
	for kind, outcomes := range rel {
		var total int64
		for outcome, n := range outcomes {
			assert.Equal(t, n, sum(rm, "interlock.releases", attrs{interlockotel.KeyKind: string(kind), interlockotel.KeyOutcome: outcome}),
				"releases %s %s", kind, outcome)
			total += n
		}
		assert.Equal(t, total, sum(rm, "interlock.releases", attrs{interlockotel.KeyKind: string(kind)}), "releases %s", kind)
	}
	// Every hold of a lock that ended records its hold time: the exclusive
	// kinds' releases, and every reader's (the first of two readers to
	// leave ends one hold of several on the lock: "decremented").
	holds := map[interlock.Kind]uint64{interlock.KindReadLock: 4, interlock.KindWriteLock: 5}
	for _, kind := range []interlock.Kind{interlock.KindRLock, interlock.KindFairLock,
		interlock.KindFenced, interlock.KindNonReentrant, interlock.KindNonReentrantFair, interlock.KindSpin} {
		holds[kind] = 4
	}
	for kind, n := range holds {
		f := attrs{interlockotel.KeyKind: string(kind)}
		if kind == interlock.KindRLock {
			f[interlockotel.KeyName] = name("rlock") // not the re-entered one
		}
		assert.Equal(t, n, hist(rm, "interlock.hold.duration", f).Count, "hold.duration count %s", kind)
	}
	// The latch's count-downs are its releases; whatever their outcome,
	// there were two.
	assert.Equal(t, int64(2), sum(rm, "interlock.releases", attrs{interlockotel.KeyKind: string(interlock.KindLatch)}))
	assert.Zero(t, sum(rm, "interlock.losses", nil))
}

// TestLostLockCountedOnce deletes a watchdog hold's key by hand: the next
// renewal finds it gone, and the loss counter goes up by exactly one and
// stays there.
func TestLostLockCountedOnce(t *testing.T) {
	r := newRig(t, nil, interlock.WithWatchdogTimeout(300*time.Millisecond))
	ctx := interlock.WithOwner(context.Background(), interlock.NewOwnerID())
	m := rlock.New(r.c, "otel:lost")
	require.NoError(t, m.Lock(ctx))
	guard := m.Guard(ctx)
	// Let the watchdog renew it a few times (a tick every 100ms).
	eventually(t, "renewals", func() bool { return sum(r.collect(), "interlock.renewals", nil) >= 2 })
	require.NoError(t, r.rc.Do(ctx, r.rc.B().Del().Key("otel:lost").Build()).Error())
	select {
	case <-guard.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the hold was not found lost")
	}
	require.ErrorIs(t, context.Cause(guard), interlock.ErrLockLost)
	lost := attrs{interlockotel.KeyKind: string(interlock.KindRLock), interlockotel.KeyName: "otel:lost"}
	eventually(t, "the loss", func() bool { return sum(r.collect(), "interlock.losses", lost) > 0 })
	time.Sleep(500 * time.Millisecond) // five more ticks
	rm := r.collect()
	assert.Equal(t, int64(1), sum(rm, "interlock.losses", nil))
	assert.Equal(t, int64(1), sum(rm, "interlock.losses", lost))
	assert.Zero(t, sum(rm, "interlock.renewal.failures", nil))
	assert.NotZero(t, hist(rm, "interlock.renewal.duration", nil).Count)
	assert.Zero(t, sum(rm, "interlock.holds", nil))
}

// TestContendedWaitQuantile runs 8 goroutines × 60 Lock/Unlock on one lock
// and compares the p90 of the waits the test measured around Lock with
// the p90 read from interlock.acquire.duration, whose buckets
// (WithWaitBuckets) are four per octave from 100µs to 1.6s: within 20 %.
// (The p99 is logged: of 480 waits it is the fifth longest, which a loaded
// machine's late wake-ups of the callers, and the histogram's wide buckets
// in the tail, put 40 % apart now and then.)
func TestContendedWaitQuantile(t *testing.T) {
	var fine []float64
	for i := 0; i <= 14*4; i++ {
		fine = append(fine, 0.0001*math.Pow(2, float64(i)/4))
	}
	r := newRig(t, []interlockotel.Option{interlockotel.WithWaitBuckets(fine...)})
	const workers, rounds = 8, 60
	const name = "otel:contended"
	waits := make([][]time.Duration, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			m := rlock.New(r.c, name)
			ctx := context.Background()
			for range rounds {
				t0 := time.Now()
				if err := m.Lock(ctx); err != nil {
					errs[w] = err
					return
				}
				waits[w] = append(waits[w], time.Since(t0))
				if err := m.Unlock(ctx); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	var all []time.Duration
	for _, w := range waits {
		all = append(all, w...)
	}
	dp := hist(r.collect(), "interlock.acquire.duration",
		attrs{interlockotel.KeyKind: string(interlock.KindRLock), interlockotel.KeyName: name, interlockotel.KeyOutcome: interlock.OutcomeAcquired})
	require.Equal(t, uint64(workers*rounds), dp.Count)
	for _, q := range []float64{0.5, 0.9, 0.99} {
		exact := exactQuantile(all, q).Seconds()
		est := quantile(dp, q)
		t.Logf("p%v wait: measured %.3f ms, from the histogram %.3f ms (%+.1f %%)", q*100, exact*1e3, est*1e3, (est/exact-1)*100)
		if q == 0.9 {
			assert.InEpsilon(t, exact, est, 0.2, "p90 from the histogram")
		}
	}
}

// TestGauges watches a Client: a hold, then a waiter, show in the
// observed gauges; with no Client watched they have no data.
func TestGauges(t *testing.T) {
	r := newRig(t, nil)
	ctx := interlock.WithOwner(context.Background(), interlock.NewOwnerID())
	m := rlock.New(r.c, "otel:gauges")
	require.NoError(t, m.Lock(ctx))
	rm := r.collect()
	assert.Equal(t, int64(1), sum(rm, "interlock.holds", nil))
	assert.Equal(t, int64(0), sum(rm, "interlock.waiters", nil))

	done := make(chan error, 1)
	go func() {
		wctx := interlock.WithOwner(context.Background(), interlock.NewOwnerID())
		err := m.Lock(wctx)
		if err == nil {
			err = m.Unlock(wctx)
		}
		done <- err
	}()
	eventually(t, "one waiter", func() bool { return sum(r.collect(), "interlock.waiters", nil) == 1 })
	assert.Equal(t, int64(1), sum(r.collect(), "interlock.pubsub.channels", nil))
	require.NoError(t, m.Unlock(ctx))
	require.NoError(t, <-done)
	eventually(t, "no holds", func() bool {
		rm := r.collect()
		return sum(rm, "interlock.holds", nil) == 0 && sum(rm, "interlock.waiters", nil) == 0
	})

	// A second watch of the same Client does not count it twice; after
	// every stop, no data.
	require.NoError(t, m.Lock(ctx))
	stop := r.obs.Watch(r.c)
	assert.Equal(t, int64(1), sum(r.collect(), "interlock.holds", nil))
	stop()
	stop()
	assert.Equal(t, int64(1), sum(r.collect(), "interlock.holds", nil))
	require.NoError(t, m.Unlock(ctx))
}

// TestUnwatched: with no Client watched, the up-down counters have no
// data.
func TestUnwatched(t *testing.T) {
	obs := interlockotel.NewObserver()
	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(obs))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	c, err := interlock.New(newRC(t), interlock.WithObserver(obs))
	require.NoError(t, err)
	defer c.Close()
	stop := obs.Watch(c)
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	_, ok := metricNamed(rm, "interlock.holds")
	assert.True(t, ok)
	stop()
	require.NoError(t, reader.Collect(context.Background(), &rm))
	_, ok = metricNamed(rm, "interlock.holds")
	assert.False(t, ok, "holds with no Client watched")
	assert.Equal(t, int64(0), sum(rm, "interlock.renewal.failures", nil), "plain counters report 0")
	_, ok = metricNamed(rm, "interlock.renewal.failures")
	assert.True(t, ok)
}

// TestNames: KeepNames exports the name, HashNames a stable 8-digit hash
// of it, DropNames nothing; spans follow the same mode.
func TestNames(t *testing.T) {
	const name = "otel:names"
	for _, tc := range []struct {
		mode interlockotel.NameMode
		want string // "" for absent
	}{
		{interlockotel.KeepNames, name},
		{interlockotel.HashNames, interlockotel.HashName(name)},
		{interlockotel.DropNames, ""},
	} {
		t.Run(fmt.Sprint(tc.mode), func(t *testing.T) {
			r := newRig(t, []interlockotel.Option{interlockotel.WithNames(tc.mode)})
			ctx, parent := r.tp.Tracer("test").Start(context.Background(), "parent")
			m := rlock.New(r.c, name)
			require.NoError(t, m.Lock(ctx))
			require.NoError(t, m.Unlock(ctx))
			parent.End()
			rm := r.collect()
			f := attrs{interlockotel.KeyName: tc.want}
			assert.Equal(t, int64(1), sum(rm, "interlock.acquisitions", f))
			assert.Equal(t, int64(1), sum(rm, "interlock.releases", f))
			assert.Equal(t, uint64(1), hist(rm, "interlock.hold.duration", f).Count)
			spans := r.spans.Ended()
			require.Len(t, spans, 3)
			for _, s := range spans[:2] {
				v, ok := attrValue(s.Attributes(), interlockotel.KeyName)
				if tc.want == "" {
					assert.False(t, ok, "span %s has a name", s.Name())
				} else {
					assert.Equal(t, tc.want, v, "span %s", s.Name())
				}
			}
		})
	}
	assert.Equal(t, "e40c292c", interlockotel.HashName("a"))
	assert.Equal(t, "811c9dc5", interlockotel.HashName(""))
	assert.Len(t, interlockotel.HashName(name), 8)

	r := newRig(t, []interlockotel.Option{interlockotel.WithNameFunc(func(n string) string { return "class" })})
	m := rlock.New(r.c, "otel:names:func")
	require.NoError(t, m.Lock(context.Background()))
	require.NoError(t, m.Unlock(context.Background()))
	assert.Equal(t, int64(1), sum(r.collect(), "interlock.acquisitions", attrs{interlockotel.KeyName: "class"}))
}

// TestNamesBounded: past 4096 names, further names are counted without
// interlock.name, and nothing is lost.
func TestNamesBounded(t *testing.T) {
	obs := interlockotel.NewObserver()
	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(obs))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	const n = 4096 + 10
	for i := range n {
		obs.Observe(context.Background(), interlock.Event{Op: interlock.OpAcquire, Kind: interlock.KindRLock,
			Name: fmt.Sprint("otel:bounded:", i), Outcome: interlock.OutcomeAcquired, Duration: time.Millisecond})
	}
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	assert.Equal(t, int64(n), sum(rm, "interlock.acquisitions", nil))
	assert.Equal(t, int64(10), sum(rm, "interlock.acquisitions", attrs{interlockotel.KeyName: ""}))
	assert.Equal(t, uint64(n), hist(rm, "interlock.acquire.duration", nil).Count)
	m, _ := metricNamed(rm, "interlock.acquisitions")
	assert.Len(t, m.Data.(metricdata.Sum[int64]).DataPoints, 4096+1)
}
