package rwlock_test

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/rwlock"
)

// TestWriteUnlockWakesAllReaders is Redisson's testWriteRead: readers
// blocked by a writer all get in together when it releases ("1" wakes
// every waiter), hold for 800ms at the same time, and are done well within
// the 16s that one reader at a time would take. First with all 20 readers
// on one Client, then split over two.
func TestWriteUnlockWakesAllReaders(t *testing.T) {
	for _, clients := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d clients", clients), func(t *testing.T) {
			// maxEnter and maxDone leave seconds for the late wake-ups of
			// a loaded machine (latency, not safety; most shows the
			// sharing).
			const (
				readers  = 20
				hold     = 800 * time.Millisecond
				maxEnter = 2 * time.Second
				maxDone  = hold + maxEnter
			)
			ctx := redistest.Context(t)
			cs := make([]*interlock.Client, clients)
			for i := range cs {
				cs[i], _ = newClient(t)
			}
			name := lockName(t)
			writer := owner(ctx)
			require.NoError(t, rwlock.New(cs[0], name).Write().Lock(writer))

			var inside, most atomic.Int64
			entered := make(chan time.Time, readers)
			done := make(chan time.Time, readers)
			var wg sync.WaitGroup
			for i := range readers {
				c := cs[i%clients]
				wg.Go(func() {
					r := rwlock.New(c, name).Read()
					me := owner(ctx)
					if !assert.NoError(t, r.Lock(me)) {
						return
					}
					entered <- time.Now()
					n := inside.Add(1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					time.Sleep(hold)
					inside.Add(-1)
					assert.NoError(t, r.Unlock(me))
					done <- time.Now()
				})
			}
			for _, c := range cs {
				redistest.Eventually(t, 5*time.Second, func() bool { return c.Stats().Channels == 1 }, "readers not waiting")
			}
			time.Sleep(300 * time.Millisecond) // let every reader park
			require.Empty(t, entered, "a reader got in while the writer held the lock")

			released := time.Now()
			require.NoError(t, rwlock.New(cs[0], name).Write().Unlock(writer))
			wg.Wait()
			close(entered)
			close(done)
			var enter, finish time.Duration
			for at := range entered {
				enter = max(enter, at.Sub(released))
			}
			for at := range done {
				finish = max(finish, at.Sub(released))
			}
			t.Logf("%d readers on %d client(s): last entered %v and finished %v after the write release; %d inside at once",
				readers, clients, enter.Round(time.Millisecond), finish.Round(time.Millisecond), most.Load())
			assert.Less(t, enter, maxEnter)
			assert.Less(t, finish, maxDone)
			assert.EqualValues(t, readers, most.Load(), "the readers did not share the lock")
		})
	}
}

// TestContendedCyclesLeaveNothing runs 5,000 read and write acquisitions
// by 12 goroutines on two Clients against one lock, checks exclusion with
// gauges (a writer alone; never a reader with a writer), that no
// acquisition waits anywhere near a TTL (no lost wake-up), and that no
// subscription, key or renewal entry is left behind.
func TestContendedCyclesLeaveNothing(t *testing.T) {
	const (
		cycles     = 5000
		perClient  = 6
		writeEvery = 4
		maxWait    = 5 * time.Second // the watchdog TTL is 30s: a lost wake-up shows
	)
	ctx := redistest.Context(t)
	c1, rc := newClient(t)
	c2, _ := newClient(t)
	name := lockName(t)

	var next, writers, readers, violations atomic.Int64
	var mu sync.Mutex
	var waits []time.Duration
	start := time.Now()
	var wg sync.WaitGroup
	for _, c := range []*interlock.Client{c1, c2} {
		for range perClient {
			wg.Go(func() {
				rw := rwlock.New(c, name)
				me := owner(ctx)
				var mine []time.Duration
				defer func() {
					mu.Lock()
					waits = append(waits, mine...)
					mu.Unlock()
				}()
				for {
					i := next.Add(1)
					if i > cycles {
						return
					}
					began := time.Now()
					if i%writeEvery == 0 {
						if !assert.NoError(t, rw.Write().Lock(me)) {
							return
						}
						mine = append(mine, time.Since(began))
						if writers.Add(1) != 1 || readers.Load() != 0 {
							violations.Add(1)
						}
						writers.Add(-1)
						if !assert.NoError(t, rw.Write().Unlock(me)) {
							return
						}
						continue
					}
					if !assert.NoError(t, rw.Read().Lock(me)) {
						return
					}
					mine = append(mine, time.Since(began))
					readers.Add(1)
					if writers.Load() != 0 {
						violations.Add(1)
					}
					readers.Add(-1)
					if !assert.NoError(t, rw.Read().Unlock(me)) {
						return
					}
				}
			})
		}
	}
	wg.Wait()
	took := time.Since(start)
	assert.Zero(t, violations.Load(), "exclusion violated")
	slices.Sort(waits)
	require.NotEmpty(t, waits)
	p := func(q float64) time.Duration { return waits[int(q*float64(len(waits)-1))] }
	t.Logf("%d acquisitions in %v (%.0f/s); wait p50 %v, p99 %v, max %v", len(waits), took.Round(time.Millisecond),
		float64(len(waits))/took.Seconds(), p(0.5), p(0.99), waits[len(waits)-1])
	assert.Len(t, waits, cycles)
	assert.Less(t, waits[len(waits)-1], maxWait)

	channel := keys.Prefix("redisson_rwlock", name)
	redistest.Eventually(t, 5*time.Second, func() bool {
		chans, err := rc.Do(ctx, rc.B().PubsubChannels().Pattern(channel).Build()).AsStrSlice()
		return err == nil && len(chans) == 0 && c1.Stats().Channels == 0 && c2.Stats().Channels == 0
	}, "subscriptions left behind")
	redistest.Eventually(t, 2*time.Second, func() bool { return len(keysLike(t, rc, name)) == 0 }, "keys left behind")
	assert.Zero(t, c1.Stats().Holds+c2.Stats().Holds, "renewal entries left behind")
}

// TestReaderJoinsReadModeAtOnce: a writer of this Client is parked,
// waiting for a reader to leave; a new reader of the same Client does not
// queue behind it, but gets in at once (waiting writers do not block
// readers).
func TestReaderJoinsReadModeAtOnce(t *testing.T) {
	c, _ := newClient(t)
	ctx := redistest.Context(t)
	rw := rwlock.New(c, lockName(t))
	first := owner(ctx)
	require.NoError(t, rw.Read().Lock(first))
	writer := make(chan error, 1)
	w := owner(ctx)
	go func() { writer <- rw.Write().Lock(w) }()
	redistest.Eventually(t, 2*time.Second, func() bool { return c.Stats().Channels == 1 }, "writer not waiting")
	time.Sleep(50 * time.Millisecond)

	second := owner(ctx)
	start := time.Now()
	ok, err := rw.Read().TryLock(second, 5*time.Second, 0)
	require.NoError(t, err)
	assert.True(t, ok)
	// Not after the 5s wait; two seconds for a loaded machine (latency).
	assert.Less(t, time.Since(start), 2*time.Second)
	require.NoError(t, rw.Read().Unlock(first))
	require.NoError(t, rw.Read().Unlock(second))
	select {
	case err := <-writer:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the writer was not woken by the last reader")
	}
	require.NoError(t, rw.Write().Unlock(w))
}

// TestWritersQueueLocally: writers of one Client waiting behind a reader
// (the later ones queued behind the first without asking the server) are
// all served promptly: the last reader's "0" wakes the first, and each
// writer's "1" wakes the rest, which race for the lock.
func TestWritersQueueLocally(t *testing.T) {
	c, _ := newClient(t)
	ctx := redistest.Context(t)
	rw := rwlock.New(c, lockName(t))
	reader := owner(ctx)
	require.NoError(t, rw.Read().Lock(reader))

	const writers = 4
	order := make(chan int, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			me := owner(ctx)
			assert.NoError(t, rw.Write().Lock(me))
			order <- i
			time.Sleep(20 * time.Millisecond)
			assert.NoError(t, rw.Write().Unlock(me))
		})
		// Let each writer try, subscribe or join, and park before the next.
		redistest.Eventually(t, 2*time.Second, func() bool { return c.Stats().Channels == 1 }, "writer not waiting")
		time.Sleep(100 * time.Millisecond)
	}
	start := time.Now()
	require.NoError(t, rw.Read().Unlock(reader))
	wg.Wait()
	close(order)
	var got []int
	for i := range order {
		got = append(got, i)
	}
	t.Logf("writers served in order %v in %v", got, time.Since(start).Round(time.Millisecond))
	assert.Len(t, got, writers)
	assert.Less(t, time.Since(start), 3*time.Second, "a writer waited for a TTL")
}
