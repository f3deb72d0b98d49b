package security_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
)

// Spoofing (reliability-hazards T21): anyone allowed to PUBLISH on a lock's
// channel can send fake release messages. They must never hand out the
// lock, and they must not turn every waiter into a busy loop against Redis.
const (
	spoofWaiters = 4                       // per kind: 2 Clients x 2 goroutines
	spoofRate    = 10000                   // messages per second
	spoofWarmup  = 300 * time.Millisecond  // waiters subscribed and parked
	spoofWindow  = 1500 * time.Millisecond // measured
	// spoofHandOff bounds how long the waiters take to get the lock one
	// after another once the holder releases it, spoofing going on.
	spoofHandOff   = 3 * time.Second
	spoofMaxPerSec = 20.0 // acquire attempts per waiter per second
)

// spoofPayloads are what the spoofer sends, in turn: Redisson's two
// messages, and garbage.
var spoofPayloads = []string{"0", "1", "0", "garbage", "", "\x00\xff\xfe", strings.Repeat("x", 1024), "-1", "0 "}

// scriptCalls returns how many EVALSHA and EVAL commands the server ran.
func scriptCalls(t *testing.T, admin rueidis.Client) int64 {
	t.Helper()
	info, err := admin.Do(context.Background(), admin.B().Info().Section("commandstats").Build()).ToString()
	require.NoError(t, err)
	var n int64
	for _, line := range strings.Split(info, "\n") {
		for _, cmd := range []string{"cmdstat_evalsha:", "cmdstat_eval:"} {
			rest, ok := strings.CutPrefix(strings.TrimSpace(line), cmd)
			if !ok {
				continue
			}
			calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
			v, err := strconv.ParseInt(calls, 10, 64)
			require.NoError(t, err, line)
			n += v
		}
	}
	return n
}

// spoof publishes spoofPayloads on the channels that channels returns, at
// about spoofRate messages per second, until ctx ends; it returns how many
// it sent.
func spoof(ctx context.Context, rc rueidis.Client, channels func() []string) int64 {
	const tick = 5 * time.Millisecond
	perTick := spoofRate * int(tick) / int(time.Second)
	var sent int64
	t := time.NewTicker(tick)
	defer t.Stop()
	i := 0
	for {
		select {
		case <-ctx.Done():
			return sent
		case <-t.C:
		}
		chs := channels()
		if len(chs) == 0 {
			continue
		}
		cmds := make(rueidis.Commands, 0, perTick)
		for range perTick {
			cmds = append(cmds, rc.B().Publish().Channel(chs[i%len(chs)]).Message(spoofPayloads[i%len(spoofPayloads)]).Build())
			i++
		}
		for _, r := range rc.DoMulti(ctx, cmds...) {
			if r.Error() == nil {
				sent++
			}
		}
	}
}

// cpuTime returns the CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestSpoofedUnlockMessages(t *testing.T) {
	redistest.RequireProcess(t)
	srv := redistest.Standalone(t)
	admin := srv.Client(t)
	spoofer := srv.Client(t)
	for _, k := range secKinds {
		t.Run(k.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			name := "spoof:" + k.name
			holderC, err := interlock.New(srv.Client(t))
			require.NoError(t, err)
			defer holderC.Close()
			// A writer holds the lock, so that readers wait too.
			holder := k.newLock(holderC, name)
			if k.name == "rwlock-read" {
				holder = secKinds[2].newLock(holderC, name)
			}
			require.NoError(t, holder.Lock(ctx))

			var clients []*interlock.Client
			for range 2 {
				c, err := interlock.New(srv.Client(t))
				require.NoError(t, err)
				defer c.Close()
				clients = append(clients, c)
			}
			var (
				released      atomic.Bool  // the holder has released the lock
				falseAcquired atomic.Int64 // acquisitions before that
				acquired      atomic.Int64
				wg            sync.WaitGroup
			)
			waitFor := spoofWarmup + spoofWindow + spoofHandOff
			for i := range spoofWaiters {
				c := clients[i%len(clients)]
				wg.Go(func() {
					l := k.newLock(c, name)
					ok, err := l.TryLock(ctx, waitFor, 0)
					assert.NoError(t, err)
					if !ok {
						return
					}
					if !released.Load() {
						falseAcquired.Add(1)
					}
					acquired.Add(1)
					assert.NoError(t, l.Unlock(ctx))
				})
			}

			// The fair lock's waiters each listen on their own channel.
			var chMu sync.Mutex
			channels := []string{k.channel(name)}
			if k.name == "fairlock" {
				queue := keys.Prefix("redisson_lock_queue", name)
				go func() {
					time.Sleep(spoofWarmup / 2)
					owners, err := admin.Do(ctx, admin.B().Lrange().Key(queue).Start(0).Stop(-1).Build()).AsStrSlice()
					if err == nil {
						chMu.Lock()
						for _, o := range owners {
							channels = append(channels, k.channel(name)+":"+o)
						}
						chMu.Unlock()
					}
				}()
			}
			spoofCtx, stopSpoof := context.WithCancel(ctx)
			var sent int64
			var spoofWG sync.WaitGroup
			spoofWG.Go(func() {
				sent = spoof(spoofCtx, spoofer, func() []string {
					chMu.Lock()
					defer chMu.Unlock()
					return channels
				})
			})

			time.Sleep(spoofWarmup)
			calls0, cpu0, t0 := scriptCalls(t, admin), cpuTime(), time.Now()
			time.Sleep(spoofWindow)
			calls1, cpu1, elapsed := scriptCalls(t, admin), cpuTime(), time.Since(t0)
			held, err := holder.IsHeld(ctx)
			require.NoError(t, err)
			assert.True(t, held, "the holder still holds the lock")

			// A real release still gets through, spoofing going on.
			released.Store(true)
			handOff := time.Now()
			require.NoError(t, holder.Unlock(ctx))
			wg.Wait()
			handOffTime := time.Since(handOff)
			stopSpoof()
			spoofWG.Wait()
			spoofTime := time.Since(t0) + spoofWarmup

			perWaiter := float64(calls1-calls0) / spoofWaiters / elapsed.Seconds()
			chMu.Lock()
			nch := len(channels)
			chMu.Unlock()
			t.Logf("%s: %d spoofed messages (%.0f/s) on %d channel(s); %d acquire attempts in %v: %.1f per waiter per second; "+
				"process CPU %.0f%% of one core; after the release all %d waiters had the lock in turn within %v",
				k.name, sent, float64(sent)/spoofTime.Seconds(), nch, calls1-calls0, elapsed.Round(time.Millisecond),
				perWaiter, 100*float64(cpu1-cpu0)/float64(elapsed), acquired.Load(), handOffTime.Round(time.Millisecond))
			assert.Zero(t, falseAcquired.Load(), "false acquisitions")
			assert.LessOrEqual(t, perWaiter, spoofMaxPerSec, "acquire attempts per waiter per second")
			assert.Equal(t, int64(spoofWaiters), acquired.Load(), "every waiter got the lock after the real release")
			assert.Less(t, handOffTime, spoofHandOff)
			assert.Greater(t, float64(sent)/spoofTime.Seconds(), spoofRate/2.0, "the spoofer reached at least half its rate")
		})
	}
}
