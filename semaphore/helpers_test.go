package semaphore_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/script"
)

// Tolerances: they must hold on a loaded 2-core machine running -race.
const (
	prompt = 5 * time.Second        // "happens promptly": the bound of every poll
	slack  = 700 * time.Millisecond // how late a timed event may be
	quiet  = 200 * time.Millisecond // "does not happen" observation window
)

// target is a deployment the behaviour tests run on: the shared
// standalone server or the shared 3-master cluster.
type target struct {
	cluster bool
	addrs   []string
}

// each runs f on the standalone server, then on the cluster.
func each(t *testing.T, f func(t *testing.T, tg target)) {
	t.Run("standalone", func(t *testing.T) { f(t, target{addrs: []string{addr}}) })
	t.Run("cluster", func(t *testing.T) { f(t, target{cluster: true, addrs: clusterAddrs(t)}) })
}

// rc returns a new rueidis client on the target, closed when t ends.
func (tg target) rc(t *testing.T) rueidis.Client {
	t.Helper()
	return redistest.NewClient(t, tg.addrs...)
}

// client returns an interlock Client on the target and the rueidis client
// under it.
func (tg target) client(t *testing.T, opts ...interlock.Option) (*interlock.Client, rueidis.Client) {
	t.Helper()
	rc := tg.rc(t)
	return wrap(t, rc, opts...), rc
}

// counted is client with the scripts it sends counted.
func (tg target) counted(t *testing.T, opts ...interlock.Option) (*interlock.Client, *counter) {
	t.Helper()
	cnt := &counter{Client: tg.rc(t)}
	return wrap(t, cnt, opts...), cnt
}

// counter wraps a rueidis client and counts the scripts it runs, by
// script, once per execution (an EVALSHA answered NOSCRIPT, which the
// library follows with EVAL, is not counted).
type counter struct {
	rueidis.Client
	mu    sync.Mutex
	calls map[string]int64
	last  map[string]time.Time
}

// scriptName returns the name of the script cmd runs, or "".
func scriptName(cmd rueidis.Completed) string {
	args := cmd.Commands()
	if len(args) < 2 {
		return ""
	}
	for _, s := range allScripts {
		if (args[0] == "EVALSHA" && args[1] == s.SHA1()) || (args[0] == "EVAL" && args[1] == s.Source()) {
			return s.Name()
		}
	}
	return ""
}

var allScripts = []*script.Script{
	script.SemAcquire(), script.SemUndoAcquire(), script.SemRelease(), script.SemReleaseIfExists(),
	script.SemTrySet(), script.SemAdd(), script.SemDrain(),
	script.PESAcquire(), script.PESReleaseOne(), script.PESRelease(), script.PESAvailable(), script.PESPermits(),
	script.PESAcquired(), script.PESSetPermits(), script.PESAdd(), script.PESUpdateLease(), script.PESLease(), script.PESRenew(),
}

func (c *counter) record(name string, res rueidis.RedisResult) {
	if name == "" || script.IsNoScript(res.Error()) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls, c.last = map[string]int64{}, map[string]time.Time{}
	}
	c.calls[name]++
	c.last[name] = time.Now()
}

func (c *counter) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	name := scriptName(cmd) // before sending: rueidis recycles a sent command
	res := c.Client.Do(ctx, cmd)
	c.record(name, res)
	return res
}

func (c *counter) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	names := make([]string, len(cmds))
	for i, cmd := range cmds {
		names[i] = scriptName(cmd)
	}
	res := c.Client.DoMulti(ctx, cmds...)
	for i := range res {
		c.record(names[i], res[i])
	}
	return res
}

// n returns how often s ran.
func (c *counter) n(s *script.Script) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[s.Name()]
}

// since returns how long ago s last ran (a long time when never).
func (c *counter) since(s *script.Script) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.last[s.Name()]
	if !ok {
		return time.Hour
	}
	return time.Since(at)
}

// settle waits until s has not run for d, and returns its count then.
func (c *counter) settle(t *testing.T, s *script.Script, d time.Duration) int64 {
	t.Helper()
	deadline := time.Now().Add(prompt)
	for c.since(s) < d {
		require.True(t, time.Now().Before(deadline), "%s never stopped running", s.Name())
		time.Sleep(10 * time.Millisecond)
	}
	return c.n(s)
}

// everyNode sends the command build makes to every node of rc and returns
// the replies' strings, each once: KEYS sees one node's keys only.
func everyNode(t *testing.T, rc rueidis.Client, build func(rueidis.Builder) rueidis.Completed) []string {
	t.Helper()
	var out []string
	for _, n := range rc.Nodes() {
		v, err := n.Do(context.Background(), build(n.B())).AsStrSlice()
		require.NoError(t, err)
		out = append(out, v...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// receipts returns the receipt keys of the object called name.
func receipts(t *testing.T, rc rueidis.Client, name string) []string {
	t.Helper()
	return everyNode(t, rc, func(b rueidis.Builder) rueidis.Completed {
		return b.Keys().Pattern("interlock_receipt:{" + redistest.Glob(name) + "}:*").Build()
	})
}

// oneReceipt asserts that what ran since the last call left at most one
// receipt of name, expiring within 30s (or already deleted by the Client,
// which drops receipts once answered), and deletes it.
func oneReceipt(t *testing.T, rc rueidis.Client, name, op string) {
	t.Helper()
	ks := receipts(t, rc, name)
	assert.LessOrEqual(t, len(ks), 1, "%s left receipts %q", op, ks)
	for _, k := range ks {
		ms, err := rc.Do(context.Background(), rc.B().Pttl().Key(k).Build()).AsInt64()
		require.NoError(t, err)
		assert.True(t, ms > 0 || ms == -2, "%s: receipt %s has no TTL", op, k)
		assert.LessOrEqual(t, ms, int64(30000), "%s: receipt %s", op, k)
		require.NoError(t, rc.Do(context.Background(), rc.B().Del().Key(k).Build()).Error())
	}
}

// clearReceipts asserts that every receipt of name expires within 30s,
// and deletes them, so that a later oneReceipt counts only its own.
func clearReceipts(t *testing.T, rc rueidis.Client, name string) {
	t.Helper()
	for _, k := range receipts(t, rc, name) {
		ms, err := rc.Do(context.Background(), rc.B().Pttl().Key(k).Build()).AsInt64()
		require.NoError(t, err)
		assert.True(t, ms > 0 || ms == -2, "receipt %s has no TTL", k)
		assert.LessOrEqual(t, ms, int64(30000), "receipt %s", k)
		require.NoError(t, rc.Do(context.Background(), rc.B().Del().Key(k).Build()).Error())
	}
}

// exists reports whether key exists.
func exists(t *testing.T, rc rueidis.Client, key string) bool {
	t.Helper()
	n, err := rc.Do(context.Background(), rc.B().Exists().Key(key).Build()).AsInt64()
	require.NoError(t, err)
	return n == 1
}

// state describes what key holds, TTL aside, to compare before and after.
func state(t *testing.T, rc rueidis.Client, key string) string {
	t.Helper()
	ctx := context.Background()
	typ, err := rc.Do(ctx, rc.B().Type().Key(key).Build()).ToString()
	require.NoError(t, err)
	var v any
	switch typ {
	case "none":
		return "none"
	case "hash":
		v, err = rc.Do(ctx, rc.B().Hgetall().Key(key).Build()).AsStrMap()
	case "zset":
		v, err = rc.Do(ctx, rc.B().Zrange().Key(key).Min("0").Max("-1").Withscores().Build()).AsZScores()
	case "string":
		v, err = rc.Do(ctx, rc.B().Get().Key(key).Build()).ToString()
	default:
		v = "?"
	}
	require.NoError(t, err)
	return typ + ":" + fmt.Sprint(v)
}

// do runs an arbitrary command and fails t on an error reply.
func do(t *testing.T, rc rueidis.Client, args ...string) rueidis.RedisResult {
	t.Helper()
	res := rc.Do(context.Background(), rc.B().Arbitrary(args[0]).Keys(args[1]).Args(args[2:]...).Build())
	require.NoError(t, res.Error(), "%q", args)
	return res
}

// must fails the test on err and returns v.
func must[T any](t *testing.T) func(v T, err error) T {
	return func(v T, err error) T {
		t.Helper()
		require.NoError(t, err)
		return v
	}
}

// within asserts that d is at least lo and at most hi.
func within(t *testing.T, d, lo, hi time.Duration, what string) {
	t.Helper()
	assert.GreaterOrEqual(t, d, lo, "%s took %v", what, d)
	assert.LessOrEqual(t, d, hi, "%s took %v", what, d)
}
