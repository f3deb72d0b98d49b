package semaphore_test

import (
	"context"
	"crypto/rand"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/script"
	"github.com/interlock-go/interlock/semaphore"
)

// Run with:
//
//	go test -run '^$' -bench Semaphore -count 5 ./semaphore
//
// Every pair is measured against two floors, both sent with plain
// rueidis EVALSHA on the library's own rueidis client:
//
//   - floor: Redisson's protocol. The library's scripts without a receipt
//     key run exactly Redisson's commands (sem_acquire: GET, DECRBY;
//     sem_release: INCRBY, PUBLISH; pes_acquire and pes_release_one
//     likewise), so this is what any Redisson-compatible client must send.
//   - rcpt: the library's protocol. The same scripts with the library's
//     receipt keys, each receipt then deleted by a batched DEL (one DEL per
//     2ms window, as the Client's deleter sends them), without any of the
//     library's Go code.
//
// Library and floors alternate in one loop so that all see the same load.

// benchCounter counts the commands sent through it, including those of
// the dedicated pub/sub connection.
type benchCounter struct {
	rueidis.Client
	n atomic.Int64
	// dels and delKeys count the DEL commands among n and their keys.
	dels, delKeys atomic.Int64
}

func (c *benchCounter) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.count(cmd)
	return c.Client.Do(ctx, cmd)
}

func (c *benchCounter) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	for _, cmd := range cmds {
		c.count(cmd)
	}
	return c.Client.DoMulti(ctx, cmds...)
}

// count counts one command: a DEL of k keys is one command.
func (c *benchCounter) count(cmd rueidis.Completed) {
	c.n.Add(1)
	if args := cmd.Commands(); len(args) > 1 && args[0] == "DEL" {
		c.dels.Add(1)
		c.delKeys.Add(int64(len(args) - 1))
	}
}

func (c *benchCounter) Dedicate() (rueidis.DedicatedClient, func()) {
	dc, cancel := c.Client.Dedicate()
	return &benchDedicated{DedicatedClient: dc, n: &c.n}, cancel
}

type benchDedicated struct {
	rueidis.DedicatedClient
	n *atomic.Int64
}

func (c *benchDedicated) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.n.Add(1)
	return c.DedicatedClient.Do(ctx, cmd)
}

func (c *benchDedicated) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	c.n.Add(int64(len(cmds)))
	return c.DedicatedClient.DoMulti(ctx, cmds...)
}

// benchEnv is one benchmark's clients: an interlock Client on a counted
// rueidis client (rc, which the floors use too), the floors' receipt
// deleter on rc, and an uncounted admin client for set-up and INFO.
type benchEnv struct {
	c     *interlock.Client
	rc    *benchCounter
	del   *benchDeleter
	admin rueidis.Client
}

func newBenchEnv(b *testing.B) *benchEnv {
	b.Helper()
	raw, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		b.Fatal(err)
	}
	cnt := &benchCounter{Client: raw}
	c, err := interlock.New(cnt)
	if err != nil {
		raw.Close()
		b.Fatal(err)
	}
	del := newBenchDeleter(cnt)
	b.Cleanup(func() { _ = c.Close(); del.close(); raw.Close() })
	env := &benchEnv{c: c, rc: cnt, del: del, admin: redistest.NewClient(b, addr)}
	ctx := context.Background()
	for _, s := range []*script.Script{script.SemAcquire(), script.SemRelease(), script.PESAcquire(), script.PESReleaseOne()} {
		if err := env.admin.Do(ctx, env.admin.B().ScriptLoad().Script(s.Source()).Build()).Error(); err != nil {
			b.Fatal(err)
		}
	}
	return env
}

// name returns a fresh key for the benchmark, with permits free.
func (e *benchEnv) name(b *testing.B, suffix string, permits int) string {
	b.Helper()
	n := "sem-bench:" + b.Name() + ":" + suffix + ":" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := e.admin.Do(context.Background(), e.admin.B().Set().Key(n).Value(strconv.Itoa(permits)).Build()).Error(); err != nil {
		b.Fatal(err)
	}
	return n
}

// floor sends the library's scripts on the library's rueidis client, with
// no argument checks and no bookkeeping: without receipts (pair,
// expirablePair: Redisson's commands) or with them (receiptPair,
// expirableReceiptPair: the library's commands).
type floor struct {
	rc                rueidis.Client
	del               *benchDeleter
	name, ch, timeout string
}

func (e *benchEnv) floor(b *testing.B, suffix string, permits int) floor {
	n := e.name(b, suffix, permits)
	return floor{rc: e.rc, del: e.del, name: n, ch: keys.SemaphoreChannel(n), timeout: keys.Suffix(n, "timeout")}
}

func (f floor) evalsha(ctx context.Context, s *script.Script, keys []string, args ...string) rueidis.RedisResult {
	return f.rc.Do(ctx, f.rc.B().Evalsha().Sha1(s.SHA1()).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build())
}

// pair is ACQ then REL of one permit.
func (f floor) pair(ctx context.Context) error {
	n, err := f.evalsha(ctx, script.SemAcquire(), []string{f.name}, "1").AsInt64()
	if err != nil {
		return err
	}
	if n != 1 {
		return errNotAcquired
	}
	return noNil(f.evalsha(ctx, script.SemRelease(), []string{f.name, f.ch}, "1", "PUBLISH").Error())
}

// expirablePair is PACQ of one permit with a 30 s lease (the watchdog's),
// then PREL1 of it.
func (f floor) expirablePair(ctx context.Context) error {
	var id [16]byte
	_, _ = rand.Read(id[:])
	now := time.Now().UnixMilli()
	ok, err := f.evalsha(ctx, script.PESAcquire(), []string{f.name, f.timeout, f.ch},
		"1", strconv.FormatInt(now+30000, 10), strconv.FormatInt(now, 10), "922337203685477", "PUBLISH", string(id[:])).ToString()
	if err != nil {
		return err
	}
	if ok != "OK" {
		return errNotAcquired
	}
	now = time.Now().UnixMilli()
	n, err := f.evalsha(ctx, script.PESReleaseOne(), []string{f.name, f.ch, f.timeout},
		string(id[:]), "1", strconv.FormatInt(now, 10), "PUBLISH").AsInt64()
	if err == nil && n != 1 {
		err = errNotAcquired
	}
	return err
}

// receiptPair is pair with the library's receipt keys, each queued for the
// batched DEL once its script has answered: what the library sends,
// without the library.
func (f floor) receiptPair(ctx context.Context) error {
	r := keys.Receipt(f.name, keys.RequestID())
	n, err := f.evalsha(ctx, script.SemAcquire(), []string{f.name, r}, "1", receiptTTL).AsInt64()
	if err != nil {
		return err
	}
	if n != 1 {
		return errNotAcquired
	}
	f.del.add(r)
	r = keys.Receipt(f.name, keys.RequestID())
	if err := noNil(f.evalsha(ctx, script.SemRelease(), []string{f.name, f.ch, r}, "1", "PUBLISH", receiptTTL).Error()); err != nil {
		return err
	}
	f.del.add(r)
	return nil
}

// expirableReceiptPair is expirablePair with the library's receipt keys,
// deleted as in receiptPair. Like the library's release of an id it holds,
// the release sends nothing else.
func (f floor) expirableReceiptPair(ctx context.Context) error {
	var id [16]byte
	_, _ = rand.Read(id[:])
	now := time.Now().UnixMilli()
	r := keys.Receipt(f.name, keys.RequestID())
	ok, err := f.evalsha(ctx, script.PESAcquire(), []string{f.name, f.timeout, f.ch, r},
		"1", strconv.FormatInt(now+30000, 10), strconv.FormatInt(now, 10), "922337203685477", "PUBLISH", string(id[:]), receiptTTL).ToString()
	if err != nil {
		return err
	}
	if ok != "OK" {
		return errNotAcquired
	}
	f.del.add(r)
	now = time.Now().UnixMilli()
	r = keys.Receipt(f.name, keys.RequestID())
	n, err := f.evalsha(ctx, script.PESReleaseOne(), []string{f.name, f.ch, f.timeout, r},
		string(id[:]), "1", strconv.FormatInt(now, 10), "PUBLISH", receiptTTL).AsInt64()
	if err != nil {
		return err
	}
	if n != 1 {
		return errNotAcquired
	}
	f.del.add(r)
	return nil
}

// receiptTTL is the library's receipt TTL (lockcore.ReceiptTTL), in ms.
const receiptTTL = "30000"

// benchDeleter is the Client's receipt deleter rebuilt on plain rueidis
// for the rcpt floor: a queued key opens a 2ms window, at whose end every
// key queued meanwhile goes out in one DEL (at most 512 keys a command).
type benchDeleter struct {
	rc      rueidis.Client
	mu      sync.Mutex
	pending []string
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

func newBenchDeleter(rc rueidis.Client) *benchDeleter {
	d := &benchDeleter{rc: rc, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go d.run()
	return d
}

func (d *benchDeleter) add(key string) {
	d.mu.Lock()
	d.pending = append(d.pending, key)
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *benchDeleter) close() { close(d.stop); <-d.done }

func (d *benchDeleter) run() {
	defer close(d.done)
	for {
		select {
		case <-d.wake:
			select {
			case <-time.After(2 * time.Millisecond):
			case <-d.stop:
			}
			d.flush()
		case <-d.stop:
			d.flush()
			return
		}
	}
}

func (d *benchDeleter) flush() {
	d.mu.Lock()
	batch := d.pending
	d.pending = nil
	d.mu.Unlock()
	var cmds rueidis.Commands
	for len(batch) > 0 {
		n := min(len(batch), 512)
		cmds = append(cmds, d.rc.B().Del().Key(batch[:n]...).Build())
		batch = batch[n:]
	}
	if len(cmds) > 0 {
		d.rc.DoMulti(context.Background(), cmds...)
	}
}

type benchErr string

func (e benchErr) Error() string { return string(e) }

const errNotAcquired = benchErr("an uncontended acquisition failed")

func noNil(err error) error {
	if rueidis.IsRedisNil(err) {
		return nil
	}
	return err
}

// libPair and libExpirablePair are the library's acquire+release of one
// permit.
func libPair(s *semaphore.Semaphore, try bool) func(context.Context) error {
	return func(ctx context.Context) error {
		if try {
			ok, err := s.TryAcquire(ctx, 1, 0)
			if err != nil {
				return err
			}
			if !ok {
				return errNotAcquired
			}
		} else if err := s.Acquire(ctx, 1); err != nil {
			return err
		}
		return s.Release(ctx, 1)
	}
}

func libExpirablePair(e *semaphore.Expirable) func(context.Context) error {
	return func(ctx context.Context) error {
		ids, err := e.Acquire(ctx, 1, 0)
		if err != nil {
			return err
		}
		return e.Release(ctx, ids...)
	}
}

// BenchmarkSemaphoreUncontended is one goroutine doing acquire+release of
// one permit with the library, with the floor (Redisson's scripts) and
// with the rcpt floor (the library's scripts, receipts and batched DELs),
// in turn; the order rotates every iteration. It reports each side's
// median pair time; the library's rate over each floor's (x-floor, x-rcpt:
// the floor's mean pair time over the library's) and the same for the
// medians (p50-x-floor, p50-x-rcpt); the rcpt floor's rate over the floor's
// (rcpt-x-floor); and, from separate runs of 2,000 pairs of each side
// bracketed by INFO commandstats, INFO cpu and getrusage, the commands sent
// and executed, the script time and the CPU time per pair.
func BenchmarkSemaphoreUncontended(b *testing.B) {
	b.Run("TryAcquire", func(b *testing.B) {
		env := newBenchEnv(b)
		lib := libPair(semaphore.New(env.c, env.name(b, "lib", 1)), true)
		benchUncontended(b, env, lib, env.floor(b, "floor", 1).pair, env.floor(b, "rcpt", 1).receiptPair)
	})
	b.Run("Acquire", func(b *testing.B) {
		env := newBenchEnv(b)
		lib := libPair(semaphore.New(env.c, env.name(b, "lib", 1)), false)
		benchUncontended(b, env, lib, env.floor(b, "floor", 1).pair, env.floor(b, "rcpt", 1).receiptPair)
	})
	b.Run("Expirable", func(b *testing.B) {
		env := newBenchEnv(b)
		lib := libExpirablePair(semaphore.NewExpirable(env.c, env.name(b, "lib", 1)))
		benchUncontended(b, env, lib, env.floor(b, "floor", 1).expirablePair, env.floor(b, "rcpt", 1).expirableReceiptPair)
	})
}

// sideNames are the three sides of the uncontended and parallel
// benchmarks, in the order their functions are passed.
var sideNames = []string{"lib", "floor", "rcpt"}

func benchUncontended(b *testing.B, env *benchEnv, lib, floor, rcpt func(context.Context) error) {
	ctx := context.Background()
	fs := []func(context.Context) error{lib, floor, rcpt}
	d := make([][]time.Duration, len(fs))
	i := 0
	for b.Loop() {
		for k := range fs {
			j := (i + k) % len(fs)
			start := time.Now()
			if err := fs[j](ctx); err != nil {
				b.Fatal(err)
			}
			d[j] = append(d[j], time.Since(start))
		}
		i++
	}
	p50, mean := make([]float64, len(fs)), make([]float64, len(fs))
	for k, name := range sideNames {
		p50[k], mean[k] = float64(median(d[k])), float64(meanOf(d[k]))
		b.ReportMetric(p50[k]/1e3, name+"-p50-µs")
	}
	b.ReportMetric(mean[1]/mean[0], "x-floor")
	b.ReportMetric(mean[2]/mean[0], "x-rcpt")
	b.ReportMetric(p50[1]/p50[0], "p50-x-floor")
	b.ReportMetric(p50[2]/p50[0], "p50-x-rcpt")
	b.ReportMetric(mean[1]/mean[2], "rcpt-x-floor")
	const n = 2000
	for k, f := range fs {
		c := env.serverCost(b, func() {
			for range n {
				if err := f(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		reportCost(b, sideNames[k], c, n)
	}
}

// BenchmarkSemaphoreParallel64 is 64 goroutines, each on its own
// semaphore, in rounds of 2,000 pairs that rotate between the library, the
// floor and the rcpt floor (see BenchmarkSemaphoreUncontended). It reports
// the median rate of each; the medians of the per-round ratios; the
// receipt keys on the server and used_memory above its value before the
// round, sampled every 5ms during the library's and the rcpt floor's
// rounds (mean and maximum); and, from one more bracketed round of each,
// the commands and CPU time per pair.
func BenchmarkSemaphoreParallel64(b *testing.B) {
	const workers = 64
	b.Run("plain", func(b *testing.B) {
		env := newBenchEnv(b)
		sides := make([][]func(context.Context) error, 3)
		for i := range workers {
			w := strconv.Itoa(i)
			sides[0] = append(sides[0], libPair(semaphore.New(env.c, env.name(b, "lib"+w, 1)), false))
			sides[1] = append(sides[1], env.floor(b, "floor"+w, 1).pair)
			sides[2] = append(sides[2], env.floor(b, "rcpt"+w, 1).receiptPair)
		}
		benchParallel(b, env, sides)
	})
	b.Run("Expirable", func(b *testing.B) {
		env := newBenchEnv(b)
		sides := make([][]func(context.Context) error, 3)
		for i := range workers {
			w := strconv.Itoa(i)
			sides[0] = append(sides[0], libExpirablePair(semaphore.NewExpirable(env.c, env.name(b, "lib"+w, 1))))
			sides[1] = append(sides[1], env.floor(b, "floor"+w, 1).expirablePair)
			sides[2] = append(sides[2], env.floor(b, "rcpt"+w, 1).expirableReceiptPair)
		}
		benchParallel(b, env, sides)
	})
}

// benchParallel runs sides (library, floor, rcpt floor) as above.
func benchParallel(b *testing.B, env *benchEnv, sides [][]func(context.Context) error) {
	const rounds, pairs = 5, 2000
	ctx := context.Background()
	rate := func(fs []func(context.Context) error) float64 {
		var next atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for _, f := range fs {
			wg.Go(func() {
				for next.Add(1) <= pairs {
					if err := f(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		return pairs / time.Since(start).Seconds()
	}
	rates := make([][]float64, len(sides))
	samples := make([]samples, len(sides))
	var xFloor, xRcpt, rcptXFloor []float64
	i := 0
	for b.Loop() {
		for range rounds {
			r := make([]float64, len(sides))
			for k := range sides {
				j := (i + k) % len(sides)
				samples[j].add(env.sample(b, func() { r[j] = rate(sides[j]) }))
			}
			i++
			for k := range sides {
				rates[k] = append(rates[k], r[k])
			}
			xFloor, xRcpt, rcptXFloor = append(xFloor, r[0]/r[1]), append(xRcpt, r[0]/r[2]), append(rcptXFloor, r[2]/r[1])
		}
	}
	for k, fs := range sides {
		reportCost(b, sideNames[k], env.serverCost(b, func() { rate(fs) }), pairs)
		b.ReportMetric(medianOf(rates[k]), sideNames[k]+"-pairs/s")
	}
	b.ReportMetric(medianOf(xFloor), "x-floor")
	b.ReportMetric(medianOf(xRcpt), "x-rcpt")
	b.ReportMetric(medianOf(rcptXFloor), "rcpt-x-floor")
	for k := range sides {
		samples[k].report(b, sideNames[k]+"-")
	}
}

// BenchmarkSemaphoreContended64x8 is 64 goroutines on one semaphore of 8
// permits, each acquiring one and releasing it at once. It reports
// acquisitions per second; the pair time (p50, p99, max, and the shares
// between 10 and 50ms and above 50ms); the commands sent per acquisition,
// counted client side on every connection (pub/sub included; a DEL of k
// receipts is one command), of which DELs, and the receipts per DEL; from
// INFO commandstats, the script runs per acquisition, the acquire attempts
// per acquisition (script runs less the one release) and every command
// executed per acquisition; and the receipt keys and used_memory, sampled
// every 5ms.
func BenchmarkSemaphoreContended64x8(b *testing.B) {
	const workers, permits = 64, 8
	b.Run("plain", func(b *testing.B) {
		env := newBenchEnv(b)
		s := semaphore.New(env.c, env.name(b, "lib", permits))
		benchContended(b, env, workers, libPair(s, false))
	})
	b.Run("Expirable", func(b *testing.B) {
		env := newBenchEnv(b)
		e := semaphore.NewExpirable(env.c, env.name(b, "lib", permits))
		benchContended(b, env, workers, libExpirablePair(e))
	})
}

func benchContended(b *testing.B, env *benchEnv, workers int, pair func(context.Context) error) {
	ctx := context.Background()
	var next atomic.Int64
	pairs := make([][]time.Duration, workers)
	var wg sync.WaitGroup
	var seen samples
	c := env.serverCost(b, func() {
		seen.add(env.sample(b, func() {
			b.ResetTimer()
			for w := range workers {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						start := time.Now()
						if err := pair(ctx); err != nil {
							b.Error(err)
							return
						}
						pairs[w] = append(pairs[w], time.Since(start))
					}
				})
			}
			wg.Wait()
			b.StopTimer()
		}))
	})
	all := slices.Concat(pairs...)
	slices.Sort(all)
	q := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))].Microseconds()) }
	n := float64(b.N)
	b.ReportMetric(n/b.Elapsed().Seconds(), "acq/s")
	b.ReportMetric(q(0.5), "p50-pair-µs")
	b.ReportMetric(q(0.99), "p99-pair-µs")
	b.ReportMetric(float64(all[len(all)-1].Microseconds()), "max-pair-µs")
	mid, _ := slices.BinarySearch(all, 10*time.Millisecond)
	slow, _ := slices.BinarySearch(all, 50*time.Millisecond)
	b.ReportMetric(100*float64(slow-mid)/float64(len(all)), "pairs10-50ms-%")
	b.ReportMetric(100*float64(len(all)-slow)/float64(len(all)), "pairs≥50ms-%")
	b.ReportMetric(float64(c.sent)/n, "cmds/acq")
	b.ReportMetric(float64(c.dels)/n, "dels/acq")
	if c.dels > 0 {
		b.ReportMetric(float64(c.delKeys)/float64(c.dels), "receipts/del")
	}
	b.ReportMetric(float64(c.scripts)/n, "srv-scripts/acq")
	b.ReportMetric(float64(c.scripts)/n-1, "tries/acq")
	b.ReportMetric(float64(c.executed)/n, "srv-cmds/acq")
	seen.report(b, "")
}

// samples are what sample saw: receipt keys, and used_memory in bytes
// above its value before the sampled function.
type samples struct{ receipts, mem []float64 }

func (s *samples) add(o samples) {
	s.receipts, s.mem = append(s.receipts, o.receipts...), append(s.mem, o.mem...)
}

// report reports the means and maxima, with metric names under prefix.
func (s *samples) report(b *testing.B, prefix string) {
	if len(s.receipts) == 0 {
		return
	}
	b.ReportMetric(meanOf(s.receipts), prefix+"receipts")
	b.ReportMetric(slices.Max(s.receipts), prefix+"receipts-max")
	b.ReportMetric(meanOf(s.mem)/1024, prefix+"mem-KiB")
	b.ReportMetric(slices.Max(s.mem)/1024, prefix+"mem-KiB-max")
}

// sample runs f and, every 5ms while it runs, counts the server's
// interlock_receipt:* keys (SCAN MATCH) and reads used_memory.
func (e *benchEnv) sample(b *testing.B, f func()) samples {
	b.Helper()
	ctx := context.Background()
	base, err := e.usedMemory()
	if err != nil {
		b.Fatal(err)
	}
	var s samples
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			var n int64
			for cursor := uint64(0); ; {
				se, err := e.admin.Do(ctx, e.admin.B().Scan().Cursor(cursor).Match("interlock_receipt:*").Count(1000).Build()).AsScanEntry()
				if err != nil {
					b.Error(err)
					return
				}
				n += int64(len(se.Elements))
				if cursor = se.Cursor; cursor == 0 {
					break
				}
			}
			mem, err := e.usedMemory()
			if err != nil {
				b.Error(err)
				return
			}
			s.receipts = append(s.receipts, float64(n))
			s.mem = append(s.mem, float64(mem-base))
		}
	}()
	f()
	close(stop)
	<-done
	return s
}

// usedMemory is the server's used_memory.
func (e *benchEnv) usedMemory() (int64, error) {
	s, err := e.admin.Do(context.Background(), e.admin.B().Info().Section("memory").Build()).ToString()
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(s) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, benchErr("INFO memory has no used_memory")
}

// cost is what f cost in serverCost: the commands sent through rc (client
// side; a DEL of k keys is one), of which DELs, and their keys; from INFO
// commandstats, script runs and their time, and every command executed
// (top level and inside scripts) but INFO, SCAN (the sampler's) and
// connection set-up; from INFO cpu, redis-server's CPU time; from
// getrusage, this process's CPU time.
type cost struct {
	sent, dels, delKeys  int64
	scripts, executed    int64
	scriptUsec           float64
	serverCPU, clientCPU time.Duration
}

// serverCost runs f bracketed by INFO commandstats, INFO cpu and getrusage;
// it waits 20ms after f, for the batched DELs of its last receipts.
func (e *benchEnv) serverCost(b *testing.B, f func()) cost {
	b.Helper()
	sent, dels, delKeys := e.rc.n.Load(), e.rc.dels.Load(), e.rc.delKeys.Load()
	before, cpu0, self0 := e.commandstats(b), e.serverCPU(b), selfCPU()
	f()
	time.Sleep(20 * time.Millisecond)
	self1, cpu1, after := selfCPU(), e.serverCPU(b), e.commandstats(b)
	c := cost{
		sent: e.rc.n.Load() - sent, dels: e.rc.dels.Load() - dels, delKeys: e.rc.delKeys.Load() - delKeys,
		serverCPU: cpu1 - cpu0, clientCPU: self1 - self0,
	}
	for name, a := range after {
		calls, usec := a[0]-before[name][0], a[1]-before[name][1]
		switch name {
		case "info", "script", "hello", "scan":
			continue
		case "eval", "evalsha":
			c.scripts += int64(calls)
			c.scriptUsec += usec
		}
		if !strings.HasPrefix(name, "client") {
			c.executed += int64(calls)
		}
	}
	return c
}

// serverCPU is redis-server's user plus system CPU time so far.
func (e *benchEnv) serverCPU(b *testing.B) time.Duration {
	s, err := e.admin.Do(context.Background(), e.admin.B().Info().Section("cpu").Build()).ToString()
	if err != nil {
		b.Fatal(err)
	}
	var sec float64
	for line := range strings.Lines(s) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		if k == "used_cpu_sys" || k == "used_cpu_user" {
			x, _ := strconv.ParseFloat(v, 64)
			sec += x
		}
	}
	return time.Duration(sec * float64(time.Second))
}

// selfCPU is this process's user plus system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCost reports c per pair under the prefix name.
func reportCost(b *testing.B, name string, c cost, pairs float64) {
	b.ReportMetric(float64(c.sent)/pairs, name+"-cmds/pair")
	b.ReportMetric(float64(c.dels)/pairs, name+"-dels/pair")
	b.ReportMetric(c.scriptUsec/pairs, name+"-srv-script-µs/pair")
	b.ReportMetric(float64(c.serverCPU.Nanoseconds())/1e3/pairs, name+"-srv-cpu-µs/pair")
	b.ReportMetric(float64(c.clientCPU.Nanoseconds())/1e3/pairs, name+"-cli-cpu-µs/pair")
	b.ReportMetric(float64(c.executed)/pairs, name+"-srv-cmds/pair")
}

// commandstats is INFO commandstats as name → {calls, usec}.
func (e *benchEnv) commandstats(b *testing.B) map[string][2]float64 {
	s, err := e.admin.Do(context.Background(), e.admin.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		b.Fatal(err)
	}
	out := map[string][2]float64{}
	for line := range strings.Lines(s) {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		var v [2]float64
		for f := range strings.SplitSeq(rest, ",") {
			k, x, _ := strings.Cut(f, "=")
			switch k {
			case "calls":
				v[0], _ = strconv.ParseFloat(x, 64)
			case "usec":
				v[1], _ = strconv.ParseFloat(x, 64)
			}
		}
		out[strings.TrimPrefix(name, "cmdstat_")] = v
	}
	return out
}

func median(d []time.Duration) time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)/2]
}

func meanOf[T time.Duration | float64](v []T) T {
	var sum T
	for _, x := range v {
		sum += x
	}
	return sum / T(len(v))
}

func medianOf(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}
