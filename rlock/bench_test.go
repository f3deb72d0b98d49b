package rlock_test

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
	"github.com/interlock-go/interlock/rlock"
)

// Run with:
//
//	go test -run '^$' -bench . -count 5 ./rlock
//
// The floors are measured on the same rueidis client, interleaved with the
// locks so that both see the same load: two PINGs for one lock+unlock pair.

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

func benchName(b *testing.B) string { return "rlock-bench:" + b.Name() }

// BenchmarkUncontended is one goroutine locking and unlocking one lock,
// each pair followed by two PINGs on the same client, so that both see the
// same load; it reports the medians and their ratio.
func BenchmarkUncontended(b *testing.B) {
	c, _ := benchClient(b)
	ctx := context.Background()
	rc := runtime.Of(c).RC
	m := rlock.New(c, benchName(b))
	var pairs, pings []time.Duration
	for b.Loop() {
		start := time.Now()
		if err := m.Lock(ctx); err != nil {
			b.Fatal(err)
		}
		if err := m.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		for range 2 {
			if err := rc.Do(ctx, rc.B().Ping().Build()).Error(); err != nil {
				b.Fatal(err)
			}
		}
		pairs = append(pairs, mid.Sub(start))
		pings = append(pings, time.Since(mid))
	}
	pair, ping := median(pairs), median(pings)
	b.ReportMetric(float64(pair.Microseconds()), "pair-p50-µs")
	b.ReportMetric(float64(ping.Microseconds()), "2xPING-p50-µs")
	b.ReportMetric(float64(pair)/float64(ping), "ratio")
}

// BenchmarkDistinctKeys64 is 64 goroutines, each on its own lock, in
// rounds that alternate with rounds of PING pairs; it reports the median
// rate of each and the median of the per-round ratios.
func BenchmarkDistinctKeys64(b *testing.B) {
	const workers, rounds = 64, 5
	c, _ := benchClient(b)
	ctx := context.Background()
	rc := runtime.Of(c).RC
	locks := make([]*rlock.Mutex, workers)
	for i := range locks {
		locks[i] = rlock.New(c, benchName(b)+":"+strconv.Itoa(i))
	}
	lockPair := func(i int) error {
		if err := locks[i].Lock(ctx); err != nil {
			return err
		}
		return locks[i].Unlock(ctx)
	}
	pingPair := func(int) error {
		if err := rc.Do(ctx, rc.B().Ping().Build()).Error(); err != nil {
			return err
		}
		return rc.Do(ctx, rc.B().Ping().Build()).Error()
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
			p := rate(2000, pingPair)
			lockRates, pingRates, ratios = append(lockRates, l), append(pingRates, p), append(ratios, l/p)
		}
	}
	b.ReportMetric(medianOf(lockRates), "pairs/s")
	b.ReportMetric(medianOf(pingRates), "PINGpairs/s")
	b.ReportMetric(medianOf(ratios), "ratio")
}

func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}

func medianOf(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}

// BenchmarkContended16 is 16 goroutines on one lock: acquisitions per
// second, wait percentiles, and commands sent per acquisition.
func BenchmarkContended16(b *testing.B) {
	const workers = 16
	c, cnt := benchClient(b)
	ctx := context.Background()
	m := rlock.New(c, benchName(b))
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
	q := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))].Microseconds()) }
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "acq/s")
	b.ReportMetric(q(0.5), "p50-wait-µs")
	b.ReportMetric(q(0.99), "p99-wait-µs")
	b.ReportMetric(float64(all[len(all)-1].Microseconds()), "max-wait-µs")
	b.ReportMetric(float64(cnt.n.Load()-sent)/float64(b.N), "cmds/acq")
}
