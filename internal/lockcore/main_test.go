package lockcore

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/script"
)

// addr is the package's shared redis-server.
var addr string

func TestMain(m *testing.M) {
	redistest.Main(m, func() (func(), error) {
		s, err := redistest.Start()
		if err != nil {
			return nil, err
		}
		addr = s.Addr()
		return s.Stop, nil
	})
}

// testKind is Redisson's RLock, as the rlock package declares it.
var testKind = Reentrant(string(interlock.KindRLock))

// record is one command a tap saw: when it was handed on, when its reply
// came back, the script it runs (nil: none), and its words.
type record struct {
	at, end time.Time
	script  *script.Script
	args    []string
}

// keys and argv split a script command's words.
func (r record) keys() []string {
	n, _ := strconv.Atoi(r.args[2])
	return r.args[3 : 3+n]
}

func (r record) argv() []string { return r.args[3+len(r.keys()):] }

// hook sees one command of Do before it is sent and decides its reply;
// next sends it.
type hook func(ctx context.Context, r record, next func() rueidis.RedisResult) rueidis.RedisResult

// tap is a rueidis client that plays the fake Exec: it records every Do
// and DoMulti, lets a hook drop or delay Do's replies, and can answer the
// WAIT of safe mode itself.
type tap struct {
	rueidis.Client

	mu     sync.Mutex
	hook   hook
	ackAll bool // WAIT answers 1, as if a replica acknowledged
	hang   bool // DoMulti (renewal) answers nothing until its context ends
	log    []record
}

func (t *tap) setHang(on bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.hang = on
}

func (t *tap) setHook(h hook) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.hook = h
}

func (t *tap) setAckAll(on bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ackAll = on
}

// read copies cmd's words before it is sent: rueidis recycles commands.
func read(cmd rueidis.Completed) record {
	r := record{at: time.Now(), args: slices.Clone(cmd.Commands())}
	r.script = scriptOf(r.args)
	return r
}

func (t *tap) add(rs ...record) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.log = append(t.log, rs...)
}

func (t *tap) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	r := read(cmd)
	t.mu.Lock()
	h := t.hook
	t.mu.Unlock()
	next := func() rueidis.RedisResult { return t.Client.Do(ctx, cmd) }
	var res rueidis.RedisResult
	if h == nil {
		res = next()
	} else {
		res = h(ctx, r, next)
	}
	r.end = time.Now()
	t.add(r)
	return res
}

func (t *tap) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	if redistest.CarriesDeletes(cmds) {
		n := len(cmds) - 1
		// A script carrying the Client's queued deletions: the DELs go
		// straight to the server, the script as a Do.
		rs := make([]record, n)
		for i, cmd := range cmds[:n] {
			rs[i] = read(cmd)
		}
		res := t.Client.DoMulti(ctx, cmds[:n]...)
		t.add(rs...)
		return append(res, t.Do(ctx, cmds[n]))
	}
	rs := make([]record, len(cmds))
	t.mu.Lock()
	ackAll, hang := t.ackAll, t.hang
	t.mu.Unlock()
	if hang {
		<-ctx.Done()
		res := make([]rueidis.RedisResult, len(cmds))
		for i := range res {
			res[i] = rueidis.NewErrorResult(ctx.Err())
		}
		return res
	}
	for i, cmd := range cmds {
		rs[i] = read(cmd)
		if ackAll && rs[i].args[0] == "WAIT" {
			cmds[i] = t.Client.B().Echo().Message("1").Build()
		}
	}
	res := t.Client.DoMulti(ctx, cmds...)
	for i := range rs {
		rs[i].end = time.Now()
	}
	t.add(rs...)
	return res
}

// sent returns the commands recorded that run s, in order; nil s gives
// every command.
func (t *tap) sent(s *script.Script) []record {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []record
	for _, r := range t.log {
		if s == nil || r.script == s {
			out = append(out, r)
		}
	}
	return out
}

// scriptOf returns the script an EVALSHA or EVAL command runs, or nil.
func scriptOf(args []string) *script.Script {
	if len(args) < 3 {
		return nil
	}
	for _, s := range script.All() {
		if (args[0] == "EVALSHA" && args[1] == s.SHA1()) || (args[0] == "EVAL" && args[1] == s.Source()) {
			return s
		}
	}
	return nil
}

var loadOnce sync.Once

// newClient returns an interlock Client on the shared server through a
// tap, closed when t ends. Every script is cached on the server first, so
// that each script call is one EVALSHA.
func newClient(t *testing.T, opts ...interlock.Option) (*interlock.Client, *tap) {
	t.Helper()
	rc := redistest.NewClient(t, addr)
	loadOnce.Do(func() {
		for _, s := range script.All() {
			require.NoError(t, rc.Do(context.Background(), rc.B().ScriptLoad().Script(s.Source()).Build()).Error())
		}
	})
	tp := &tap{Client: rc}
	c, err := interlock.New(tp, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c, tp
}

// lockName returns a key unique to the test.
func lockName(t *testing.T) string {
	return "lockcore-test:" + strings.ReplaceAll(t.Name(), "/", ":")
}

// testCtx returns a context for one test, acting for an owner of its own.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return interlock.WithOwner(ctx, interlock.NewOwnerID())
}

// exists reports whether key is on the server.
func exists(t *testing.T, c *tap, key string) bool {
	t.Helper()
	n, err := c.Client.Do(context.Background(), c.Client.B().Exists().Key(key).Build()).AsInt64()
	require.NoError(t, err)
	return n == 1
}

// holdCount reads the server's count for holder on name.
func holdCount(t *testing.T, c *tap, name, holder string) int {
	t.Helper()
	n, err := c.Client.Do(context.Background(), c.Client.B().Hget().Key(name).Field(holder).Build()).AsInt64()
	if rueidis.IsRedisNil(err) {
		return 0
	}
	require.NoError(t, err)
	return int(n)
}

// Dedicate dedicates a connection whose renewal rounds and latch sweeps
// go through tap's DoMulti (redistest.Aside).
func (t *tap) Dedicate() (rueidis.DedicatedClient, func()) {
	dc, release := t.Client.Dedicate()
	return redistest.Aside(dc, t.DoMulti), release
}
