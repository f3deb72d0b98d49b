package semaphore_test

import (
	"context"
	"fmt"
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

// counted returns an interlock Client on the target with the scripts it
// sends counted.
func counted(t *testing.T, tg target, opts ...interlock.Option) (*interlock.Client, *counter) {
	t.Helper()
	cnt := &counter{Client: tg.RC(t)}
	return tg.Wrap(t, cnt, opts...), cnt
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
	deadline := time.Now().Add(redistest.Prompt)
	for c.since(s) < d {
		require.True(t, time.Now().Before(deadline), "%s never stopped running", s.Name())
		time.Sleep(10 * time.Millisecond)
	}
	return c.n(s)
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

// within asserts that d is at least lo and at most hi.
func within(t *testing.T, d, lo, hi time.Duration, what string) {
	t.Helper()
	assert.GreaterOrEqual(t, d, lo, "%s took %v", what, d)
	assert.LessOrEqual(t, d, hi, "%s took %v", what, d)
}

// Dedicate dedicates a connection whose renewal rounds and latch sweeps
// go through counter's DoMulti (redistest.Aside).
func (c *counter) Dedicate() (rueidis.DedicatedClient, func()) {
	dc, release := c.Client.Dedicate()
	return redistest.Aside(dc, c.DoMulti), release
}
