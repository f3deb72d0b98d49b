package conformance_test

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
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/rwlock"
)

// The benchmarks of the lock kinds, one top-level benchmark per kind, its
// scenarios as sub-benchmarks. Run with, for example:
//
//	go test -run '^$' -bench '^BenchmarkRLock$' -count 5 ./conformance
//	go test -run '^$' -bench '^Benchmark(FairLock|RWLock)$' -benchtime 3s ./conformance
//
// The floors are measured on the same rueidis client, interleaved with the
// locks so that both see the same load: two PINGs for one lock+unlock pair.

// BenchmarkRLock is the reentrant lock: Uncontended, DistinctKeys64 and
// Contended16.
func BenchmarkRLock(b *testing.B) {
	b.Run("Uncontended", func(b *testing.B) { uncontended(b, rlockKind.New, true) })
	b.Run("DistinctKeys64", func(b *testing.B) { distinctKeys(b, 64, rlockKind.New) })
	b.Run("Contended16", func(b *testing.B) { contended(b, 16, rlockKind.New) })
}

// BenchmarkFairLock is the fair lock: Uncontended, and Handoff16, 16
// goroutines queueing for one lock, each releasing it at once: the
// hand-off rate (acquisitions per second, every one of them a hand-off to
// the head of the queue), the time each waited, and the commands sent per
// acquisition through the rueidis client (the hub's SUBSCRIBE and
// UNSUBSCRIBE of each waiting owner's channel go on its dedicated
// connection and are not counted).
func BenchmarkFairLock(b *testing.B) {
	b.Run("Uncontended", func(b *testing.B) { uncontended(b, fairKind.New, false) })
	b.Run("Handoff16", func(b *testing.B) { contended(b, 16, fairKind.New) })
}

// BenchmarkRWLock is the read/write lock: Read64 and WriteHandoff.
func BenchmarkRWLock(b *testing.B) {
	b.Run("Read64", read64)
	b.Run("WriteHandoff", writeHandoff)
}

// benchClient returns a Client on the package's server, and the counter of
// the commands sent through it, which wraps the rueidis client the floors
// are measured on.
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

// pingPair sends two PINGs on rc, one lock+unlock pair's floor.
func pingPair(ctx context.Context, rc rueidis.Client) error {
	if err := rc.Do(ctx, rc.B().Ping().Build()).Error(); err != nil {
		return err
	}
	return rc.Do(ctx, rc.B().Ping().Build()).Error()
}

func benchName(b *testing.B) string { return "bench:" + b.Name() }

// uncontended is one goroutine locking and unlocking one lock; it reports
// the commands sent per pair. With floor, each pair is followed by two
// PINGs on the same rueidis client, not counted, so that both see the same
// load, and it also reports the medians and their ratio.
func uncontended(b *testing.B, open func(*interlock.Client, string) interlock.Locker, floor bool) {
	c, cnt := benchClient(b)
	ctx := context.Background()
	m := open(c, benchName(b))
	var pairs, pings []time.Duration
	sent := cnt.n.Load()
	for b.Loop() {
		start := time.Now()
		if err := m.Lock(ctx); err != nil {
			b.Fatal(err)
		}
		if err := m.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
		if !floor {
			continue
		}
		mid := time.Now()
		if err := pingPair(ctx, cnt.Client); err != nil {
			b.Fatal(err)
		}
		pairs = append(pairs, mid.Sub(start))
		pings = append(pings, time.Since(mid))
	}
	b.ReportMetric(float64(cnt.n.Load()-sent)/float64(b.N), "cmds/op")
	if floor {
		pair, ping := median(pairs), median(pings)
		b.ReportMetric(float64(pair.Microseconds()), "pair-p50-µs")
		b.ReportMetric(float64(ping.Microseconds()), "2xPING-p50-µs")
		b.ReportMetric(float64(pair)/float64(ping), "ratio")
	}
}

// distinctKeys is workers goroutines, each on its own lock, in rounds
// that alternate with rounds of PING pairs; it reports the median rate of
// each and the median of the per-round ratios.
func distinctKeys(b *testing.B, workers int, open func(*interlock.Client, string) interlock.Locker) {
	const rounds = 5
	c, cnt := benchClient(b)
	ctx := context.Background()
	locks := make([]interlock.Locker, workers)
	for i := range locks {
		locks[i] = open(c, benchName(b)+":"+strconv.Itoa(i))
	}
	lockPair := func(i int) error {
		if err := locks[i].Lock(ctx); err != nil {
			return err
		}
		return locks[i].Unlock(ctx)
	}
	rate := func(n int, pair func(int) error) float64 {
		var next atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for w := range workers {
			wg.Go(func() {
				for next.Add(1) <= int64(n) {
					if err := pair(w); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		return float64(n) / time.Since(start).Seconds()
	}
	var lockRates, pingRates, ratios []float64
	for b.Loop() {
		lockRates, pingRates, ratios = nil, nil, nil
		for range rounds {
			l := rate(2000, lockPair)
			p := rate(2000, func(int) error { return pingPair(ctx, cnt.Client) })
			lockRates, pingRates, ratios = append(lockRates, l), append(pingRates, p), append(ratios, l/p)
		}
	}
	b.ReportMetric(median(lockRates), "pairs/s")
	b.ReportMetric(median(pingRates), "PINGpairs/s")
	b.ReportMetric(median(ratios), "ratio")
}

// median returns the median of v, which it sorts.
func median[T int64 | float64 | time.Duration](v []T) T {
	slices.Sort(v)
	return v[len(v)/2]
}

// contended is workers goroutines on one lock: acquisitions per second,
// wait percentiles, and commands sent per acquisition.
func contended(b *testing.B, workers int, open func(*interlock.Client, string) interlock.Locker) {
	c, cnt := benchClient(b)
	ctx := context.Background()
	m := open(c, benchName(b))
	var next atomic.Int64
	waits := make([][]time.Duration, workers)
	var wg sync.WaitGroup
	sent := cnt.n.Load()
	b.ResetTimer()
	for w := range workers {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				start := time.Now()
				if err := m.Lock(ctx); err != nil {
					b.Error(err)
					return
				}
				waits[w] = append(waits[w], time.Since(start))
				if err := m.Unlock(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	all := slices.Concat(waits...)
	slices.Sort(all)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "acq/s")
	b.ReportMetric(quantile(all, 0.5), "p50-wait-µs")
	b.ReportMetric(quantile(all, 0.99), "p99-wait-µs")
	b.ReportMetric(float64(all[len(all)-1].Microseconds()), "max-wait-µs")
	b.ReportMetric(float64(cnt.n.Load()-sent)/float64(b.N), "cmds/acq")
}

// quantile returns the p quantile of sorted waits, in µs.
func quantile(sorted []time.Duration, p float64) float64 {
	return float64(sorted[int(p*float64(len(sorted)-1))].Microseconds())
}

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

// read64 is 64 readers (64 owners) locking and unlocking the read lock of
// one lock: shared holds never wait, so this is the read path's
// throughput. Redisson's read unlock reads every holder's timeout keys to
// recompute the TTL, so its cost on the server grows with the number of
// readers inside; the "64 locks" run, one reader per lock, shows the cost
// without that. Its floor is two PINGs per pair on the same rueidis client.
func read64(b *testing.B) {
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
		parallel(b, workers, func(int) error { return pingPair(ctx, cnt.Client) })
	})
}

// writeHandoff is 4 writers and 16 readers on one lock. Each write
// acquisition starts a round: every reader then reads once, which queues
// it behind the writer that holds the lock, and waits for the next round.
// So each write release hands the lock to a crowd of queued readers ("1"
// wakes them all), and the last of them hands it to the next writer ("0").
// Holds last 50µs. b.N counts write acquisitions; it reports their rate,
// the readers' rate, wait percentiles per kind, and the commands sent per
// acquisition.
func writeHandoff(b *testing.B) {
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
				busy(hold)
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
				busy(hold)
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
	w := slices.Concat(wwaits...)
	r := slices.Concat(rwaits...)
	slices.Sort(w)
	slices.Sort(r)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "writes/s")
	b.ReportMetric(float64(reads.Load())/elapsed.Seconds(), "reads/s")
	if len(w) > 0 {
		b.ReportMetric(quantile(w, 0.5), "w-p50-µs")
		b.ReportMetric(quantile(w, 0.99), "w-p99-µs")
	}
	if len(r) > 0 {
		b.ReportMetric(quantile(r, 0.5), "r-p50-µs")
		b.ReportMetric(quantile(r, 0.99), "r-p99-µs")
	}
	b.ReportMetric(float64(cnt.n.Load()-sent)/float64(int64(b.N)+reads.Load()), "cmds/acq")
}

// busy holds the lock for about d without giving up the processor's time
// slice to a sleep's timer granularity.
func busy(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

// Dedicate dedicates a connection whose renewal rounds and latch sweeps
// go through counter's DoMulti (redistest.Aside).
func (c *counter) Dedicate() (rueidis.DedicatedClient, func()) {
	dc, release := c.Client.Dedicate()
	return redistest.Aside(dc, c.DoMulti), release
}
