package rlock_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/rlock"
)

// Run with:
//
//	go test -run '^$' -bench . -benchtime 3s ./rlock
//
// Each benchmark has a floor measured on the same rueidis client: two
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

func benchName(b *testing.B) string { return "rlock-bench:" + b.Name() }

// BenchmarkUncontended is one goroutine locking and unlocking one lock.
func BenchmarkUncontended(b *testing.B) {
	c, _ := benchClient(b)
	ctx := context.Background()
	b.Run("lock+unlock", func(b *testing.B) {
		m := rlock.New(c, benchName(b))
		for b.Loop() {
			if err := m.Lock(ctx); err != nil {
				b.Fatal(err)
			}
			if err := m.Unlock(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("floor=2xPING", func(b *testing.B) {
		rc := c.Redis()
		for b.Loop() {
			for range 2 {
				if err := rc.Do(ctx, rc.B().Ping().Build()).Error(); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// BenchmarkDistinctKeys64 is 64 goroutines, each on its own lock.
func BenchmarkDistinctKeys64(b *testing.B) {
	c, _ := benchClient(b)
	ctx := context.Background()
	parallel := func(b *testing.B, pair func(i int) error) {
		const workers = 64
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
	b.Run("lock+unlock", func(b *testing.B) {
		locks := make([]*rlock.Mutex, 64)
		for i := range locks {
			locks[i] = rlock.New(c, benchName(b)+":"+strconv.Itoa(i))
		}
		parallel(b, func(i int) error {
			if err := locks[i].Lock(ctx); err != nil {
				return err
			}
			return locks[i].Unlock(ctx)
		})
	})
	b.Run("floor=2xPING", func(b *testing.B) {
		rc := c.Redis()
		parallel(b, func(int) error {
			if err := rc.Do(ctx, rc.B().Ping().Build()).Error(); err != nil {
				return err
			}
			return rc.Do(ctx, rc.B().Ping().Build()).Error()
		})
	})
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
	_ = fmt.Sprint()
}
