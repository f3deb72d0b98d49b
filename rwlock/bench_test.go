package rwlock_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/runtime"
	"github.com/interlock-go/interlock/rwlock"
)

// Run with:
//
//	go test -run '^$' -bench . -benchtime 3s ./rwlock
//
// BenchmarkRead64 has a floor measured on the same rueidis client: two
// PINGs for one lock+unlock pair.

func benchClient(b *testing.B) (*interlock.Client, *counter) {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		b.Fatal(err)
	}
	cnt := &counter{Client: rc}
	c, err := interlock.New(cnt)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close(); rc.Close() })
	return c, cnt
}

// counter counts the commands sent through it.
type counter struct {
	rueidis.Client
	n atomic.Int64
}

func (c *counter) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.n.Add(1)
	return c.Client.Do(ctx, cmd)
}

func (c *counter) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	c.n.Add(int64(len(cmds)))
	return c.Client.DoMulti(ctx, cmds...)
}

func benchName(b *testing.B) string { return "rwlock-bench:" + b.Name() }

// parallel runs pair b.N times over workers goroutines and reports pairs/s.
func parallel(b *testing.B, workers int, pair func(w int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for w := range workers {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if err := pair(w); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
}

// BenchmarkRead64 is 64 readers (64 owners) locking and unlocking the
// read lock of one lock: shared holds never wait, so this is the read
// path's throughput. Redisson's read unlock reads every holder's timeout
// keys to recompute the TTL, so its cost on the server grows with the
// number of readers inside; the "64 locks" run, one reader per lock, shows
// the cost without that.
func BenchmarkRead64(b *testing.B) {
	const workers = 64
	c, cnt := benchClient(b)
	ctx := context.Background()
	b.Run("read-lock+unlock", func(b *testing.B) {
		rw := rwlock.New(c, benchName(b))
		owners := make([]context.Context, workers)
		for i := range owners {
			owners[i] = interlock.WithOwner(ctx, interlock.NewOwnerID())
		}
		sent := cnt.n.Load()
		parallel(b, workers, func(w int) error {
			if err := rw.Read().Lock(owners[w]); err != nil {
				return err
			}
			return rw.Read().Unlock(owners[w])
		})
		b.ReportMetric(float64(cnt.n.Load()-sent)/float64(b.N), "cmds/pair")
	})
	b.Run("read-lock+unlock,64-locks", func(b *testing.B) {
		locks := make([]*rwlock.ReadLock, workers)
		for i := range locks {
			locks[i] = rwlock.New(c, benchName(b)+":"+strconv.Itoa(i)).Read()
		}
		sent := cnt.n.Load()
		parallel(b, workers, func(w int) error {
			if err := locks[w].Lock(ctx); err != nil {
				return err
			}
			return locks[w].Unlock(ctx)
		})
		b.ReportMetric(float64(cnt.n.Load()-sent)/float64(b.N), "cmds/pair")
	})
	b.Run("floor=2xPING", func(b *testing.B) {
		rc := runtime.Of(c).RC
		parallel(b, workers, func(int) error {
			if err := rc.Do(ctx, rc.B().Ping().Build()).Error(); err != nil {
				return err
			}
			return rc.Do(ctx, rc.B().Ping().Build()).Error()
		})
	})
}

// BenchmarkWriteHandoff is 4 writers and 16 readers on one lock. Each
// write acquisition starts a round: every reader then reads once, which
// queues it behind the writer that holds the lock, and waits for the next
// round. So each write release hands the lock to a crowd of queued readers
// ("1" wakes them all), and the last of them hands it to the next writer
// ("0"). Holds last 50µs. b.N counts write acquisitions; it reports their
// rate, the readers' rate, wait percentiles per kind, and the commands
// sent per acquisition.
func BenchmarkWriteHandoff(b *testing.B) {
	const (
		writers = 4
		readers = 16
		hold    = 50 * time.Microsecond
	)
	c, cnt := benchClient(b)
	ctx := context.Background()
	rw := rwlock.New(c, benchName(b))

	var mu sync.Mutex
	round := sync.NewCond(&mu)
	gen, stop := 0, false
	var writes, reads atomic.Int64
	wwaits := make([][]time.Duration, writers)
	rwaits := make([][]time.Duration, readers)
	var rg sync.WaitGroup
	for r := range readers {
		rg.Go(func() {
			me := interlock.WithOwner(ctx, interlock.NewOwnerID())
			seen := 0
			for {
				mu.Lock()
				for gen == seen && !stop {
					round.Wait()
				}
				seen = gen
				done := stop
				mu.Unlock()
				if done {
					return
				}
				start := time.Now()
				if err := rw.Read().Lock(me); err != nil {
					b.Error(err)
					return
				}
				rwaits[r] = append(rwaits[r], time.Since(start))
				reads.Add(1)
				spin(hold)
				if err := rw.Read().Unlock(me); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	sent := cnt.n.Load()
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			me := interlock.WithOwner(ctx, interlock.NewOwnerID())
			for writes.Add(1) <= int64(b.N) {
				start := time.Now()
				if err := rw.Write().Lock(me); err != nil {
					b.Error(err)
					return
				}
				wwaits[w] = append(wwaits[w], time.Since(start))
				mu.Lock()
				gen++
				round.Broadcast()
				mu.Unlock()
				spin(hold)
				if err := rw.Write().Unlock(me); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := b.Elapsed()
	b.StopTimer()
	mu.Lock()
	stop = true
	round.Broadcast()
	mu.Unlock()
	rg.Wait()
	q := func(all []time.Duration, p float64) float64 {
		return float64(all[int(p*float64(len(all)-1))].Microseconds())
	}
	w := slices.Concat(wwaits...)
	r := slices.Concat(rwaits...)
	slices.Sort(w)
	slices.Sort(r)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "writes/s")
	b.ReportMetric(float64(reads.Load())/elapsed.Seconds(), "reads/s")
	if len(w) > 0 {
		b.ReportMetric(q(w, 0.5), "w-p50-µs")
		b.ReportMetric(q(w, 0.99), "w-p99-µs")
	}
	if len(r) > 0 {
		b.ReportMetric(q(r, 0.5), "r-p50-µs")
		b.ReportMetric(q(r, 0.99), "r-p99-µs")
	}
	b.ReportMetric(float64(cnt.n.Load()-sent)/float64(int64(b.N)+reads.Load()), "cmds/acq")
}

// spin holds the lock for about d without giving up the processor's time
// slice to a sleep's timer granularity.
func spin(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}
