package runtime

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// transferPrompt bounds what must happen promptly, on a loaded machine
// under -race.
const transferPrompt = 10 * time.Second

// Two lock kinds, by the names the engine gives them.
const (
	kindA = "a"
	kindB = "b"
)

// waker counts the calls of an offer's wake func.
type waker struct{ n atomic.Int32 }

func (w *waker) wake() { w.n.Add(1) }

func offer(holder string) *Offer { return &Offer{Holder: holder, Lease: time.Second} }

// stand stands a fresh offer with a counting wake func.
func stand(t *Transfers, holder, name string, kind string) (*Offer, *waker) {
	o, w := offer(holder), &waker{}
	t.Stand(o, name, kind, w.wake)
	return o, w
}

// claim is Claim of a line without runs.
func claim(tr *Transfers, name string, kind string, now time.Time) *Offer {
	o, _ := tr.Claim(name, kind, now, false)
	return o
}

// lineCount returns how many lines tr keeps.
func lineCount(tr *Transfers) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.lines)
}

// hasLine reports whether tr keeps the line of name and kind.
func hasLine(tr *Transfers, name string, kind string) bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.lines[lineKey{name, kind}] != nil
}

// awaitWithin runs Await in a goroutine and fails t when it does not
// return within transferPrompt.
func awaitWithin(t *testing.T, tr *Transfers, ctx context.Context, o *Offer) (Grant, bool) {
	t.Helper()
	type result struct {
		g  Grant
		ok bool
	}
	ch := make(chan result, 1)
	go func() {
		g, ok := tr.Await(ctx, o)
		ch <- result{g, ok}
	}()
	select {
	case r := <-ch:
		return r.g, r.ok
	case <-time.After(transferPrompt):
		t.Fatal("Await did not return")
		return Grant{}, false
	}
}

// Offers are claimed in the order they stood, one line per lock name and
// kind: claims on one line never take another line's offers.
func TestTransfersClaimInStandingOrder(t *testing.T) {
	tr := newTransfers()
	now := time.Now()
	assert.Nil(t, claim(tr, "l", kindA, now), "no line at all")
	assert.False(t, tr.Standing())

	o1, _ := stand(tr, "h1", "l", kindA)
	other, _ := stand(tr, "h2", "l", kindB)
	o2, _ := stand(tr, "h3", "l", kindA)
	elsewhere, _ := stand(tr, "h4", "m", kindA)
	o3, _ := stand(tr, "h5", "l", kindA)
	assert.True(t, tr.Standing())
	assert.Equal(t, 5, tr.Offers())

	assert.Nil(t, claim(tr, "n", kindA, now), "a lock nobody waits for")
	assert.Same(t, o1, claim(tr, "l", kindA, now))
	assert.Same(t, o2, claim(tr, "l", kindA, now))
	assert.Same(t, o3, claim(tr, "l", kindA, now))
	assert.Nil(t, claim(tr, "l", kindA, now), "the line is empty")
	assert.Equal(t, 2, tr.Offers())
	assert.Same(t, other, claim(tr, "l", kindB, now))
	assert.Same(t, elsewhere, claim(tr, "m", kindA, now))
	assert.Zero(t, tr.Offers())
}

// An offer that stands again keeps its place: the order is that of first
// standing.
func TestTransfersStandAgainKeepsPlace(t *testing.T) {
	tr := newTransfers()
	now := time.Now()
	o1, _ := stand(tr, "h1", "l", kindA)
	o2, _ := stand(tr, "h2", "l", kindA)
	assert.False(t, tr.Withdraw(o1), "woken by a message, say")
	o3, _ := stand(tr, "h3", "l", kindA)
	tr.Stand(o1, "l", kindA, func() {})
	assert.False(t, tr.Withdraw(o3))
	tr.Stand(o3, "l", kindA, func() {})
	o4, _ := stand(tr, "h4", "l", kindA)
	for _, want := range []*Offer{o1, o2, o3, o4} {
		assert.Same(t, want, claim(tr, "l", kindA, now))
	}
	assert.Nil(t, claim(tr, "l", kindA, now))
}

// An offer withdrawn from the middle of a line leaves the others in order.
func TestTransfersWithdrawKeepsOrder(t *testing.T) {
	tr := newTransfers()
	now := time.Now()
	var os []*Offer
	for i := range 5 {
		o, _ := stand(tr, fmt.Sprint("h", i), "l", kindA)
		os = append(os, o)
	}
	assert.False(t, tr.Withdraw(os[2]))
	assert.False(t, tr.Withdraw(os[0]))
	assert.False(t, tr.Withdraw(os[4]))
	assert.False(t, tr.Withdraw(os[4]), "withdrawn twice")
	assert.Equal(t, 2, tr.Offers())
	assert.Same(t, os[1], claim(tr, "l", kindA, now))
	assert.Same(t, os[3], claim(tr, "l", kindA, now))
	assert.Nil(t, claim(tr, "l", kindA, now))
}

// Resolve wakes the claimed offer's waiter, once and no other, when it
// still waits; Claim wakes nobody.
func TestTransfersResolveWakesOnce(t *testing.T) {
	tr := newTransfers()
	now := time.Now()
	o1, w1 := stand(tr, "h1", "l", kindA)
	_, w2 := stand(tr, "h2", "l", kindA)
	assert.Zero(t, w1.n.Load(), "standing wakes nobody")

	require.Same(t, o1, claim(tr, "l", kindA, now))
	assert.Zero(t, w1.n.Load(), "the claim wakes nobody: the outcome does")
	tr.Resolve(o1, Grant{Passed: true, Sent: now})
	assert.EqualValues(t, 1, w1.n.Load())
	assert.Zero(t, w2.n.Load())

	assert.True(t, tr.Withdraw(o1))
	_, ok := awaitWithin(t, tr, t.Context(), o1)
	require.True(t, ok)
	assert.EqualValues(t, 1, w1.n.Load(), "withdrawing and awaiting wake nobody")
	assert.Zero(t, w2.n.Load())
}

// A waiter that withdrew its claimed offer awaits the outcome: Resolve
// does not wake it.
func TestTransfersResolveAfterWithdrawWakesNobody(t *testing.T) {
	tr := newTransfers()
	o, w := stand(tr, "h", "l", kindA)
	require.Same(t, o, claim(tr, "l", kindA, time.Now()))
	require.True(t, tr.Withdraw(o))
	tr.Resolve(o, Grant{Passed: true})
	assert.Zero(t, w.n.Load())
	_, ok := awaitWithin(t, tr, t.Context(), o)
	require.True(t, ok)
	assert.Zero(t, w.n.Load())
}

// An offer withdrawn before any claim is gone: no claim takes it, and the
// line goes with it unless a run of transfers is going on.
func TestTransfersWithdrawBeforeClaim(t *testing.T) {
	tr := newTransfers()
	now := time.Now()
	o, w := stand(tr, "h", "l", kindA)
	assert.Equal(t, 1, tr.Offers())
	assert.True(t, tr.Standing())
	assert.False(t, tr.Withdraw(o), "not claimed")
	assert.Zero(t, tr.Offers())
	assert.False(t, tr.Standing(), "the line went with its last offer")
	assert.Nil(t, claim(tr, "l", kindA, now))
	assert.Zero(t, w.n.Load())

	// During a run, the line survives its last offer's withdrawal: the
	// next release is still part of the run.
	a, _ := stand(tr, "a", "l", kindA)
	b, wb := stand(tr, "b", "l", kindA)
	require.Same(t, a, claim(tr, "l", kindA, now))
	assert.False(t, tr.Withdraw(b))
	assert.Zero(t, wb.n.Load())
	assert.Zero(t, tr.Offers())
	assert.True(t, tr.Standing(), "a run of transfers is going on")
	assert.Nil(t, claim(tr, "l", kindA, now), "nobody stands: a real release")
	assert.False(t, tr.Standing())
	tr.Resolve(a, Grant{Passed: true})
}

// A claimed offer's withdrawal reports the claim, and Await returns the
// outcome the claimer resolved it with, whether it came before or after.
func TestTransfersWithdrawAfterClaimAwaits(t *testing.T) {
	tr := newTransfers()
	now := time.Now()
	o, _ := stand(tr, "h", "l", kindA)
	require.Same(t, o, claim(tr, "l", kindA, now))
	assert.True(t, tr.Withdraw(o))
	assert.True(t, tr.Withdraw(o), "still claimed until awaited")
	g := Grant{Passed: true, Sent: now, Token: 7}
	tr.Resolve(o, g)
	got, ok := awaitWithin(t, tr, t.Context(), o)
	require.True(t, ok)
	assert.Equal(t, g, got)
	assert.EqualValues(t, 1, tr.Passed())

	// Awaited, the offer may stand again; this time Await comes first.
	tr.Stand(o, "l", kindA, func() {})
	assert.Equal(t, 1, tr.Offers())
	require.Same(t, o, claim(tr, "l", kindA, now))
	require.True(t, tr.Withdraw(o))
	done := make(chan Grant, 1)
	go func() {
		g, ok := tr.Await(t.Context(), o)
		assert.True(t, ok)
		done <- g
	}()
	select {
	case <-done:
		t.Fatal("Await returned before the outcome")
	case <-time.After(50 * time.Millisecond):
	}
	g2 := Grant{Unknown: true, Sent: now.Add(time.Millisecond)}
	tr.Resolve(o, g2)
	select {
	case got := <-done:
		assert.Equal(t, g2, got)
	case <-time.After(transferPrompt):
		t.Fatal("Await did not return after Resolve")
	}
	assert.EqualValues(t, 1, tr.Passed(), "an unknown outcome passed nothing")
}

// Await on a ctx that ends before the outcome reports false; the outcome
// that comes later is Result's.
func TestTransfersAwaitCtxEndsBeforeResolve(t *testing.T) {
	tr := newTransfers()
	now := time.Now()
	o, _ := stand(tr, "h", "l", kindA)
	require.Same(t, o, claim(tr, "l", kindA, now))
	require.True(t, tr.Withdraw(o))

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	got, ok := awaitWithin(t, tr, ctx, o)
	assert.False(t, ok)
	assert.Zero(t, got)
	_, done := tr.Result(o)
	assert.False(t, done, "no outcome yet")

	ended, cancelEnded := context.WithCancel(t.Context())
	cancelEnded()
	_, ok = awaitWithin(t, tr, ended, o)
	assert.False(t, ok, "an ended ctx, still no outcome")

	g := Grant{Passed: true, Sent: now, Token: 3}
	tr.Resolve(o, g)
	got, done = tr.Result(o)
	assert.True(t, done)
	assert.Equal(t, g, got)
	got, done = tr.Result(o)
	assert.True(t, done, "Result takes nothing away")
	assert.Equal(t, g, got)
}

// Await on an ended ctx after the outcome came returns the outcome: it
// came before the waiter left.
func TestTransfersAwaitEndedCtxAfterResolve(t *testing.T) {
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	// Both of Await's select cases are ready: run it often enough for
	// the ctx case to be chosen.
	for i := range 32 {
		tr := newTransfers()
		o, _ := stand(tr, "h", "l", kindA)
		require.Same(t, o, claim(tr, "l", kindA, time.Now()))
		require.True(t, tr.Withdraw(o))
		g := Grant{Passed: true, Token: uint64(i + 1)}
		tr.Resolve(o, g)

		ch := make(chan Grant, 1)
		go func() {
			got, ok := tr.Await(ended, o)
			assert.True(t, ok)
			ch <- got
		}()
		select {
		case got := <-ch:
			assert.Equal(t, g, got)
		case <-time.After(transferPrompt):
			t.Fatalf("round %d: Await on an ended ctx after Resolve did not return", i)
		}
	}
}

// Only a passed lock counts in Passed.
func TestTransfersResolveCountsPassed(t *testing.T) {
	tr := newTransfers()
	now := time.Now()
	for i, g := range []Grant{{}, {Unknown: true}, {Passed: true, Token: 1}, {Passed: true}} {
		o, _ := stand(tr, fmt.Sprint("h", i), "l", kindA)
		require.Same(t, o, claim(tr, "l", kindA, now))
		tr.Resolve(o, g)
	}
	assert.EqualValues(t, 2, tr.Passed())
}

// After TransferRun transfers in a row the next claim of a bounded line
// yields (the caller's script releases for real if another process
// waits), and a new run starts with it; an unbounded line never yields.
func TestTransfersRunBound(t *testing.T) {
	tr := newTransfers()
	now := time.Now()
	os := make([]*Offer, 2*TransferRun+2)
	for i := range os {
		os[i], _ = stand(tr, fmt.Sprint("h", i), "l", kindA)
	}
	for i := range TransferRun {
		o, yield := tr.Claim("l", kindA, now, true)
		require.Same(t, os[i], o, "transfer %d", i)
		require.False(t, yield, "transfer %d", i)
	}
	o, yield := tr.Claim("l", kindA, now, true)
	assert.Same(t, os[TransferRun], o)
	assert.True(t, yield, "the run is over")
	for i := range TransferRun - 1 {
		_, yield := tr.Claim("l", kindA, now, true)
		require.False(t, yield, "transfer %d of the new run", i)
	}
	_, yield = tr.Claim("l", kindA, now, true)
	assert.True(t, yield, "the second run is over")

	// Unbounded (a fair lock): no runs.
	for i := range 2 * TransferRun {
		stand(tr, fmt.Sprint("m", i), "m", kindA)
	}
	for i := range 2 * TransferRun {
		_, yield := tr.Claim("m", kindA, now, false)
		require.False(t, yield, "transfer %d on an unbounded line", i)
	}
}

// A run is also over TransferSpan after its first transfer.
func TestTransfersSpanBound(t *testing.T) {
	tr := newTransfers()
	t0 := time.Now()
	for i := range 5 {
		stand(tr, fmt.Sprint("h", i), "l", kindA)
	}
	yields := func(at time.Time) bool {
		t.Helper()
		o, yield := tr.Claim("l", kindA, at, true)
		require.NotNil(t, o)
		return yield
	}
	assert.False(t, yields(t0))
	assert.False(t, yields(t0.Add(TransferSpan-time.Nanosecond)))
	assert.True(t, yields(t0.Add(TransferSpan)), "the span is over")
	t1 := t0.Add(TransferSpan)
	assert.False(t, yields(t1.Add(TransferSpan-time.Nanosecond)), "the next run starts at its own first transfer")
	assert.True(t, yields(t1.Add(TransferSpan)))
}

// After a yield, the first waiter to ask holds off for what is left of
// TransferYield; the others, and later ones, do not.
func TestTransfersHoldOff(t *testing.T) {
	tr := newTransfers()
	stand(tr, "a", "l", kindA)
	stand(tr, "b", "l", kindA)
	assert.Zero(t, tr.HoldOff("l", kindA))
	o, _ := tr.Claim("l", kindA, time.Now(), true)
	tr.Yield(o, time.Now())
	tr.Unclaim(o)
	d := tr.HoldOff("l", kindA)
	assert.True(t, d > 0 && d <= TransferYield, "hold-off %v", d)
	assert.Zero(t, tr.HoldOff("l", kindA), "only the first waiter holds off")
	assert.Zero(t, tr.HoldOff("other", kindA))
}

// A release that finds nobody standing ends the run: its line goes, and
// with the last line Standing turns false.
func TestTransfersClaimOnEmptyLineDeletesIt(t *testing.T) {
	tr := newTransfers()
	now := time.Now()
	o, _ := stand(tr, "h", "l", kindA)
	require.Same(t, o, claim(tr, "l", kindA, now))
	assert.True(t, hasLine(tr, "l", kindA), "kept for the run")
	assert.True(t, tr.Standing())
	assert.Nil(t, claim(tr, "l", kindA, now))
	assert.False(t, hasLine(tr, "l", kindA))
	assert.False(t, tr.Standing())

	// With another line left, Standing stays true.
	o, _ = stand(tr, "h", "l", kindA)
	keep, _ := stand(tr, "k", "other", kindA)
	require.Same(t, o, claim(tr, "l", kindA, now))
	assert.Nil(t, claim(tr, "l", kindA, now))
	assert.False(t, hasLine(tr, "l", kindA))
	assert.True(t, tr.Standing())
	assert.False(t, tr.Withdraw(keep))
	assert.False(t, tr.Standing())
}

// Lines left behind by runs (their offers claimed or withdrawn) do not
// pile up: a Stand that opens a line while they outnumber twice the
// standing offers by 16 sweeps those whose run is over. Lines with offers
// standing, or within their run, stay.
func TestTransfersSweepBoundsLines(t *testing.T) {
	tr := newTransfers()
	past := time.Now().Add(-time.Minute) // runs long over
	held, _ := stand(tr, "held", "held", kindA)
	// A run that is not over when the sweeps run.
	live, _ := stand(tr, "live", "live", kindA)
	require.Same(t, live, claim(tr, "live", kindA, time.Now().Add(time.Hour)))
	tr.Resolve(live, Grant{Passed: true})

	most := 0
	for i := range 1000 {
		name := fmt.Sprint("lock", i)
		a, _ := stand(tr, "a", name, kindA)
		b, _ := stand(tr, "b", name, kindA)
		require.Same(t, a, claim(tr, name, kindA, past))
		assert.False(t, tr.Withdraw(b))
		assert.True(t, tr.Withdraw(a))
		tr.Resolve(a, Grant{Passed: true})
		_, ok := awaitWithin(t, tr, t.Context(), a)
		require.True(t, ok)
		n := lineCount(tr)
		most = max(most, n)
		require.LessOrEqual(t, n, 2*tr.Offers()+17, "after lock %d", i)
	}
	assert.Greater(t, most, 16, "runs keep their lines until swept")
	assert.True(t, hasLine(tr, "held", kindA), "a line with an offer standing is never swept")
	assert.True(t, hasLine(tr, "live", kindA), "nor one within its run")
	assert.Equal(t, 1, tr.Offers())
	assert.Same(t, held, claim(tr, "held", kindA, time.Now()))
}

// Standing an offer that stands already, or whose claim is not yet
// awaited, does nothing: not even its wake func changes.
func TestTransfersStandTwiceDoesNothing(t *testing.T) {
	tr := newTransfers()
	now := time.Now()
	o, w := stand(tr, "h", "l", kindA)
	w2 := &waker{}
	tr.Stand(o, "l", kindA, w2.wake)
	tr.Stand(o, "other", kindB, w2.wake)
	assert.Equal(t, 1, tr.Offers())
	assert.False(t, hasLine(tr, "other", kindB))
	assert.Nil(t, claim(tr, "other", kindB, now))
	require.Same(t, o, claim(tr, "l", kindA, now))
	assert.Nil(t, claim(tr, "l", kindA, now), "it stood once")

	// Claimed: until its outcome is awaited it stands nowhere.
	tr.Stand(o, "l", kindA, w2.wake)
	assert.Zero(t, tr.Offers())
	assert.Nil(t, claim(tr, "l", kindA, now))
	tr.Resolve(o, Grant{Passed: true})
	assert.EqualValues(t, 1, w.n.Load(), "the first wake func stays")
	assert.Zero(t, w2.n.Load())
	require.True(t, tr.Withdraw(o))
	_, ok := awaitWithin(t, tr, t.Context(), o)
	require.True(t, ok)

	tr.Stand(o, "l", kindA, w2.wake)
	assert.Equal(t, 1, tr.Offers(), "awaited, it stands again")
	require.Same(t, o, claim(tr, "l", kindA, now))
	tr.Resolve(o, Grant{})
	assert.EqualValues(t, 1, w2.n.Load(), "with its new wake func")
	assert.EqualValues(t, 1, w.n.Load())
}

// Unclaim puts a claimed offer back in its place, unknown to its waiter,
// which is not woken; a waiter that withdrew meanwhile hears instead that
// nothing was passed.
func TestTransfersUnclaim(t *testing.T) {
	tr := newTransfers()
	now := time.Now()
	o1, w1 := stand(tr, "h1", "l", kindA)
	o2, _ := stand(tr, "h2", "l", kindA)
	require.Same(t, o1, claim(tr, "l", kindA, now))
	tr.Unclaim(o1)
	assert.Zero(t, w1.n.Load())
	assert.Equal(t, 2, tr.Offers())
	assert.False(t, tr.Withdraw(o1), "not claimed as far as its waiter knows")
	tr.Stand(o1, "l", kindA, w1.wake)
	require.Same(t, o1, claim(tr, "l", kindA, now), "back at the front")
	tr.Unclaim(o1)
	require.Same(t, o1, claim(tr, "l", kindA, now))
	tr.Resolve(o1, Grant{Passed: true})
	assert.EqualValues(t, 1, w1.n.Load())
	require.True(t, tr.Withdraw(o1))
	_, ok := awaitWithin(t, tr, t.Context(), o1)
	require.True(t, ok)

	// Withdrawn after the claim: Await hears nothing was passed.
	require.Same(t, o2, claim(tr, "l", kindA, now))
	require.True(t, tr.Withdraw(o2))
	tr.Unclaim(o2)
	g, ok := awaitWithin(t, tr, t.Context(), o2)
	require.True(t, ok)
	assert.Zero(t, g)
	assert.Zero(t, tr.Offers(), "it does not stand again")
	assert.EqualValues(t, 1, tr.Passed())

	// Its waiter gone, the outcome is Result's.
	o3, w3 := stand(tr, "h3", "l", kindA)
	require.Same(t, o3, claim(tr, "l", kindA, now))
	require.True(t, tr.Withdraw(o3))
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	_, ok = awaitWithin(t, tr, ended, o3)
	require.False(t, ok)
	tr.Unclaim(o3)
	g, done := tr.Result(o3)
	assert.True(t, done)
	assert.Zero(t, g)
	assert.Zero(t, w3.n.Load())
}

// Waiters stand, wait and withdraw while holders claim, then resolve or
// unclaim, all on one line: a waiter is woken only while it waits, at
// most once per wait and only for a claim of it; every resolved outcome
// reaches the waiter claimed, once, through Await; an unclaimed offer's
// waiter hears nothing, or that nothing was passed.
func TestTransfersConcurrent(t *testing.T) {
	const (
		waiters = 8
		holders = 4
		rounds  = 300 // per waiter
		name    = "l"
	)
	tr := newTransfers()
	var (
		token    atomic.Uint64
		mu       sync.Mutex
		given    = make(map[uint64]*Offer) // resolved by the holders, by token
		received = make(map[uint64]*Offer) // awaited by the waiters
		nothing  atomic.Int64              // awaited outcomes of unclaims
		unclaims atomic.Int64
		passes   atomic.Int64
		stop     = make(chan struct{})
	)

	var hwg sync.WaitGroup
	for range holders {
		hwg.Add(1)
		go func() {
			defer hwg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				o := claim(tr, name, kindA, time.Now())
				if o == nil {
					time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
					continue
				}
				if rand.IntN(2) == 0 {
					time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
				}
				if rand.IntN(4) == 0 {
					unclaims.Add(1)
					tr.Unclaim(o)
					continue
				}
				g := Grant{Token: token.Add(1), Passed: rand.IntN(4) > 0}
				g.Unknown = !g.Passed && rand.IntN(2) == 0
				if g.Passed {
					passes.Add(1)
				}
				mu.Lock()
				given[g.Token] = o
				mu.Unlock()
				tr.Resolve(o, g)
			}
		}()
	}

	var wwg sync.WaitGroup
	for i := range waiters {
		wwg.Add(1)
		go func() {
			defer wwg.Done()
			o := offer(fmt.Sprint("w", i))
			var waiting atomic.Bool
			woken := make(chan struct{}, 1)
			wake := func() {
				if !waiting.Load() {
					t.Error("woken while not waiting")
				}
				select {
				case woken <- struct{}{}:
				default:
					t.Error("woken twice in one wait")
				}
			}
			for range rounds {
				waiting.Store(true)
				tr.Stand(o, name, kindA, wake)
				wasWoken := false
				select {
				case <-woken:
					wasWoken = true
				case <-time.After(time.Duration(rand.IntN(500)) * time.Microsecond):
				}
				claimed := tr.Withdraw(o)
				waiting.Store(false)
				select {
				case <-woken: // woken before the withdrawal
					wasWoken = true
				default:
				}
				if wasWoken && !claimed {
					t.Error("woken but not claimed")
				}
				if !claimed {
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), transferPrompt)
				g, ok := tr.Await(ctx, o)
				cancel()
				if !ok {
					t.Error("a claimed offer got no outcome")
					return
				}
				if g.Token == 0 {
					if wasWoken {
						t.Error("woken for an unclaim")
					}
					nothing.Add(1)
					continue
				}
				mu.Lock()
				if _, dup := received[g.Token]; dup {
					t.Errorf("outcome %d received twice", g.Token)
				}
				received[g.Token] = o
				mu.Unlock()
			}
		}()
	}
	wwg.Wait()
	close(stop)
	hwg.Wait()

	assert.Positive(t, len(given), "no transfer was resolved")
	assert.Positive(t, unclaims.Load(), "no transfer was unclaimed")
	assert.LessOrEqual(t, nothing.Load(), unclaims.Load())
	assert.Equal(t, len(given), len(received), "every outcome reached its waiter")
	for tok, o := range given {
		assert.Same(t, o, received[tok], "outcome %d went to another waiter", tok)
	}
	assert.EqualValues(t, passes.Load(), tr.Passed())
	assert.Zero(t, tr.Offers())
	claim(tr, name, kindA, time.Now()) // a release with nobody standing
	assert.False(t, tr.Standing(), "no line is left")
}
