package compat_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redisproc"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/script"
)

// Golden replays of the non-reentrant lock vectors of
// reference/redisson-synchronizers.md §11.5 (V5.1, V5.2): our scripts run
// with the KEYS and ARGV Redisson 4.7.0 sends, and each step checks the
// commands they ran (MONITOR), the raw reply, including the exact error
// text of a re-entry, and the state left behind.

// nrReentered is the error reply a re-entry gets on the wire (after "-").
const nrReentered = redisproc.ReplyError("ERR NON_REENTRANT_REACQUIRE")

// nrOwners are the owners of the captures, A:62 and A:63.
const (
	nrA62 = "6e7a3b0c-91d4-4f2a-b8e5-0d1c2f3a4b5c:62"
	nrA63 = "6e7a3b0c-91d4-4f2a-b8e5-0d1c2f3a4b5c:63"
)

func TestNRGoldenStandalone(t *testing.T) {
	parallel(t)
	env := sgStandalone()
	t.Run("V5.1", func(t *testing.T) { nrLock(t, env) })
	t.Run("V5.2", func(t *testing.T) { nrFair(t, env) })
}

func TestNRGoldenCluster(t *testing.T) {
	parallel(t)
	env := sgCluster(t)
	t.Run("V5.1", func(t *testing.T) { nrLock(t, env) })
	t.Run("V5.2", func(t *testing.T) { nrFair(t, env) })
}

// TestNRToken checks the token the scripts are given and what rueidis
// makes of the error reply: a Redis error whose text carries the token
// (rueidis drops the "ERR " prefix from the text).
func TestNRToken(t *testing.T) {
	parallel(t)
	require.Equal(t, "NON_REENTRANT_REACQUIRE", script.NonReentrantToken)
	rc := redistest.NewClient(t, standaloneAddr)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	N := unique("nrtok")
	t.Cleanup(func() { rc.Do(context.Background(), rc.B().Del().Key(N).Build()) })
	args := []string{"30000", nrA62, script.NonReentrantToken}
	require.True(t, rueidis.IsRedisNil(script.Acquire().Exec(ctx, rc, ks(N), args).Error()))
	err := script.Acquire().Exec(ctx, rc, ks(N), args).Error()
	require.Error(t, err)
	re, ok := rueidis.IsRedisErr(err)
	require.True(t, ok, "an error reply: %v", err)
	assert.True(t, strings.Contains(re.Error(), script.NonReentrantToken), "%q", re.Error())
}

// nrLock replays V5.1 on `nr1`, then checks that the reentrant acquire
// re-enters a non-reentrant hold (§6.3, mixing types).
func nrLock(t *testing.T, env sgEnv) {
	N := unique("nr1")
	ch := keys.LockChannel(N)
	require.Equal(t, "redisson_lock__channel:{"+N+"}", ch)
	r := newSgRec(t, env, N, ch)
	t.Cleanup(func() { r.ctl.try("DEL", N) })
	tok := script.NonReentrantToken
	acq := func(owner string, cmds ...[]string) scriptRun {
		return run(script.Acquire(), ks(N), argv("30000", owner, tok), append([][]string{cmd("exists", N)}, cmds...)...)
	}

	assert.Nil(t, r.eval(script.Acquire(), ks(N), "30000", nrA62, tok))
	r.step("V5.1 lock()", nil, acq(nrA62, cmd("hincrby", N, nrA62, "1"), cmd("pexpire", N, "30000")))
	assert.Equal(t, map[string]string{nrA62: "1"}, r.ctl.hash(N))
	r.pttlWithin(N, 30000)

	r.ctl.do("PEXPIRE", N, "25000")
	assert.Equal(t, nrReentered, r.eval(script.Acquire(), ks(N), "30000", nrA62, tok))
	r.step("V5.1 lock() again by A:62", nil, acq(nrA62, cmd("hexists", N, nrA62)))
	assert.Equal(t, map[string]string{nrA62: "1"}, r.ctl.hash(N), "a re-entry changes nothing")
	r.pttlWithin(N, 25000)

	left, ok := r.eval(script.Acquire(), ks(N), "30000", nrA63, tok).(int64)
	require.True(t, ok, "tryLock by A:63 answers the PTTL")
	assert.True(t, left > 0 && left <= 25000, "PTTL %d", left)
	r.step("V5.1 tryLock(0) by A:63", nil, acq(nrA63, cmd("hexists", N, nrA63), cmd("pttl", N)))
	assert.Equal(t, map[string]string{nrA62: "1"}, r.ctl.hash(N))

	latch := keys.UnlockLatch(N, "0f6b3c1e9a2d4b7c8e1f2a3b4c5d6e7f")
	assert.Equal(t, int64(1), r.eval(script.Unlock(), ks(N, ch, latch), "0", "30000", nrA62, env.pub, latchMillis))
	r.step("V5.1 unlock()", []pubMsg{r.msg(ch, "0")}, run(script.Unlock(), ks(N, ch, latch),
		argv("0", "30000", nrA62, env.pub, latchMillis), cmd("get", latch), cmd("hexists", N, nrA62),
		cmd("hincrby", N, nrA62, "-1"), cmd("del", N), cmd(env.pub, ch, "0"), cmd("set", latch, "1", "px", latchMillis)))
	assert.Zero(t, r.ctl.int("EXISTS", N))
	r.ctl.do("DEL", latch)

	// §6.3: the reentrant acquire by the same owner re-enters (count 2);
	// the non-reentrant one still refuses.
	assert.Nil(t, r.eval(script.Acquire(), ks(N), "30000", nrA62, tok))
	assert.Nil(t, r.eval(script.Acquire(), ks(N), "30000", nrA62))
	assert.Equal(t, nrReentered, r.eval(script.Acquire(), ks(N), "30000", nrA62, tok))
	r.step("§6.3 mixing types", nil,
		acq(nrA62, cmd("hincrby", N, nrA62, "1"), cmd("pexpire", N, "30000")),
		run(script.Acquire(), ks(N), argv("30000", nrA62), cmd("exists", N), cmd("hexists", N, nrA62),
			cmd("hincrby", N, nrA62, "1"), cmd("pexpire", N, "30000")),
		acq(nrA62, cmd("hexists", N, nrA62)))
	assert.Equal(t, map[string]string{nrA62: "2"}, r.ctl.hash(N))
}

// nrFair replays V5.2 on `nrf`: lock(), then lock(), tryLock() and
// tryLock(100) again by the holder, each refused before it is queued; then
// the same with another owner already queued.
func nrFair(t *testing.T, env sgEnv) {
	N := unique("nrf")
	Q, Z := "redisson_lock_queue:{"+N+"}", "redisson_lock_timeout:{"+N+"}"
	require.Equal(t, Q, keys.Prefix("redisson_lock_queue", N))
	require.Equal(t, Z, keys.Prefix("redisson_lock_timeout", N))
	r := newSgRec(t, env, N)
	t.Cleanup(func() { r.ctl.try("DEL", N, Q, Z) })
	tok := script.NonReentrantToken
	const wait = "300000"
	now := func(off int64) string { return strconv.FormatInt(1796116183732+off, 10) }
	empty := func(label string) {
		t.Helper()
		assert.Zero(t, r.ctl.int("EXISTS", Q), "%s: queue", label)
		assert.Zero(t, r.ctl.int("EXISTS", Z), "%s: zset", label)
	}

	// lock(): the waiting form, ARGV=[lease, owner, wait, now, token].
	assert.Nil(t, r.eval(script.FairAcquire(), ks(N, Q, Z), "30000", nrA62, wait, now(0), tok))
	r.step("V5.2 lock()", nil, run(script.FairAcquire(), ks(N, Q, Z), argv("30000", nrA62, wait, now(0), tok),
		cmd("lindex", Q, "0"), cmd("exists", N), cmd("exists", Q), cmd("lpop", Q), cmd("zrem", Z, nrA62),
		cmd("zrange", Z, "0", "-1"), cmd("hset", N, nrA62, "1"), cmd("pexpire", N, "30000")))
	assert.Equal(t, map[string]string{nrA62: "1"}, r.ctl.hash(N))
	r.pttlWithin(N, 30000)

	refused := func(s *script.Script, args []string, head ...[]string) scriptRun {
		cmds := append([][]string{cmd("lindex", Q, "0")}, head...)
		return run(s, ks(N, Q, Z), args, append(cmds, cmd("exists", N), cmd("hexists", N, nrA62))...)
	}
	lockArgs := argv("30000", nrA62, wait, now(60), tok)
	tryArgs := argv("30000", nrA62, now(69), wait, tok) // tryLock(): now before wait
	waitArgs := argv("30000", nrA62, "100", now(75), tok)
	assert.Equal(t, nrReentered, r.eval(script.FairAcquire(), ks(N, Q, Z), lockArgs...))
	assert.Equal(t, nrReentered, r.eval(script.FairTryAcquire(), ks(N, Q, Z), tryArgs...))
	assert.Equal(t, nrReentered, r.eval(script.FairAcquire(), ks(N, Q, Z), waitArgs...))
	r.step("V5.2 lock(), tryLock(), tryLock(100) again", nil,
		refused(script.FairAcquire(), lockArgs), refused(script.FairTryAcquire(), tryArgs), refused(script.FairAcquire(), waitArgs))
	empty("V5.2")
	assert.Equal(t, map[string]string{nrA62: "1"}, r.ctl.hash(N))

	// A:63 tryLock() fails without queueing; lock() queues it.
	assert.Equal(t, int64(1), r.eval(script.FairTryAcquire(), ks(N, Q, Z), "30000", nrA63, now(100), wait, tok))
	ttl, ok := r.eval(script.FairAcquire(), ks(N, Q, Z), "30000", nrA63, wait, now(110), tok).(int64)
	require.True(t, ok)
	v := r.step("A:63 tryLock(), lock()", nil,
		run(script.FairTryAcquire(), ks(N, Q, Z), argv("30000", nrA63, now(100), wait, tok),
			cmd("lindex", Q, "0"), cmd("exists", N), cmd("hexists", N, nrA63)),
		run(script.FairAcquire(), ks(N, Q, Z), argv("30000", nrA63, wait, now(110), tok),
			cmd("lindex", Q, "0"), cmd("exists", N), cmd("hexists", N, nrA63), cmd("zscore", Z, nrA63),
			cmd("lindex", Q, "-1"), cmd("pttl", N), cmd("zadd", Z, sgAnyMillis, nrA63), cmd("rpush", Q, nrA63)))
	require.Len(t, v, 1)
	assert.Equal(t, strconv.FormatInt(ttl+300000+1796116183732+110, 10), v[0], "deadline = ttl + wait + now")
	assert.Equal(t, []string{nrA63}, r.ctl.strs("LRANGE", Q, "0", "-1"))

	// The holder's re-entry with A:63 queued: refused, queue and zset as they were.
	again := argv("30000", nrA62, wait, now(120), tok)
	assert.Equal(t, nrReentered, r.eval(script.FairAcquire(), ks(N, Q, Z), again...))
	r.step("re-entry with a waiter queued", nil, refused(script.FairAcquire(), again, cmd("zscore", Z, nrA63)))
	assert.Equal(t, []string{nrA63}, r.ctl.strs("LRANGE", Q, "0", "-1"))
	assert.Equal(t, []string{nrA63, v[0]}, r.zset(Z))
	assert.Equal(t, map[string]string{nrA62: "1"}, r.ctl.hash(N))
}
