package reliability

// Helpers of the network-fault tests (T4, T5, T6, T7, T12, T22): a
// redis-server behind a faultproxy, an interlock Client that reaches it
// only through the proxy, a direct client that inspects the server, and
// the five lock kinds (rlock, fairlock, the read and write halves of
// rwlock, fenced) behind one small interface with the scripts the proxy
// matches.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/fenced"
	"github.com/interlock-go/interlock/internal/faultproxy"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/script"
	"github.com/interlock-go/interlock/rlock"
	"github.com/interlock-go/interlock/rwlock"
)

// netEnv is one server, a proxy in front of it and the clients of a test.
type netEnv struct {
	srv    *redistest.Server
	proxy  *faultproxy.Proxy
	rc     rueidis.Client    // through the proxy
	c      *interlock.Client // on rc
	direct rueidis.Client    // straight to the server, never faulted
}

// netStart starts a server, a proxy and a Client with opts through the
// proxy; everything is closed by t.Cleanup (Client, clients, proxy, server).
func netStart(t *testing.T, opts ...interlock.Option) *netEnv {
	t.Helper()
	redistest.RequireProcess(t)
	srv := redistest.Standalone(t)
	return netAttach(t, srv, srv.Client(t), opts...)
}

// netAttach is netStart on a running server: a proxy of its own in front
// of srv and a Client through it; direct is the server's direct client.
// Several envs on one server fault independently.
func netAttach(t *testing.T, srv *redistest.Server, direct rueidis.Client, opts ...interlock.Option) *netEnv {
	t.Helper()
	e := &netEnv{srv: srv, direct: direct}
	p, err := faultproxy.Start(e.srv.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, p.Close()) })
	e.proxy = p
	e.rc = netDial(t, p.Addr())
	e.c, err = interlock.New(e.rc, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.c.Close() })
	return e
}

// netDial returns a rueidis client of addr with default options (a user's
// client), closed by t.Cleanup.
func netDial(t *testing.T, addr string) rueidis.Client {
	t.Helper()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true})
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	return rc
}

// netLock is one named lock of one kind, for the owner in each ctx.
type netLock struct {
	Lock      func(ctx context.Context) error
	Unlock    func(ctx context.Context) error
	Guard     func(ctx context.Context) context.Context
	Remaining func(ctx context.Context) time.Duration
}

// netKind is a lock kind with the scripts a proxy rule matches.
type netKind struct {
	name    string
	acquire []*script.Script // every script an acquisition may send
	unlock  *script.Script
	suffix  string // appended to the owner for its hash field
	notHeld error  // the kind's ErrNotHeld
	lost    error  // the kind's ErrLockLost
	open    func(c *interlock.Client, name string) netLock
}

// netKinds are the five kinds, in subtest order.
var netKinds = []netKind{
	{"rlock", []*script.Script{script.Acquire()}, script.Unlock(), "", interlock.ErrNotHeld, interlock.ErrLockLost,
		func(c *interlock.Client, n string) netLock {
			m := rlock.New(c, n)
			return netLock{m.Lock, m.Unlock, m.Guard, m.Remaining}
		}},
	{"fairlock", []*script.Script{script.FairAcquire(), script.FairTryAcquire()}, script.FairUnlock(), "", interlock.ErrNotHeld, interlock.ErrLockLost,
		func(c *interlock.Client, n string) netLock {
			m := fairlock.New(c, n, fairlock.WithWaitTimeout(2*time.Second))
			return netLock{m.Lock, m.Unlock, m.Guard, m.Remaining}
		}},
	{"rwread", []*script.Script{script.RWReadAcquire()}, script.RWReadUnlock(), "", interlock.ErrNotHeld, interlock.ErrLockLost,
		func(c *interlock.Client, n string) netLock {
			m := rwlock.New(c, n).Read()
			return netLock{m.Lock, m.Unlock, m.Guard, m.Remaining}
		}},
	{"rwwrite", []*script.Script{script.RWWriteAcquire()}, script.RWWriteUnlock(), ":write", interlock.ErrNotHeld, interlock.ErrLockLost,
		func(c *interlock.Client, n string) netLock {
			m := rwlock.New(c, n).Write()
			return netLock{m.Lock, m.Unlock, m.Guard, m.Remaining}
		}},
	{"fenced", []*script.Script{script.FencedAcquire()}, script.Unlock(), "", interlock.ErrNotHeld, interlock.ErrLockLost,
		func(c *interlock.Client, n string) netLock {
			m := fenced.New(c, n)
			return netLock{m.Lock, m.Unlock, m.Guard, m.Remaining}
		}},
}

// netScripts is a proxy predicate matching runs of any of scripts.
func netScripts(scripts ...*script.Script) func(cmd []string) bool {
	preds := make([]func([]string) bool, len(scripts))
	for i, s := range scripts {
		preds[i] = faultproxy.EvalSHA(s.SHA1())
	}
	return func(cmd []string) bool {
		for _, p := range preds {
			if p(cmd) {
				return true
			}
		}
		return false
	}
}

// netOwner returns a ctx with a fresh owner and that owner's hash field
// for kind k on c.
func netOwner(t *testing.T, c *interlock.Client, k netKind) (context.Context, string) {
	t.Helper()
	ctx := interlock.WithOwner(t.Context(), interlock.NewOwnerID())
	owner, err := c.Owner(ctx)
	require.NoError(t, err)
	return ctx, owner + k.suffix
}

// netCount returns field's count in the hash name, 0 when absent (-1
// after reporting an error). Like every helper below, it may run on any
// goroutine of the test.
func netCount(t *testing.T, rc rueidis.Client, name, field string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := rc.Do(ctx, rc.B().Hget().Key(name).Field(field).Build()).AsInt64()
	switch {
	case rueidis.IsRedisNil(err):
		return 0
	case err != nil:
		t.Errorf("HGET %s: %v", name, err)
		return -1
	}
	return n
}

// netPTTL returns the PTTL of key: -2 when absent, -1 without expiry.
func netPTTL(ctx context.Context, rc rueidis.Client, key string) (int64, error) {
	return rc.Do(ctx, rc.B().Pttl().Key(key).Build()).AsInt64()
}

// netKeysLeft lists the server's keys except fencing token counters,
// which live for ever by design, and unlock latches, which the Client
// deletes in the background and which expire by themselves.
func netKeysLeft(t *testing.T, rc rueidis.Client) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var left []string
	var cursor uint64
	for {
		e, err := rc.Do(ctx, rc.B().Scan().Cursor(cursor).Count(1000).Build()).AsScanEntry()
		if err != nil {
			t.Errorf("SCAN: %v", err)
			return left
		}
		for _, k := range e.Elements {
			if !strings.HasPrefix(k, "redisson_lock_token:") && !strings.HasPrefix(k, "redisson_unlock_latch:") {
				left = append(left, k)
			}
		}
		if cursor = e.Cursor; cursor == 0 {
			sort.Strings(left)
			return left
		}
	}
}

// netDump describes keys (type, PTTL, content) for a failure message.
func netDump(rc rueidis.Client, keys []string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	for _, k := range keys {
		typ, _ := rc.Do(ctx, rc.B().Type().Key(k).Build()).ToString()
		ttl, _ := netPTTL(ctx, rc, k)
		var content any
		switch typ {
		case "hash":
			content, _ = rc.Do(ctx, rc.B().Hgetall().Key(k).Build()).AsStrMap()
		case "list":
			content, _ = rc.Do(ctx, rc.B().Lrange().Key(k).Start(0).Stop(-1).Build()).AsStrSlice()
		case "zset":
			content, _ = rc.Do(ctx, rc.B().Zrange().Key(k).Min("0").Max("-1").Withscores().Build()).AsStrSlice()
		default:
			content, _ = rc.Do(ctx, rc.B().Get().Key(k).Build()).ToString()
		}
		fmt.Fprintf(&b, "  %s (%s, pttl %d): %v\n", k, typ, ttl, content)
	}
	return b.String()
}

// netErrTally counts errors by their text, keeping the order first seen.
type netErrTally struct {
	order []string
	n     map[string]int
	first map[string]string // the first full text of a class
}

// add counts err; connection errors count as one kind whatever their
// text (it names the lock).
func (e *netErrTally) add(err error) {
	msg := err.Error()
	full := msg
	if netIsConnErr(err) {
		msg = "connection error"
	}
	e.addText(msg, full, 1)
}

// addText counts count errors of class msg, the first with the full text
// full.
func (e *netErrTally) addText(msg, full string, count int) {
	if e.n == nil {
		e.n = map[string]int{}
	}
	if e.n[msg] == 0 {
		e.order = append(e.order, msg)
		if e.first == nil {
			e.first = map[string]string{}
		}
		e.first[msg] = full
	}
	e.n[msg] += count
}

// merge adds the counts of o.
func (e *netErrTally) merge(o *netErrTally) {
	for _, class := range o.order {
		e.addText(class, o.first[class], o.n[class])
	}
}

func (e *netErrTally) String() string {
	if len(e.order) == 0 {
		return "none"
	}
	var b strings.Builder
	for i, m := range e.order {
		if i == 5 {
			fmt.Fprintf(&b, "; and %d more kinds", len(e.order)-5)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%dx %q", e.n[m], m)
		if f := e.first[m]; f != m {
			fmt.Fprintf(&b, " (first: %q)", f)
		}
	}
	return b.String()
}

// netPercentile returns the p-th percentile (0..1) of ds, sorted in place.
func netPercentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(float64(len(ds)-1) * p)
	return ds[i]
}

// netIsConnErr reports whether err comes from a broken or unreachable
// connection rather than from the server or the library's logic.
func netIsConnErr(err error) bool {
	if err == nil {
		return false
	}
	if _, ok := rueidis.IsRedisErr(err); ok {
		return false
	}
	return t20ConnErr(err) || errors.Is(err, rueidis.ErrClosing) || errors.Is(err, context.DeadlineExceeded)
}

// netWait waits for d or until ctx ends.
func netWait(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// netDropped waits up to bound for p to have dropped more replies than
// before, and reports whether it did.
func netDropped(p *faultproxy.Proxy, before int64, bound time.Duration) bool {
	for end := time.Now().Add(bound); p.Stats().RepliesDropped == before; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			return false
		}
	}
	return true
}

// netTakenBack waits for the Client's background take-back to bring
// field's count on lock name from got to want, but only while the lock's
// own TTL cannot have expired it, so that expiry never passes for a
// take-back; it returns the count last read.
func netTakenBack(t *testing.T, rc rueidis.Client, name, field string, got, want int64) int64 {
	t.Helper()
	if got == want {
		return got
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ttl, err := rc.Do(ctx, rc.B().Pttl().Key(name).Build()).AsInt64()
	if err != nil || ttl <= 0 {
		return got
	}
	for end := time.Now().Add(time.Duration(ttl)*time.Millisecond - 200*time.Millisecond); got != want && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
		got = netCount(t, rc, name, field)
	}
	return got
}
