package reliability

// T16 (docs/reliability.md, hazard H14): the fair lock's queue, in three
// parts that run at once on one server, each on a lock of its own.
//
//   - fifo: 1,000 waiters (two Clients) queue 5 ms apart behind a gate
//     holder; once all are queued the gate opens and each waiter, when it
//     acquires, notes its turn and unlocks. The order of acquisition must be
//     the queue's order: 0 inversions. The gate holds with a 60 s lease,
//     because the queue's deadlines start from the holder's remaining
//     lease, and a queue that takes 5 s to fill must outlast it, as behind a
//     long holder in production.
//   - dead: a live waiter, three waiters in worker processes, and two more
//     live waiters queue behind a gate holding a 1 s lease, which it lets
//     run out; the three workers are killed with SIGKILL meanwhile. The
//     live waiter after them must acquire within 3 × threadWaitTime + 1 s
//     of its predecessor's unlock: each dead waiter holds the queue until
//     its deadline, one wait time after the previous one's, counted from
//     the holder's remaining lease (hence a gate that ends with its lease).
//   - stale: a live waiter's deadline is forced into the past while it is
//     queued, so the next attempt of the waiter behind it drops it from the
//     queue (Redisson's eviction of live waiters, #3004). It must still
//     acquire, or fail by its context, and never hang: it returns by its
//     deadline + 100 ms.
//
// threadWaitTime (fairlock.WithWaitTimeout) is 2 s throughout, the lease 3 s.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/internal/redistest"
)

const (
	t16Wait  = 2 * time.Second // threadWaitTime
	t16Lease = 3 * time.Second
)

// t16Env is what the three parts share.
type t16Env struct {
	srv     *redistest.Server
	rc      rueidis.Client
	clients []*interlock.Client
}

func TestT16Fairness(t *testing.T) {
	nightlyOnly(t)
	srv := redistest.Standalone(t)
	env := &t16Env{srv: srv, rc: srv.Client(t)}
	for range 2 {
		c, err := interlock.New(srv.Client(t), interlock.WithWatchdogTimeout(t16Lease))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		env.clients = append(env.clients, c)
	}
	t.Run("fifo", func(t *testing.T) { t.Parallel(); env.fifo(t, 1000) })
	t.Run("dead", func(t *testing.T) { t.Parallel(); env.dead(t) })
	t.Run("stale", func(t *testing.T) { t.Parallel(); env.stale(t) })
}

// lock returns the fair lock name on client i.
func (e *t16Env) lock(i int, name string) *fairlock.Mutex {
	return fairlock.New(e.clients[i%len(e.clients)], name, fairlock.WithWaitTimeout(t16Wait))
}

// queueLen is LLEN of name's queue.
func (e *t16Env) queueLen(ctx context.Context, name string) (int64, error) {
	return e.rc.Do(ctx, e.rc.B().Llen().Key("redisson_lock_queue:{"+name+"}").Build()).AsInt64()
}

// awaitQueueLen polls until name's queue has n waiters.
func (e *t16Env) awaitQueueLen(ctx context.Context, name string, n int64) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		got, err := e.queueLen(ctx, name)
		if err != nil {
			return fmt.Errorf("queue of %s: %d waiters, want %d: %w", name, got, n, err)
		}
		if got == n {
			return nil
		}
		pause := time.NewTimer(time.Millisecond)
		select {
		case <-pause.C:
		case <-ctx.Done():
			pause.Stop()
			return fmt.Errorf("queue of %s: %d waiters, want %d: %w", name, got, n, ctx.Err())
		}
	}
}

// t16Acq is one acquisition, in the order they happened.
type t16Acq struct {
	owner      string
	at, unlock time.Time
}

// recorder of acquisitions: each waiter appends while it holds the lock,
// so the slice is in acquisition order.
type t16Log struct {
	mu   sync.Mutex
	acqs []t16Acq
}

// waiter starts a goroutine on wg that locks m for a new owner, records the
// acquisition, holds for hold and unlocks. It returns the owner string.
func (e *t16Env) waiter(ctx context.Context, wg *sync.WaitGroup, errs chan<- error, m *fairlock.Mutex,
	c *interlock.Client, log *t16Log, hold time.Duration,
) (string, error) {
	octx := interlock.WithOwner(ctx, interlock.NewOwnerID())
	owner, err := c.Owner(octx)
	if err != nil {
		return "", err
	}
	wg.Go(func() {
		if err := m.Lock(octx); err != nil {
			errs <- fmt.Errorf("waiter %s: %w", owner, err)
			return
		}
		a := t16Acq{owner: owner, at: time.Now()}
		if hold > 0 {
			h := time.NewTimer(hold)
			<-h.C
		}
		log.mu.Lock()
		a.unlock = time.Now()
		log.acqs = append(log.acqs, a)
		err := m.Unlock(octx)
		log.mu.Unlock()
		if err != nil {
			errs <- fmt.Errorf("waiter %s unlock: %w", owner, err)
		}
	})
	return owner, nil
}

func (e *t16Env) fifo(t *testing.T, n int) {
	name := "t16-fifo"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	gate := e.lock(0, name)
	gctx := interlock.WithOwner(ctx, interlock.NewOwnerID())
	if err := gate.LockLease(gctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	log := &t16Log{}
	start := time.Now()
	for i := range n {
		if d := time.Until(start.Add(time.Duration(i) * 5 * time.Millisecond)); d > 0 {
			pace := time.NewTimer(d)
			<-pace.C
		}
		if _, err := e.waiter(ctx, &wg, errs, e.lock(i, name), e.clients[i%len(e.clients)], log, 0); err != nil {
			t.Fatal(err)
		}
		// The next waiter starts only once this one is queued, so that
		// the queue's order is the order of i.
		if err := e.awaitQueueLen(ctx, name, int64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	enqueued := time.Since(start)
	queue, err := e.rc.Do(ctx, e.rc.B().Lrange().Key("redisson_lock_queue:{"+name+"}").Start(0).Stop(-1).Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	opened := time.Now()
	if err := gate.Unlock(gctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	drained := time.Since(opened)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	pos := make(map[string]int, len(queue))
	for i, o := range queue {
		pos[o] = i
	}
	inversions := 0
	var handoffs []time.Duration
	for k := 1; k < len(log.acqs); k++ {
		if pos[log.acqs[k].owner] < pos[log.acqs[k-1].owner] {
			inversions++
		}
		handoffs = append(handoffs, log.acqs[k].at.Sub(log.acqs[k-1].unlock))
	}
	t.Logf("T16 fifo: %d waiters queued 5 ms apart in %v, %d acquired in %v, FIFO inversions %d; hand-off %s",
		len(queue), enqueued.Round(time.Millisecond), len(log.acqs), drained.Round(time.Millisecond), inversions, nhSummary(handoffs))
	if len(queue) != n || len(log.acqs) != n {
		t.Errorf("%d queued, %d acquired, want %d", len(queue), len(log.acqs), n)
	}
	if inversions != 0 {
		t.Errorf("%d FIFO inversions", inversions)
	}
}

func (e *t16Env) dead(t *testing.T) {
	name := "t16-dead"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := lockerConfig{
		Lock:       lockConfig{Addr: e.srv.Addr(), Kind: kindFair, Watchdog: t16Lease, FairWait: t16Wait},
		OracleAddr: e.srv.Addr(), // unused: the workers run no section
	}
	dead := make([]*workerProc, 3)
	for i := range dead {
		dead[i] = startLocker(ctx, t, cfg)
	}
	gate := e.lock(0, name)
	gctx := interlock.WithOwner(ctx, interlock.NewOwnerID())
	if err := gate.LockLease(gctx, time.Second); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	log := &t16Log{}
	queued := int64(0)
	live := func() string {
		owner, err := e.waiter(ctx, &wg, errs, e.lock(int(queued), name), e.clients[int(queued)%len(e.clients)], log, 0)
		if err != nil {
			t.Fatal(err)
		}
		queued++
		if err := e.awaitQueueLen(ctx, name, queued); err != nil {
			t.Fatal(err)
		}
		return owner
	}
	first := live()
	for _, w := range dead {
		if err := w.SendJSON("lock", lockCmd{Name: name}); err != nil {
			t.Fatal(err)
		}
		queued++
		if err := e.awaitQueueLen(ctx, name, queued); err != nil {
			t.Fatal(err)
		}
	}
	next := live()
	last := live()
	for _, w := range dead {
		if err := w.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = w.Wait(ctx)
	}
	// The dead waiters' deadlines, for the report: the queue is the gate's
	// waiters in order, so they are its entries 1 to 3.
	queue, err := e.rc.Do(ctx, e.rc.B().Lrange().Key("redisson_lock_queue:{"+name+"}").Start(0).Stop(-1).Build()).AsStrSlice()
	if err != nil || len(queue) != 6 {
		t.Fatalf("queue %v: %v", queue, err)
	}
	var lastDeadline time.Time
	for _, o := range queue[1:4] {
		ms, err := e.rc.Do(ctx, e.rc.B().Zscore().Key("redisson_lock_timeout:{"+name+"}").Member(o).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		// The first waiter's acquisition moves every deadline one wait
		// time earlier.
		lastDeadline = time.UnixMilli(ms).Add(-t16Wait)
	}
	// The gate's lease runs out by itself: the queue's deadlines count
	// the holder's remaining lease, so the dead waiters' penalty runs from
	// its end.
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got := make([]string, len(log.acqs))
	for i, a := range log.acqs {
		got[i] = a.owner
	}
	if want := []string{first, next, last}; !slices.Equal(got, want) {
		t.Fatalf("acquisition order %v, want %v", got, want)
	}
	bound := 3*t16Wait + time.Second
	delay := log.acqs[1].at.Sub(log.acqs[0].unlock)
	t.Logf("T16 dead: 3 waiters killed in the queue; next live waiter acquired %v after its predecessor's unlock (bound %v), %v after the last dead waiter's deadline; the one after it %v later",
		delay.Round(time.Millisecond), bound, log.acqs[1].at.Sub(lastDeadline).Round(time.Millisecond),
		log.acqs[2].at.Sub(log.acqs[1].unlock).Round(time.Millisecond))
	if delay > bound {
		t.Errorf("next live waiter acquired %v after its predecessor's unlock, want <= %v", delay, bound)
	}
}

func (e *t16Env) stale(t *testing.T) {
	name := "t16-stale"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	gate := e.lock(0, name)
	gctx := interlock.WithOwner(ctx, interlock.NewOwnerID())
	if err := gate.Lock(gctx); err != nil {
		t.Fatal(err)
	}
	// The waiter to be forced stale, with a deadline of its own.
	const budget = 15 * time.Second
	sctx, scancel := context.WithTimeout(interlock.WithOwner(ctx, interlock.NewOwnerID()), budget)
	defer scancel()
	sdeadline, _ := sctx.Deadline()
	sowner, err := e.clients[1].Owner(sctx)
	if err != nil {
		t.Fatal(err)
	}
	sm := e.lock(1, name)
	type result struct {
		err error
		at  time.Time
	}
	sres := make(chan result, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		err := sm.Lock(sctx)
		at := time.Now()
		if err == nil {
			hold := time.NewTimer(50 * time.Millisecond)
			<-hold.C
			err = errors.Join(err, sm.Unlock(sctx))
		}
		sres <- result{err, at}
	})
	if err := e.awaitQueueLen(ctx, name, 1); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 1)
	log := &t16Log{}
	if _, err := e.waiter(ctx, &wg, errs, e.lock(0, name), e.clients[0], log, 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := e.awaitQueueLen(ctx, name, 2); err != nil {
		t.Fatal(err)
	}
	// Force the first waiter's deadline into the past.
	n, err := e.rc.Do(ctx, e.rc.B().Zadd().Key("redisson_lock_timeout:{"+name+"}").Xx().Ch().ScoreMember().
		ScoreMember(1, sowner).Build()).AsInt64()
	if err != nil || n != 1 {
		t.Fatalf("forcing %s stale: %d %v", name, n, err)
	}
	if err := gate.Unlock(gctx); err != nil {
		t.Fatal(err)
	}
	r := <-sres
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	switch {
	case r.err == nil:
		t.Logf("T16 stale: the forced-stale waiter acquired %v before its deadline", sdeadline.Sub(r.at).Round(time.Millisecond))
	case errors.Is(r.err, context.DeadlineExceeded):
		late := r.at.Sub(sdeadline)
		t.Logf("T16 stale: the forced-stale waiter failed by its context, %v after its deadline", late.Round(time.Millisecond))
		if late > 100*time.Millisecond {
			t.Errorf("the forced-stale waiter returned %v after its deadline, want <= 100ms", late)
		}
	default:
		t.Errorf("the forced-stale waiter: %v", r.err)
	}
}
