package faultproxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/interlock-go/interlock/internal/redisproc"
	"github.com/interlock-go/interlock/internal/redistest"
)

// srv is the redis-server every test of the package shares.
var srv *redistest.Server

func TestMain(m *testing.M) {
	redistest.Main(m, func() (func(), error) {
		var err error
		srv, err = redistest.Start()
		if err != nil {
			return nil, err
		}
		return srv.Stop, nil
	})
}

// start returns a proxy to srv, closed when the test ends.
func start(t *testing.T) *Proxy {
	t.Helper()
	p, err := Start(srv.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, p.Close()) })
	return p
}

// client returns a rueidis client connected through p, without retries,
// closed before p.
func client(t *testing.T, p *Proxy) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:       []string{p.Addr()},
		ForceSingleClient: true,
		DisableRetry:      true,
		PipelineMultiplex: -1, // one connection: commands share it, as the tests expect
	})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// key returns a key name unique to the test, deleted when it ends.
func key(t *testing.T, suffix string) string {
	k := "faultproxy:" + t.Name() + ":" + suffix
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, _ = redisproc.Command(ctx, srv.Addr(), "DEL", k)
	})
	return k
}

// direct runs one command on srv, bypassing any proxy.
func direct(t *testing.T, args ...string) any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	v, err := redisproc.Command(ctx, srv.Addr(), args...)
	require.NoError(t, err)
	return v
}

// ctxFor returns a context that ends after d or with the test.
func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// eventually retries cmd on c until it succeeds (a connection ended by the
// proxy fails the first command on it) or 3 s have passed.
func eventually(t *testing.T, c rueidis.Client, cmd func() rueidis.Completed) rueidis.RedisResult {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		res := c.Do(ctxFor(t, time.Second), cmd())
		if res.Error() == nil || rueidis.IsRedisNil(res.Error()) || time.Now().After(deadline) {
			return res
		}
	}
}

// rawConn is a plain connection for checking bytes on the wire.
type rawConn struct {
	net.Conn
	fr frameReader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	require.NoError(t, nc.SetDeadline(time.Now().Add(5*time.Second)))
	return &rawConn{Conn: nc, fr: frameReader{r: bufio.NewReader(nc)}}
}

// send writes commands in one write, as a pipeline.
func (rc *rawConn) send(t *testing.T, cmds ...[]string) {
	t.Helper()
	var b []byte
	for _, c := range cmds {
		b = append(b, redisproc.EncodeCommand(c)...)
	}
	_, err := rc.Write(b)
	require.NoError(t, err)
}

// next returns the raw bytes of the next frame.
func (rc *rawConn) next(t *testing.T) string {
	t.Helper()
	f, err := rc.fr.reply()
	require.NoError(t, err)
	return string(f.raw)
}

func cmd(args ...string) []string { return args }

func TestForwardsCommands(t *testing.T) {
	p := start(t)
	c := client(t, p)
	k := key(t, "k")
	ctx := ctxFor(t, 5*time.Second)
	require.NoError(t, c.Do(ctx, c.B().Set().Key(k).Value("v").Build()).Error())
	v, err := c.Do(ctx, c.B().Get().Key(k).Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "v", v)
	st := p.Stats()
	assert.GreaterOrEqual(t, st.Connections, int64(1))
	assert.GreaterOrEqual(t, st.Active, 1)
	assert.GreaterOrEqual(t, st.Commands, int64(2))
	assert.Zero(t, st.RepliesDropped+st.PushesDropped+st.Rejected+st.Resets+st.Refused)
}

func TestStartRejectsBadTarget(t *testing.T) {
	_, err := Start("no-port")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "host:port")
}

func TestRejectKeepsPipelineOrder(t *testing.T) {
	p := start(t)
	c := client(t, p)
	k := key(t, "k")
	require.NoError(t, p.Reject("wait", "ERR unknown command 'WAIT'"))
	ctx := ctxFor(t, 5*time.Second)
	res := c.DoMulti(ctx,
		c.B().Set().Key(k).Value("1").Build(),
		c.B().Wait().Numreplicas(1).Timeout(0).Build(),
		c.B().Incr().Key(k).Build(),
	)
	require.Len(t, res, 3)
	require.NoError(t, res[0].Error())
	var re *rueidis.RedisError
	require.ErrorAs(t, res[1].Error(), &re)
	assert.Contains(t, re.Error(), "unknown command 'WAIT'")
	n, err := res[2].AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(2), n)
	assert.Equal(t, int64(1), p.Stats().Rejected)

	// Nothing pending: the error is written at once.
	err = c.Do(ctx, c.B().Wait().Numreplicas(0).Timeout(0).Build()).Error()
	require.ErrorAs(t, err, &re)

	// The rule goes away.
	require.NoError(t, p.Reject("WAIT", ""))
	require.NoError(t, c.Do(ctx, c.B().Wait().Numreplicas(0).Timeout(0).Build()).Error())

	require.Error(t, p.Reject("", "ERR x"))
	require.Error(t, p.Reject("WAIT", "ERR two\r\nlines"))
}

func TestRejectWithDelayedRepliesAhead(t *testing.T) {
	p := start(t)
	require.NoError(t, p.Reject("ECHO", "ERR no echo"))
	require.NoError(t, p.DelayReplyTo(Command("PING"), 50*time.Millisecond, 0))
	rc := dialRaw(t, p.Addr())
	rc.send(t, cmd("PING"), cmd("ECHO", "a"), cmd("PING", "b"), cmd("ECHO", "c"), cmd("ECHO", "d"), cmd("GET", key(t, "k")))
	assert.Equal(t, "+PONG\r\n", rc.next(t))
	assert.Equal(t, "-ERR no echo\r\n", rc.next(t))
	assert.Equal(t, "$1\r\nb\r\n", rc.next(t))
	assert.Equal(t, "-ERR no echo\r\n", rc.next(t))
	assert.Equal(t, "-ERR no echo\r\n", rc.next(t))
	assert.Equal(t, "$-1\r\n", rc.next(t))
}

// TestSubscriptionsDoNotConsumeReplies checks the matching of replies to
// commands around (un)subscriptions, by where the rejected commands' errors
// land, in RESP2 and RESP3.
func TestSubscriptionsDoNotConsumeReplies(t *testing.T) {
	p := start(t)
	require.NoError(t, p.Reject("ECHO", "ERR no echo"))
	k := key(t, "k")
	ch := "faultproxy:" + t.Name()

	t.Run("RESP2", func(t *testing.T) {
		rc := dialRaw(t, p.Addr())
		rc.send(t, cmd("SUBSCRIBE", ch, ch), cmd("ECHO", "x"), cmd("PING"), cmd("UNSUBSCRIBE"),
			cmd("ECHO", "y"), cmd("GET", k))
		sub := "*3\r\n$9\r\nsubscribe\r\n$" + strconv.Itoa(len(ch)) + "\r\n" + ch + "\r\n:1\r\n"
		assert.Equal(t, sub, rc.next(t))
		assert.Equal(t, sub, rc.next(t))
		assert.Equal(t, "-ERR no echo\r\n", rc.next(t))
		assert.Equal(t, "*2\r\n$4\r\npong\r\n$0\r\n\r\n", rc.next(t))
		assert.Contains(t, rc.next(t), "unsubscribe")
		assert.Equal(t, "-ERR no echo\r\n", rc.next(t))
		assert.Equal(t, "$-1\r\n", rc.next(t))
	})
	t.Run("RESP3", func(t *testing.T) {
		rc := dialRaw(t, p.Addr())
		rc.send(t, cmd("HELLO", "3"), cmd("ECHO", "w"), cmd("UNSUBSCRIBE"), cmd("ECHO", "x"),
			cmd("SUBSCRIBE", ch, ch+"2"), cmd("PSUBSCRIBE", ch+"*"), cmd("ECHO", "y"),
			cmd("UNSUBSCRIBE"), cmd("PUNSUBSCRIBE"), cmd("SUBSCRIBE"), cmd("ECHO", "z"), cmd("GET", k))
		assert.True(t, strings.HasPrefix(rc.next(t), "%"))
		assert.Equal(t, "-ERR no echo\r\n", rc.next(t))
		assert.Equal(t, ">3\r\n$11\r\nunsubscribe\r\n_\r\n:0\r\n", rc.next(t))
		assert.Equal(t, "-ERR no echo\r\n", rc.next(t))
		for _, want := range []string{"subscribe", "subscribe", "psubscribe"} {
			f := rc.next(t)
			assert.True(t, strings.HasPrefix(f, ">3\r\n$"+strconv.Itoa(len(want))+"\r\n"+want+"\r\n"), f)
		}
		assert.Equal(t, "-ERR no echo\r\n", rc.next(t))
		for _, want := range []string{"unsubscribe", "unsubscribe", "punsubscribe"} {
			f := rc.next(t)
			assert.True(t, strings.HasPrefix(f, ">3\r\n$"+strconv.Itoa(len(want))+"\r\n"+want+"\r\n"), f)
		}
		assert.Contains(t, rc.next(t), "wrong number of arguments")
		assert.Equal(t, "-ERR no echo\r\n", rc.next(t))
		assert.Equal(t, "_\r\n", rc.next(t))
	})
}

func TestDropReplyToEvalSHA(t *testing.T) {
	p := start(t)
	c := client(t, p)
	k := key(t, "k")
	script := rueidis.NewLuaScript("return redis.call('INCR', KEYS[1])")
	sha, ok := direct(t, "SCRIPT", "LOAD", "return redis.call('INCR', KEYS[1])").(string)
	require.True(t, ok)
	p.DropReplyTo(EvalSHA(strings.ToUpper(sha)), 1)

	ctx := ctxFor(t, 5*time.Second)
	before := c.Do(ctx, c.B().Get().Key(k).Build())
	assert.True(t, rueidis.IsRedisNil(before.Error()))

	err := script.Exec(ctx, c, []string{k}, nil).Error()
	require.Error(t, err)
	assert.False(t, errors.Is(err, context.DeadlineExceeded), "the client sees a broken connection, not a timeout: %v", err)
	assert.Equal(t, "1", direct(t, "GET", k), "the script ran")

	// A new connection works, and the rule is spent.
	n, err := eventually(t, c, func() rueidis.Completed { return c.B().Get().Key(k).Build() }).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)
	n, err = script.Exec(ctx, c, []string{k}, nil).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(2), n)
	st := p.Stats()
	assert.Equal(t, int64(1), st.RepliesDropped)
	assert.Equal(t, int64(1), st.Resets)
	assert.GreaterOrEqual(t, st.Connections, int64(2))
}

func TestDropReplyToDeliversEarlierReplies(t *testing.T) {
	p := start(t)
	k := key(t, "k")
	p.DropReplyTo(Command("INCR"), -1)
	rc := dialRaw(t, p.Addr())
	rc.send(t, cmd("PING"), cmd("ECHO", "a"), cmd("INCR", k), cmd("ECHO", "b"))
	assert.Equal(t, "+PONG\r\n", rc.next(t))
	assert.Equal(t, "$1\r\na\r\n", rc.next(t))
	_, err := rc.fr.reply()
	require.ErrorIs(t, err, io.EOF)
	assert.Equal(t, "1", direct(t, "GET", k))

	// n < 0: every match.
	rc = dialRaw(t, p.Addr())
	rc.send(t, cmd("INCR", k))
	_, err = rc.fr.reply()
	require.Error(t, err)
	assert.Equal(t, "2", direct(t, "GET", k))

	p.DropReplyTo(nil, 0)
	rc = dialRaw(t, p.Addr())
	rc.send(t, cmd("INCR", k))
	assert.Equal(t, ":3\r\n", rc.next(t))
}

// subscription is a rueidis Receive running in a goroutine.
type subscription struct {
	msgs     chan string   // messages received (the first 16)
	finished chan struct{} // closed when Receive returned
	err      error         // what Receive returned, once finished
	stop     func() error  // cancels Receive and returns its error
}

// receive subscribes c to ch with Receive in a goroutine and waits until
// the server has the subscription. The test's end stops it.
func receive(t *testing.T, c rueidis.Client, ch string) *subscription {
	t.Helper()
	s := &subscription{msgs: make(chan string, 16), finished: make(chan struct{})}
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		defer close(s.finished)
		s.err = c.Receive(ctx, c.B().Subscribe().Channel(ch).Build(), func(m rueidis.PubSubMessage) {
			select {
			case s.msgs <- m.Message:
			default:
			}
		})
	}()
	s.stop = sync.OnceValue(func() error {
		cancel()
		<-s.finished
		return s.err
	})
	t.Cleanup(func() { _ = s.stop() })
	waitFor(t, "the subscription", func() bool {
		v, ok := direct(t, "PUBSUB", "NUMSUB", ch).([]any)
		return ok && len(v) == 2 && v[1] == int64(1)
	})
	return s
}

func TestDropPushes(t *testing.T) {
	p := start(t)
	c := client(t, p)
	ch := "faultproxy:" + t.Name()
	msgs := receive(t, c, ch).msgs

	p.DropPushes(true)
	for i := range 3 {
		assert.Equal(t, int64(1), direct(t, "PUBLISH", ch, "dropped"+strconv.Itoa(i)))
	}
	// A PING on the subscribed connection is answered after the
	// messages, so they have passed the proxy once it returns.
	deadline := time.Now().Add(3 * time.Second)
	for p.Stats().PushesDropped < 3 && time.Now().Before(deadline) {
		require.NoError(t, c.Do(ctxFor(t, time.Second), c.B().Ping().Build()).Error())
	}
	assert.Equal(t, int64(3), p.Stats().PushesDropped)
	select {
	case m := <-msgs:
		t.Fatalf("message %q delivered while pushes are dropped", m)
	default:
	}

	p.DropPushes(false)
	direct(t, "PUBLISH", ch, "delivered")
	select {
	case m := <-msgs:
		assert.Equal(t, "delivered", m)
	case <-time.After(3 * time.Second):
		t.Fatal("no message after DropPushes(false)")
	}
}

func TestDropPushesRESP2(t *testing.T) {
	p := start(t)
	ch := "faultproxy:" + t.Name()
	rc := dialRaw(t, p.Addr())
	rc.send(t, cmd("SUBSCRIBE", ch))
	assert.Contains(t, rc.next(t), "subscribe")
	p.DropPushes(true)
	direct(t, "PUBLISH", ch, "x")
	rc.send(t, cmd("PING"))
	assert.Equal(t, "*2\r\n$4\r\npong\r\n$0\r\n\r\n", rc.next(t))
	p.DropPushes(false)
	direct(t, "PUBLISH", ch, "y")
	assert.Equal(t, "*3\r\n$7\r\nmessage\r\n$"+strconv.Itoa(len(ch))+"\r\n"+ch+"\r\n$1\r\ny\r\n", rc.next(t))
	assert.Equal(t, int64(1), p.Stats().PushesDropped)
}

func TestResetSubscribers(t *testing.T) {
	p := start(t)
	sub := client(t, p)
	plain := client(t, p)
	k := key(t, "k")
	ctx := ctxFor(t, 5*time.Second)
	require.NoError(t, plain.Do(ctx, plain.B().Set().Key(k).Value("v").Build()).Error())
	s := receive(t, sub, "faultproxy:"+t.Name())

	assert.Equal(t, 1, p.ResetSubscribers())
	select {
	case <-s.finished:
		require.Error(t, s.err, "Receive ends with the connection's error")
		assert.NotErrorIs(t, s.err, context.Canceled)
	case <-time.After(3 * time.Second):
		t.Fatal("Receive still running 3s after ResetSubscribers")
	}
	// The other client's connection is intact: no retry needed.
	v, err := plain.Do(ctx, plain.B().Get().Key(k).Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "v", v)
	assert.Equal(t, int64(1), p.Stats().Resets)
	assert.Equal(t, 0, p.ResetSubscribers())
}

func TestReset(t *testing.T) {
	p := start(t)
	rc := dialRaw(t, p.Addr())
	rc.send(t, cmd("PING"))
	assert.Equal(t, "+PONG\r\n", rc.next(t))
	assert.Equal(t, 1, p.Reset())
	_, err := rc.fr.reply()
	require.ErrorIs(t, err, syscall.ECONNRESET)
	assert.Equal(t, 0, p.Reset())

	c := client(t, p)
	res := eventually(t, c, func() rueidis.Completed { return c.B().Ping().Build() })
	require.NoError(t, res.Error())
}

func TestRefuse(t *testing.T) {
	p := start(t)
	p.Refuse(true)
	// The reset may come before or after the dial returns.
	nc, err := net.DialTimeout("tcp", p.Addr(), 2*time.Second)
	if err == nil {
		require.NoError(t, nc.SetDeadline(time.Now().Add(2*time.Second)))
		_, _ = nc.Write(redisproc.EncodeCommand(cmd("PING")))
		_, err = bufio.NewReader(nc).ReadByte()
		nc.Close()
	}
	require.Error(t, err)
	_, err = rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{p.Addr()}, ForceSingleClient: true, DisableRetry: true})
	require.Error(t, err)
	assert.GreaterOrEqual(t, p.Stats().Refused, int64(2))

	p.Refuse(false)
	rc := dialRaw(t, p.Addr())
	rc.send(t, cmd("PING"))
	assert.Equal(t, "+PONG\r\n", rc.next(t))
}

// waitFor polls cond every 5 ms for up to 3 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting after 3s: %s", what)
		}
		tick := time.NewTimer(5 * time.Millisecond)
		<-tick.C
	}
}

func TestHalfOpen(t *testing.T) {
	p := start(t)
	c := client(t, p)
	k := key(t, "k")
	require.NoError(t, c.Do(ctxFor(t, 2*time.Second), c.B().Ping().Build()).Error())
	idle := dialRaw(t, p.Addr())
	idle.send(t, cmd("PING"))
	assert.Equal(t, "+PONG\r\n", idle.next(t))
	lost := dialRaw(t, p.Addr())

	p.HalfOpen(true)
	// rueidis gives up by its context (and then closes the connection).
	err := c.Do(ctxFor(t, 300*time.Millisecond), c.B().Set().Key(k).Value("v").Build()).Error()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, "v", direct(t, "GET", k), "the command reached the server")
	// A connection that lost a reply and stays open.
	dropped := p.Stats().RepliesDropped
	lost.send(t, cmd("INCR", k+"n"))
	waitFor(t, "the INCR's reply to be dropped", func() bool { return p.Stats().RepliesDropped > dropped })
	assert.Equal(t, "1", direct(t, "GET", k+"n"))
	t.Cleanup(func() { direct(t, "DEL", k+"n") })
	resets := p.Stats().Resets

	p.HalfOpen(false)
	_, err = lost.fr.reply()
	require.ErrorIs(t, err, io.EOF, "the connection that lost a reply is ended")
	assert.Equal(t, resets+1, p.Stats().Resets)
	idle.send(t, cmd("PING"))
	assert.Equal(t, "+PONG\r\n", idle.next(t), "an idle connection carries on")
	v, err := eventually(t, c, func() rueidis.Completed { return c.B().Get().Key(k).Build() }).ToString()
	require.NoError(t, err)
	assert.Equal(t, "v", v)
}

func TestBlackhole(t *testing.T) {
	p := start(t)
	c := client(t, p)
	k := key(t, "k")
	require.NoError(t, c.Do(ctxFor(t, 2*time.Second), c.B().Ping().Build()).Error())
	idle := dialRaw(t, p.Addr())
	idle.send(t, cmd("PING"))
	assert.Equal(t, "+PONG\r\n", idle.next(t))
	lost := dialRaw(t, p.Addr())
	lost.send(t, cmd("PING"))
	assert.Equal(t, "+PONG\r\n", lost.next(t))

	p.Blackhole(true)
	seen := p.Stats().Commands
	lost.send(t, cmd("SET", k, "raw"))
	waitFor(t, "the SET to be swallowed", func() bool { return p.Stats().Commands > seen })
	err := c.Do(ctxFor(t, 300*time.Millisecond), c.B().Set().Key(k).Value("v").Build()).Error()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Nil(t, direct(t, "GET", k), "no command reached the server")
	assert.GreaterOrEqual(t, p.Stats().Active, 2, "connections stay open")

	p.Blackhole(false)
	_, err = lost.fr.reply()
	require.ErrorIs(t, err, io.EOF, "the connection that lost a command is ended")
	// The rueidis client's connection lost its SET too: the proxy ends it
	// as well unless the client closed it first, which a loaded machine
	// may delay.
	assert.Contains(t, []int64{1, 2}, p.Stats().Resets)
	idle.send(t, cmd("PING"))
	assert.Equal(t, "+PONG\r\n", idle.next(t), "an idle connection carries on")
	require.NoError(t, eventually(t, c, func() rueidis.Completed { return c.B().Set().Key(k).Value("w").Build() }).Error())
	assert.Equal(t, "w", direct(t, "GET", k))
}

func TestDelay(t *testing.T) {
	p := start(t)
	c := client(t, p)
	k := key(t, "k")
	ctx := ctxFor(t, 10*time.Second)
	ping := func() time.Duration {
		t0 := time.Now()
		require.NoError(t, c.Do(ctx, c.B().Ping().Build()).Error())
		return time.Since(t0)
	}
	base := ping()

	const d = 100 * time.Millisecond
	require.NoError(t, p.Delay(d, 0))
	got := ping()
	assert.GreaterOrEqual(t, got, d)
	assert.Less(t, got, d+time.Second)
	t.Logf("PING: %v without delay, %v with Delay(%v, 0)", base, got, d)

	// A pipeline waits once, not once per reply.
	cmds := make(rueidis.Commands, 20)
	for i := range cmds {
		cmds[i] = c.B().Incr().Key(k).Build()
	}
	t0 := time.Now()
	for i, r := range c.DoMulti(ctx, cmds...) {
		n, err := r.AsInt64()
		require.NoError(t, err)
		assert.Equal(t, int64(i+1), n, "replies in order")
	}
	pipe := time.Since(t0)
	assert.GreaterOrEqual(t, pipe, d)
	assert.Less(t, pipe, d+time.Second)
	t.Logf("20 pipelined INCR with Delay(%v, 0): %v", d, pipe)

	// Jitter keeps order.
	require.NoError(t, p.Delay(30*time.Millisecond, 25*time.Millisecond))
	rc := dialRaw(t, p.Addr())
	var pipeline [][]string
	for i := range 20 {
		pipeline = append(pipeline, cmd("ECHO", strconv.Itoa(i)))
	}
	rc.send(t, pipeline...)
	for i := range 20 {
		s := strconv.Itoa(i)
		assert.Equal(t, "$"+strconv.Itoa(len(s))+"\r\n"+s+"\r\n", rc.next(t))
	}

	require.NoError(t, p.Delay(0, 0))
	require.Error(t, p.Delay(-time.Millisecond, 0))
	require.Error(t, p.Delay(0, -time.Millisecond))
}

func TestDelayReplyTo(t *testing.T) {
	p := start(t)
	c := client(t, p)
	k := key(t, "k")
	ctx := ctxFor(t, 10*time.Second)
	const d = 250 * time.Millisecond
	require.NoError(t, p.DelayReplyTo(Command("get"), d, 0))
	t0 := time.Now()
	require.NoError(t, c.Do(ctx, c.B().Ping().Build()).Error())
	fast := time.Since(t0)
	t0 = time.Now()
	require.True(t, rueidis.IsRedisNil(c.Do(ctx, c.B().Get().Key(k).Build()).Error()))
	slow := time.Since(t0)
	assert.Less(t, fast, d)
	assert.GreaterOrEqual(t, slow, d)
	assert.Less(t, slow, d+time.Second)
	t.Logf("PING %v, GET %v with DelayReplyTo(GET, %v, 0)", fast, slow, d)

	require.NoError(t, p.DelayReplyTo(nil, 0, 0))
	t0 = time.Now()
	require.True(t, rueidis.IsRedisNil(c.Do(ctx, c.B().Get().Key(k).Build()).Error()))
	assert.Less(t, time.Since(t0), d)
	require.Error(t, p.DelayReplyTo(Command("GET"), -d, 0))
}

func TestCloseIsIdempotentAndEndsConnections(t *testing.T) {
	before := goleak.IgnoreCurrent()
	p, err := Start(srv.Addr())
	require.NoError(t, err)
	rc := dialRaw(t, p.Addr())
	rc.send(t, cmd("PING"))
	assert.Equal(t, "+PONG\r\n", rc.next(t))
	p.Blackhole(true)
	rc.send(t, cmd("PING"))
	require.NoError(t, p.Close())
	// Close has joined every goroutine of the proxy (goleak allows them
	// the instant between their deferred Done and their exit).
	goleak.VerifyNone(t, before)
	require.NoError(t, p.Close())
	_, err = rc.fr.reply()
	require.Error(t, err)
	_, err = net.DialTimeout("tcp", p.Addr(), time.Second)
	require.Error(t, err)
	assert.Equal(t, 0, p.Stats().Active)
}

func TestTargetDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	p, err := Start(addr)
	require.NoError(t, err)
	defer p.Close()
	rc := dialRaw(t, p.Addr())
	_, err = rc.fr.reply()
	require.Error(t, err, "the client connection ends when the target cannot be dialed")
}

func TestEvalSHA(t *testing.T) {
	const src = "return 1"
	sha := "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"
	m := EvalSHA(strings.ToUpper(sha))
	assert.True(t, m(cmd("evalsha", sha, "0")))
	assert.True(t, m(cmd("EVALSHA_RO", strings.ToUpper(sha), "0")))
	assert.True(t, m(cmd("EVAL", src, "0")))
	assert.False(t, m(cmd("EVAL", "return 2", "0")))
	assert.False(t, m(cmd("EVALSHA")))
	assert.False(t, m(cmd("GET", sha)))
	assert.Equal(t, sha, direct(t, "SCRIPT", "LOAD", src))
}
