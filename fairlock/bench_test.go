package fairlock_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
)

// Run with:
//
//	go test -run '^$' -bench . -benchtime 3s ./fairlock

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

func benchName(b *testing.B) string { return "fairlock-bench:" + b.Name() }

// BenchmarkUncontended is one goroutine locking and unlocking one lock.
func BenchmarkUncontended(b *testing.B) {
	c, cnt := benchClient(b)
	ctx := context.Background()
	m := fairlock.New(c, benchName(b))
	sent := cnt.n.Load()
	for b.Loop() {
		if err := m.Lock(ctx); err != nil {
			b.Fatal(err)
		}
		if err := m.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cnt.n.Load()-sent)/float64(b.N), "cmds/op")
}

// BenchmarkHandoff16 is 16 goroutines queueing for one fair lock, each
// releasing it at once: the hand-off rate (acquisitions per second, every
// one of them a hand-off to the head of the queue), the time each waited,
// and the commands sent per acquisition through the rueidis client (the
// hub's SUBSCRIBE and UNSUBSCRIBE of each waiting owner's channel go on its
// dedicated connection and are not counted).
func BenchmarkHandoff16(b *testing.B) {
	const workers = 16
	c, cnt := benchClient(b)
	ctx := context.Background()
	m := fairlock.New(c, benchName(b))
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
