package reliability

// T15 with lost replies: the read/write model fuzz of TestT15RWModel, with
// each fuzzer's two Clients behind a fault proxy that drops the reply to
// the read/write acquire and unlock scripts at random (DropReplyTo with
// n = 1, armed before a random fraction of the steps, the fraction drawn
// per program). The model is compared after every step. What the library
// promises (internal/lockcore):
//
//   - an acquisition whose reply was lost is taken back before TryLock
//     returns its error (undo, for exactly the count it would have made),
//     so the server and the Client's records end as if it never ran; if
//     TryLock reports success instead, the model keeps the hold;
//   - an unlock whose reply was lost is resent under its latch, so its
//     outcome is the model's, as without the fault.
//
// Only unlocks of held locks lose replies here; TestT06LostUnlockReply
// covers lost replies to unlocks of a lock that is gone, for every kind.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/faultproxy"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/script"
	"github.com/interlock-go/interlock/rwlock"
)

// t15LossFraction bounds the fraction of steps armed with a lost reply.
const t15LossFraction = 0.5

func TestT15LostReplies(t *testing.T) {
	srv := redistest.Standalone(t)
	rc := srv.Client(t)
	programs := sized(2000, 20000)
	type lane struct {
		proxy   *faultproxy.Proxy
		f       *t15Fuzzer
		clients [2]*interlock.Client
	}
	lanes := make([]lane, t15Workers)
	for w := range lanes {
		p, err := faultproxy.Start(srv.Addr())
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Close() })
		var clients [2]*interlock.Client
		for i := range clients {
			c, err := interlock.New(netDial(t, p.Addr()))
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			clients[i] = c
		}
		lanes[w] = lane{p, newT15Fuzzer(rc, clients, fmt.Sprintf("t15:lost:%d", w), uint64(100+w)), clients}
	}
	var next, armed, dropped, undone, kept, stale, skipped, divergences atomic.Int64
	var staleMu sync.Mutex
	var staleSample string
	var wg sync.WaitGroup
	errs := make(chan error, t15Workers)
	for _, ln := range lanes {
		wg.Go(func() {
			l := &t15Lossy{f: ln.f, proxy: ln.proxy, clients: ln.clients}
			for next.Add(1) <= int64(programs) {
				if err := l.program(); err != nil {
					divergences.Add(1)
					errs <- err
					return
				}
			}
			armed.Add(l.armed)
			dropped.Add(l.dropped)
			undone.Add(l.undone)
			kept.Add(l.kept)
			stale.Add(l.stale)
			skipped.Add(l.staleSkipped)
			staleMu.Lock()
			if staleSample == "" {
				staleSample = l.staleSample
			}
			staleMu.Unlock()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var steps int64
	for _, ln := range lanes {
		steps += ln.f.steps
	}
	t.Logf("T15 rwlock lost replies: %d programs, %d steps, %d divergences; %d steps armed, %d replies dropped, %d lost acquisitions taken back, %d reported as held, %d failed but left on the server (stale local records); %d acquisitions kept lossless while the Client's records were stale",
		programs, steps, divergences.Load(), armed.Load(), dropped.Load(), undone.Load(), kept.Load(), stale.Load(), skipped.Load())
	require.Zero(t, divergences.Load())
	require.Zero(t, stale.Load(), "failed acquisitions left on the server; the first:\n%s", staleSample)
	require.NotZero(t, dropped.Load(), "no reply was dropped")
	for _, ln := range lanes {
		for _, c := range ln.clients {
			require.Zero(t, c.Stats().Holds, "renewal entries left")
		}
	}
}

// t15Lossy drives a t15Fuzzer with lost replies.
type t15Lossy struct {
	f       *t15Fuzzer
	proxy   *faultproxy.Proxy
	clients [2]*interlock.Client
	p       float64 // this program's fraction of armed steps

	armed, dropped, undone, kept int64
	stale                        int64  // lost acquisitions left on the server
	staleSkipped                 int64  // acquisitions not made lossy: stale records
	staleSample                  string // the first of them, with its program
}

// t15Scripts are the scripts whose replies are dropped.
var t15Scripts = netScripts(script.RWReadAcquire(), script.RWWriteAcquire(), script.RWReadUnlock(), script.RWWriteUnlock())

// program is t15Fuzzer.program with lost replies.
func (l *t15Lossy) program() error {
	f := l.f
	f.log = f.log[:0]
	l.p = f.rng.Float64() * t15LossFraction
	for range 2 + f.rng.IntN(7) {
		if err := l.step(); err != nil {
			return err
		}
	}
	for f.model.pending() {
		if err := f.drainOne(); err != nil {
			return err
		}
	}
	return f.compare("drained")
}

// step is t15Fuzzer.step, with lossy acquisitions and unlocks; short
// leases are left out (their expiry is timed, a lost reply would not be).
func (l *t15Lossy) step() error {
	f := l.f
	m := f.model
	o := f.owners[f.rng.IntN(len(f.owners))]
	lc := m.local[o]
	switch r := f.rng.IntN(100); {
	case r < 30 && m.reads[o] < t15MaxDepth && len(lc.read) < t15MaxDepth+2:
		return l.acquire(o, false)
	case r < 50 && m.writes[o] < t15MaxDepth && len(lc.write) < t15MaxDepth+2:
		return l.acquire(o, true)
	case r < 70 && m.mode != "" && m.reads[o] > 0:
		return l.withLoss(func() error { return f.unlock(o, false) })
	case r < 70:
		return f.unlock(o, false)
	case r < 85 && m.mode == "write" && m.writes[o] > 0:
		return l.withLoss(func() error { return f.unlock(o, true) })
	case r < 85:
		return f.unlock(o, true)
	case r < 88:
		return f.expireAll()
	case r < 100:
		return f.expireOne()
	}
	return nil
}

// arm decides whether the next step loses a reply, and arms the proxy.
func (l *t15Lossy) arm() (armed bool, before int64) {
	if l.f.rng.Float64() >= l.p {
		return false, 0
	}
	l.armed++
	before = l.proxy.Stats().RepliesDropped
	l.proxy.DropReplyTo(t15Scripts, 1)
	return true, before
}

// disarm removes the rule and reports whether a reply was dropped.
func (l *t15Lossy) disarm(before int64) bool {
	l.proxy.DropReplyTo(nil, 0)
	if l.proxy.Stats().RepliesDropped > before {
		l.dropped++
		return true
	}
	return false
}

// withLoss runs op (an unlock: its outcome is the model's either way)
// with a lost reply armed at random.
func (l *t15Lossy) withLoss(op func() error) error {
	armed, before := l.arm()
	err := op()
	if armed {
		l.disarm(before)
	}
	return err
}

// acquire is t15Fuzzer.acquire with a lost reply armed at random: when
// the reply was lost, TryLock must fail and the model stay as it was
// (the library took the acquisition back), or succeed and the model take
// the hold.
//
// A reply is never lost while the Client's records of the owner disagree
// with the server (a hold expired by the fuzzer's DEL, which the Client
// learns of only at its next renewal): the undo then cannot tell the hold
// it would take back from one the Client still counts, and leaves the
// server as it is. That limitation is documented in docs/reliability.md;
// such steps are counted as staleSkipped.
func (l *t15Lossy) acquire(o string, write bool) error {
	f := l.f
	lc := f.model.local[o]
	if t15Holds(lc.read) != f.model.reads[o] || t15Holds(lc.write) != f.model.writes[o] {
		l.staleSkipped++
		return f.acquire(o, write, false)
	}
	armed, before := l.arm()
	if !armed {
		return f.acquire(o, write, false)
	}
	saved := f.model.clone()
	lease := time.Duration(20+f.rng.IntN(21)) * time.Second
	ctx, cancel := context.WithTimeout(f.ctxs[o], 10*time.Second)
	defer cancel()
	var want t15Outcome
	var ok bool
	var err error
	if write {
		want = f.model.writeAcquire(o, false)
		ok, err = f.locks[o].Write().TryLock(ctx, 0, lease)
	} else {
		want = f.model.readAcquire(o, false)
		ok, err = f.locks[o].Read().TryLock(ctx, 0, lease)
	}
	lost := l.disarm(before)
	op := fmt.Sprintf("%s %s acquire (lease %v, reply lost: %v)", f.label(o), t15Kind(write), lease, lost)
	got := t15OK
	switch {
	case errors.Is(err, rwlock.ErrUpgrade):
		got = t15Upgrade
	case err != nil && lost:
		// Taken back: the Client's records are as before; the server is
		// as before, except that taking back a read hold is a read
		// unlock, which also clears a hash whose other read holds all
		// expired (their timeout keys are gone).
		l.undone++
		if err := l.settled(); err != nil {
			return f.diverged(op, err)
		}
		stale := want == t15OK && ((write && saved.writes[o] == 0 && t15Holds(saved.local[o].write) > 0) ||
			(!write && saved.reads[o] == 0 && t15Holds(saved.local[o].read) > 0))
		switch {
		case stale:
			// The owner's Client still records a hold the server no
			// longer has (its key vanished before the Scheduler noticed):
			// the undo expects the count records+1, finds 1 and does
			// nothing, so the failed acquisition stays on the server and
			// the stale record keeps renewing it. A violation of "not
			// acquired, no hold left"; counted, and the fuzz goes on from
			// the state the library left.
			l.stale++
			f.model.local = saved.local
			if l.staleSample == "" {
				l.staleSample = f.diverged(op, errors.New("a failed acquisition left its hold on the server")).Error()
			}
			return f.compare(op + ": failed, but left on the server (stale records)")
		case !write && want == t15OK:
			f.model.undoRead(o)
			f.model.local = saved.local
		default:
			f.model = saved
		}
		f.outcomes[t15Busy]++
		return f.compare(op + ": taken back")
	case err != nil:
		return f.diverged(op, fmt.Errorf("unexpected error: %w", err))
	case !ok:
		got = t15Busy
	}
	if lost && got == t15OK {
		l.kept++
	}
	return f.check(op, want, got)
}

// settled waits until the Clients' clean-up queues are empty: TryLock
// waits for the take-back of a lost acquisition for at most a second,
// and the queue goes on with it past that on a loaded machine.
func (l *t15Lossy) settled() error {
	deadline := time.Now().Add(10 * time.Second)
	for l.clients[0].Stats().UndoQueue+l.clients[1].Stats().UndoQueue > 0 {
		if time.Now().After(deadline) {
			return errors.New("the take-back was still queued after 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// clone returns a deep copy of the model.
func (m *t15Model) clone() *t15Model {
	c := &t15Model{
		mode:   m.mode,
		reads:  maps.Clone(m.reads),
		writes: maps.Clone(m.writes),
		alive:  maps.Clone(m.alive),
		local:  make(map[string]*t15Local, len(m.local)),
	}
	for o, l := range m.local {
		c.local[o] = &t15Local{read: slices.Clone(l.read), write: slices.Clone(l.write)}
	}
	return c
}

// undoRead applies lua/rw_undo_read.lua for owner o, after the read
// acquisition it takes back was applied to the model: one read hold less
// (its timeout key deleted), and the hash deleted unless a live read hold
// or the write mode keeps it, as rw_read_unlock.lua does.
func (m *t15Model) undoRead(o string) {
	count := m.reads[o]
	if count > 1 {
		m.reads[o] = count - 1
	} else {
		delete(m.reads, o)
	}
	delete(m.alive, t15Hold{o, count})
	if len(m.reads)+len(m.writes) > 0 {
		for h := range m.alive {
			if h.k <= m.reads[h.owner] {
				return
			}
		}
		if m.mode == "write" {
			return
		}
	}
	m.clear()
}
