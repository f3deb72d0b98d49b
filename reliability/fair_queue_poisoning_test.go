package reliability

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/internal/redistest"
)

// TestT21FairQueuePoisoning is the part of T21 that belongs to the fault
// suite (spoofed messages, the ACLs and the logs are tested in package
// security, which make nightly runs too): a client
// allowed to write a fair lock's queue pushes fake waiters with deadlines
// an hour away. Real waiters cannot get past them, but every wait must
// still end at its deadline (± 50 ms), try at most 20 times a second,
// and leave no place in the queue behind.
func TestT21FairQueuePoisoning(t *testing.T) {
	redistest.RequireProcess(t)
	srv := redistest.Standalone(t)
	rc := srv.Client(t)
	c, err := interlock.New(srv.Client(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })

	name := "t21:poisoned"
	queue, timeouts := "redisson_lock_queue:{"+name+"}", "redisson_lock_timeout:{"+name+"}"
	ctx := context.Background()
	far := time.Now().Add(time.Hour).UnixMilli()
	for i := range 10 {
		fake := fmt.Sprintf("00000000-0000-4000-8000-000000000000:%d", i+1)
		require.NoError(t, rc.Do(ctx, rc.B().Rpush().Key(queue).Element(fake).Build()).Error())
		require.NoError(t, rc.Do(ctx, rc.B().Zadd().Key(timeouts).ScoreMember().
			ScoreMember(float64(far+int64(i)), fake).Build()).Error())
	}

	const wait, slack = 2 * time.Second, 50 * time.Millisecond
	m := fairlock.New(c, name)
	before := t21Scripts(t, rc)

	owner := interlock.WithOwner(ctx, interlock.NewOwnerID())
	start := time.Now()
	ok, err := m.TryLock(owner, wait, 0)
	took := time.Since(start)
	require.NoError(t, err)
	assert.False(t, ok, "acquired behind ten fake waiters")
	assert.InDelta(t, float64(wait), float64(took), float64(slack), "TryLock(%v) returned after %v", wait, took)

	lctx, cancel := context.WithTimeout(interlock.WithOwner(ctx, interlock.NewOwnerID()), wait)
	start = time.Now()
	err = m.Lock(lctx)
	took2 := time.Since(start)
	cancel()
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.InDelta(t, float64(wait), float64(took2), float64(slack), "Lock(ctx %v) returned after %v", wait, took2)

	scripts := t21Scripts(t, rc) - before
	perSecond := float64(scripts) / (took + took2).Seconds()
	assert.LessOrEqual(t, perSecond, 20.0, "acquire attempts per second per waiter")

	left, err := rc.Do(ctx, rc.B().Lrange().Key(queue).Start(0).Stop(-1).Build()).AsStrSlice()
	require.NoError(t, err)
	assert.Len(t, left, 10, "a real waiter kept its place after giving up: %v", left)
	t.Logf("T21 fair queue poisoned with 10 fake waiters: TryLock(%v) returned after %v, Lock(ctx %v) after %v; %d scripts (%.1f/s per waiter); queue left: %d fake entries only",
		wait, took.Round(time.Millisecond), wait, took2.Round(time.Millisecond), scripts, perSecond, len(left))
}

// t21Scripts returns how many scripts (EVAL and EVALSHA) the server has
// run, from INFO commandstats.
func t21Scripts(t *testing.T, rc rueidis.Client) int64 {
	t.Helper()
	info, err := rc.Do(context.Background(), rc.B().Info().Section("commandstats").Build()).ToString()
	require.NoError(t, err)
	var n int64
	for _, line := range strings.Split(info, "\n") {
		for _, cmd := range []string{"cmdstat_evalsha:", "cmdstat_eval:"} {
			rest, ok := strings.CutPrefix(strings.TrimSpace(line), cmd+"calls=")
			if !ok {
				continue
			}
			calls, _, _ := strings.Cut(rest, ",")
			v, err := strconv.ParseInt(calls, 10, 64)
			require.NoError(t, err)
			n += v
		}
	}
	return n
}
