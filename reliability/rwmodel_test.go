package reliability

// T15 (docs/reliability.md, hazard H13): the read/write lock against a
// reference model (model_test.go). Random short programs of three owners
// on each of two Clients (two processes on the wire: two client ids)
// take, re-enter and release read and write holds, with expiry injected
// (a whole lock or one read hold's timeout key vanishing) and real short
// leases running out; after every step the hash, the timeout keys and
// their TTLs must be what the model says. Then a long read hold: the
// watchdog keeps its timeout keys well above half a lease, and a killed
// worker's keys are never renewed.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/rwlock"
)

const (
	// t15Workers is how many names are fuzzed at once.
	t15Workers = 6
	// t15MaxDepth bounds reentrancy, per owner and kind.
	t15MaxDepth = 3
	// t15Short is the lease of holds that are meant to run out; t15Expired
	// is how long after the reply the test waits for that.
	t15Short   = 10 * time.Millisecond
	t15Expired = 40 * time.Millisecond
	// t15MaxPTTL bounds every TTL the fuzz may see: write re-entries add
	// their lease (at most 40 s) to the hash's TTL.
	t15MaxPTTL = 200 * time.Second
)

func TestT15RWModel(t *testing.T) {
	srv := redistest.Standalone(t)
	rc := srv.Client(t)
	clients := [2]*interlock.Client{}
	for i := range clients {
		c, err := interlock.New(srv.Client(t))
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		clients[i] = c
	}
	programs := sized(10000, 100000)
	var next, steps, divergences, expiries, shortLeases atomic.Int64
	outcomes := make([]atomic.Int64, 4)
	var wg sync.WaitGroup
	errs := make(chan error, t15Workers)
	for w := range t15Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := newT15Fuzzer(rc, clients, fmt.Sprintf("t15:rw:%d", w), uint64(w))
			for next.Add(1) <= int64(programs) {
				if err := f.program(); err != nil {
					divergences.Add(1)
					errs <- err
					return
				}
			}
			steps.Add(f.steps)
			expiries.Add(f.expiries)
			shortLeases.Add(f.shorts)
			for i := range outcomes {
				outcomes[i].Add(f.outcomes[i])
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("T15 rwlock model: %d programs, %d steps, %d divergences; ok %d, busy %d, not held %d, upgrade refused %d; %d injected expiries, %d short leases run out",
		programs, steps.Load(), divergences.Load(), outcomes[t15OK].Load(), outcomes[t15Busy].Load(),
		outcomes[t15NotHeld].Load(), outcomes[t15Upgrade].Load(), expiries.Load(), shortLeases.Load())
	require.Zero(t, divergences.Load())
	for _, c := range clients {
		require.Zero(t, c.Stats().Holds, "renewal entries left")
	}
}

// t15Fuzzer runs programs on one name.
type t15Fuzzer struct {
	rc       rueidis.Client
	name     string
	prefix   string // {name}
	owners   []string
	ctxs     map[string]context.Context
	locks    map[string]*rwlock.Mutex
	rng      *rand.Rand
	model    *t15Model
	log      []string // the current program, for a failure message
	steps    int64
	shorts   int64
	expiries int64
	outcomes [4]int64
}

func newT15Fuzzer(rc rueidis.Client, clients [2]*interlock.Client, name string, seed uint64) *t15Fuzzer {
	f := &t15Fuzzer{
		rc: rc, name: name, prefix: "{" + name + "}",
		ctxs:  map[string]context.Context{},
		locks: map[string]*rwlock.Mutex{},
		rng:   rand.New(rand.NewPCG(rand.Uint64(), seed)),
	}
	for range 3 {
		id := interlock.NewOwnerID()
		for _, c := range clients {
			ctx := interlock.WithOwner(context.Background(), id)
			o, _ := c.Owner(ctx)
			f.owners = append(f.owners, o)
			f.ctxs[o] = ctx
			f.locks[o] = rwlock.New(c, name)
		}
	}
	f.model = newT15Model(f.owners)
	return f
}

// program runs one random program and drains it; it returns the first
// divergence from the model.
func (f *t15Fuzzer) program() error {
	f.log = f.log[:0]
	n := 2 + f.rng.IntN(7)
	for range n {
		if err := f.step(); err != nil {
			return err
		}
	}
	// Drain: every owner lets go of everything, on the server and in its
	// Client's records; then nothing may be left.
	for f.model.pending() {
		if err := f.drainOne(); err != nil {
			return err
		}
	}
	return f.compare("drained")
}

// step runs one random operation and compares.
func (f *t15Fuzzer) step() error {
	m := f.model
	o := f.owners[f.rng.IntN(len(f.owners))]
	l := m.local[o]
	switch r := f.rng.IntN(100); {
	case r < 30 && m.reads[o] < t15MaxDepth && len(l.read) < t15MaxDepth+2:
		return f.acquire(o, false, false)
	case r < 50 && m.writes[o] < t15MaxDepth && len(l.write) < t15MaxDepth+2:
		return f.acquire(o, true, false)
	case r < 70:
		return f.unlock(o, false)
	case r < 85:
		return f.unlock(o, true)
	case r < 88:
		return f.expireAll()
	case r < 98:
		return f.expireOne()
	case r < 99 && m.reads[o] == 0 && t15Holds(l.read) == 0 && (m.mode == "" || m.mode == "read"):
		return f.acquire(o, false, true)
	case r < 100 && m.mode == "" && t15Holds(l.write) == 0 && t15Holds(l.read) == 0:
		return f.acquire(o, true, true)
	}
	return nil
}

func (f *t15Fuzzer) drainOne() error {
	m := f.model
	for _, o := range f.owners {
		if m.writes[o] > 0 || len(m.local[o].write) > 0 {
			return f.unlock(o, true)
		}
	}
	for _, o := range f.owners {
		if m.reads[o] > 0 || len(m.local[o].read) > 0 {
			return f.unlock(o, false)
		}
	}
	// Only stale fields of owners that hold nothing locally are left:
	// any reader's unlock would clear them; use the first stale reader.
	for o := range m.reads {
		return f.unlock(o, false)
	}
	return fmt.Errorf("%s: model pending but nothing to drain: %v", f.name, m)
}

// acquire runs a single-attempt acquisition; a short one waits until its
// lease has run out before comparing.
func (f *t15Fuzzer) acquire(o string, write, short bool) error {
	lease := time.Duration(20+f.rng.IntN(21)) * time.Second
	if short {
		lease = t15Short
	}
	var want t15Outcome
	var ok bool
	var err error
	ctx, cancel := context.WithTimeout(f.ctxs[o], 10*time.Second)
	defer cancel()
	if write {
		want = f.model.writeAcquire(o, short)
		ok, err = f.locks[o].Write().TryLock(ctx, 0, lease)
	} else {
		want = f.model.readAcquire(o, short)
		ok, err = f.locks[o].Read().TryLock(ctx, 0, lease)
	}
	op := fmt.Sprintf("%s %s acquire (lease %v)", f.label(o), t15Kind(write), lease)
	got := t15OK
	switch {
	case errors.Is(err, rwlock.ErrUpgrade):
		got = t15Upgrade
	case err != nil:
		return f.diverged(op, fmt.Errorf("unexpected error: %w", err))
	case !ok:
		got = t15Busy
	}
	if short && got == t15OK {
		f.shorts++
		time.Sleep(t15Expired)
	}
	return f.check(op, want, got)
}

func (f *t15Fuzzer) unlock(o string, write bool) error {
	ctx, cancel := context.WithTimeout(f.ctxs[o], 10*time.Second)
	defer cancel()
	var want t15Outcome
	var err error
	if write {
		want = f.model.writeUnlock(o)
		err = f.locks[o].Write().Unlock(ctx)
	} else {
		want = f.model.readUnlock(o)
		err = f.locks[o].Read().Unlock(ctx)
	}
	op := fmt.Sprintf("%s %s unlock", f.label(o), t15Kind(write))
	got := t15OK
	switch {
	case errors.Is(err, interlock.ErrNotHeld):
		got = t15NotHeld
	case err != nil:
		return f.diverged(op, fmt.Errorf("unexpected error: %w", err))
	}
	return f.check(op, want, got)
}

// expireAll makes the whole lock vanish, as when every lease ran out.
func (f *t15Fuzzer) expireAll() error {
	ks := []string{f.name}
	for _, o := range f.owners {
		for k := 1; k <= t15MaxK; k++ {
			ks = append(ks, f.timeoutKey(o, k))
		}
	}
	f.expiries++
	f.model.clear()
	if err := f.do(f.rc.B().Del().Key(ks...).Build()); err != nil {
		return err
	}
	return f.compare("expire the lock")
}

// expireOne makes one live read hold's timeout key vanish, as when that
// reader's process died.
func (f *t15Fuzzer) expireOne() error {
	var live []t15Hold
	for h := range f.model.alive {
		live = append(live, h)
	}
	if len(live) == 0 {
		return nil
	}
	h := live[f.rng.IntN(len(live))]
	f.expiries++
	delete(f.model.alive, h)
	if err := f.do(f.rc.B().Del().Key(f.timeoutKey(h.owner, h.k)).Build()); err != nil {
		return err
	}
	return f.compare(fmt.Sprintf("expire %s read hold %d", f.label(h.owner), h.k))
}

func (f *t15Fuzzer) do(cmd rueidis.Completed) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return f.rc.Do(ctx, cmd).Error()
}

// check compares an operation's outcome, then the server state.
func (f *t15Fuzzer) check(op string, want, got t15Outcome) error {
	f.outcomes[got]++
	if want != got {
		return f.diverged(op, fmt.Errorf("returned %v, the model says %v", got, want))
	}
	return f.compare(fmt.Sprintf("%s: %v", op, got))
}

// compare reads the hash, its TTL and every owner's timeout keys in one
// round trip and compares them with the model.
func (f *t15Fuzzer) compare(op string) error {
	f.steps++
	f.log = append(f.log, op)
	cmds := rueidis.Commands{
		f.rc.B().Hgetall().Key(f.name).Build(),
		f.rc.B().Pttl().Key(f.name).Build(),
	}
	var holds []t15Hold
	for _, o := range f.owners {
		for k := 1; k <= t15MaxK; k++ {
			holds = append(holds, t15Hold{o, k})
			cmds = append(cmds, f.rc.B().Pttl().Key(f.timeoutKey(o, k)).Build())
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res := f.rc.DoMulti(ctx, cmds...)
	got, err := res[0].AsStrMap()
	if err != nil {
		return f.diverged(op, err)
	}
	want := f.model.hash()
	if len(got) != len(want) {
		return f.diverged(op, fmt.Errorf("hash %v, model %v", got, want))
	}
	for k, v := range want {
		if got[k] != v {
			return f.diverged(op, fmt.Errorf("hash %v, model %v", got, want))
		}
	}
	ttl, err := res[1].AsInt64()
	if err != nil {
		return f.diverged(op, err)
	}
	if len(want) > 0 && (ttl <= 0 || ttl > t15MaxPTTL.Milliseconds()) {
		return f.diverged(op, fmt.Errorf("hash PTTL %d ms", ttl))
	}
	for i, h := range holds {
		pttl, err := res[2+i].AsInt64()
		if err != nil {
			return f.diverged(op, err)
		}
		exists := pttl != -2
		if exists != f.model.alive[h] {
			return f.diverged(op, fmt.Errorf("timeout key of %s read hold %d: PTTL %d, model says alive=%v", f.label(h.owner), h.k, pttl, f.model.alive[h]))
		}
		if exists && (pttl <= 0 || pttl > 40_000) {
			return f.diverged(op, fmt.Errorf("timeout key of %s read hold %d: PTTL %d ms", f.label(h.owner), h.k, pttl))
		}
	}
	return nil
}

func (f *t15Fuzzer) diverged(op string, err error) error {
	return fmt.Errorf("%s diverged at %q: %w\nmodel: %v\nprogram so far:\n  %s", f.name, op, err, f.model, strings.Join(f.log, "\n  "))
}

func (f *t15Fuzzer) timeoutKey(owner string, k int) string {
	return f.prefix + ":" + owner + ":rwlock_timeout:" + strconv.Itoa(k)
}

// label names an owner by its index, shorter than its owner string.
func (f *t15Fuzzer) label(o string) string {
	for i, x := range f.owners {
		if x == o {
			return fmt.Sprintf("owner%d(client%d)", i/2, i%2)
		}
	}
	return o
}

func t15Kind(write bool) string {
	if write {
		return "write"
	}
	return "read"
}

// ---- the long hold ----

// Environment of the t15-rw worker.
const (
	t15EnvAddr  = "INTERLOCK_T15_ADDR"
	t15EnvName  = "INTERLOCK_T15_NAME"
	t15EnvLease = "INTERLOCK_T15_LEASE_MS"
)

// The t15-rw worker takes a watchdog read hold as owner 1, prints its
// owner string, and keeps renewing until it is killed or stdin closes.
var _ = register("t15-rw", func() error {
	lease, err := strconv.Atoi(os.Getenv(t15EnvLease))
	if err != nil {
		return fmt.Errorf("%s: %w", t15EnvLease, err)
	}
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{os.Getenv(t15EnvAddr)}, ForceSingleClient: true})
	if err != nil {
		return err
	}
	defer rc.Close()
	c, err := interlock.New(rc, interlock.WithWatchdogTimeout(time.Duration(lease)*time.Millisecond))
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(interlock.WithOwner(context.Background(), 1), 10*time.Second)
	defer cancel()
	if err := rwlock.New(c, os.Getenv(t15EnvName)).Read().Lock(ctx); err != nil {
		return err
	}
	owner, err := c.Owner(ctx)
	if err != nil {
		return err
	}
	fmt.Println(owner)
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // blocks until killed
	return nil
})

// TestT15LongReadHold holds read locks for a long time while sampling
// every key's PTTL, beside a reader in another process that is killed
// once it holds. The dead reader's key must only ever fall (never
// renewed) and vanish within its lease; the live keys must stay above
// half a lease.
//
// Two of these bounds are latencies, not safety: how far a live key falls
// before its renewal (a renewal tick comes every lease/3, so the key
// falls to about two thirds of the lease, and the second on top of that
// is for a tick that wakes late), and how soon the sampler sees the dead
// key gone (every 200 ms, and a second more). In the PR gate, where three
// packages share two cores under the race detector, both seconds get
// latencyBound's headroom: there a live key must only stay alive, and the
// sampler goes on past the hold until it sees the dead key gone or that
// bound has passed. The nightly tier keeps lease/2 and lease + 1 s. A dead
// reader's key that rises, or comes back, fails in every tier.
func TestT15LongReadHold(t *testing.T) {
	t.Parallel() // mostly sampling TTLs
	redistest.RequireProcess(t)
	const lease = 6 * time.Second // renewed every 2 s
	hold := time.Duration(sized(10, 180)) * time.Second
	// The lowest PTTL a live key may show: a whole lease less one
	// interval and the slack, at least 1 ms (alive, with a TTL).
	liveFloor := max(lease-lease/3-latencyBound(lease/2-lease/3), time.Millisecond)
	// How soon after the kill the dead reader's key must be seen gone.
	deadBound := lease + latencyBound(time.Second)
	srv := redistest.Standalone(t)
	rc := srv.Client(t)
	c, err := interlock.New(srv.Client(t), interlock.WithWatchdogTimeout(lease))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	name := "t15:long"
	prefix := "{" + name + "}"
	m := rwlock.New(c, name)

	// Live holds: owner A reads twice, owner B once.
	a := interlock.WithOwner(t.Context(), interlock.NewOwnerID())
	b := interlock.WithOwner(t.Context(), interlock.NewOwnerID())
	for _, ctx := range []context.Context{a, a, b} {
		require.NoError(t, m.Read().Lock(ctx))
	}
	ownerA, _ := c.Owner(a)
	ownerB, _ := c.Owner(b)
	live := []string{
		prefix + ":" + ownerA + ":rwlock_timeout:1",
		prefix + ":" + ownerA + ":rwlock_timeout:2",
		prefix + ":" + ownerB + ":rwlock_timeout:1",
	}

	// A reader in another process, killed once it holds.
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envWorker+"=t15-rw", t15EnvAddr+"="+srv.Addr(), t15EnvName+"="+name,
		t15EnvLease+"="+strconv.FormatInt(lease.Milliseconds(), 10))
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = stdin.Close() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "worker: %s", stderr.String())
	deadKey := prefix + ":" + strings.TrimSpace(line) + ":rwlock_timeout:1"
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	killed := time.Now()

	ctx := t.Context()
	minLive := int64(1 << 62)
	lastDead, deadGoneAfter := int64(1<<62), time.Duration(0)
	samples := 0
	for start := time.Now(); time.Since(start) < hold || (deadGoneAfter == 0 && time.Since(killed) < deadBound); time.Sleep(200 * time.Millisecond) {
		cmds := rueidis.Commands{rc.B().Pttl().Key(name).Build(), rc.B().Pttl().Key(deadKey).Build()}
		for _, k := range live {
			cmds = append(cmds, rc.B().Pttl().Key(k).Build())
		}
		res := rc.DoMulti(ctx, cmds...)
		samples++
		for i, r := range res {
			pttl, err := r.AsInt64()
			require.NoError(t, err)
			switch i {
			case 1: // the dead reader's key: only ever falls, then vanishes
				if pttl == -2 {
					if deadGoneAfter == 0 {
						deadGoneAfter = time.Since(killed)
					}
					continue
				}
				require.Zero(t, deadGoneAfter, "the dead reader's key came back")
				require.Less(t, pttl, lastDead, "the dead reader's key was renewed (PTTL %d after %d)", pttl, lastDead)
				lastDead = pttl
			default: // the hash and the live keys
				require.GreaterOrEqual(t, pttl, liveFloor.Milliseconds(), "live key %d fell below %v", i, liveFloor)
				minLive = min(minLive, pttl)
			}
		}
	}
	require.NotZero(t, deadGoneAfter, "the dead reader's key never expired")
	require.Less(t, deadGoneAfter, deadBound, "the dead reader's key outlived its lease")
	t.Logf("T15 long read hold: %v, %d samples, live keys' lowest PTTL %d ms (lease %v, floor %v), dead reader's key gone %v after the kill (bound %v), never renewed",
		hold, samples, minLive, lease, liveFloor, deadGoneAfter.Round(time.Millisecond), deadBound)
	for _, ctx := range []context.Context{a, a, b} {
		require.NoError(t, m.Read().Unlock(ctx))
	}
}
