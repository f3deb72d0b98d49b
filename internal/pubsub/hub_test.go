package pubsub

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/route"
)

// Tolerances: they must hold on a loaded 2-core machine running -race.
const (
	prompt  = 5 * time.Second        // "happens promptly"
	quiet   = 300 * time.Millisecond // "does not happen" observation window
	longTTL = 30 * time.Second       // a Wait timer that must not be what wakes the waiter
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newHub(t *testing.T, rc rueidis.Client, opts ...Option) *Hub {
	t.Helper()
	h, err := NewHub(rc, opts...)
	require.NoError(t, err)
	t.Cleanup(h.Close)
	return h
}

func chanName(t *testing.T, i int) string {
	return fmt.Sprintf("pubsubtest:%s:%d", t.Name(), i)
}

func publish(t *testing.T, rc rueidis.Client, channel, msg string) int64 {
	t.Helper()
	n, err := rc.Do(context.Background(), rc.B().Publish().Channel(channel).Message(msg).Build()).AsInt64()
	require.NoError(t, err)
	return n
}

func spublish(t *testing.T, rc rueidis.Client, channel, msg string) int64 {
	t.Helper()
	n, err := rc.Do(context.Background(), rc.B().Spublish().Channel(channel).Message(msg).Build()).AsInt64()
	require.NoError(t, err)
	return n
}

// requireSharded skips t on a server without sharded pub/sub (Redis 6.x).
func requireSharded(t *testing.T, rc rueidis.Client) {
	t.Helper()
	f := redistest.FeaturesOf(t, rc)
	redistest.RequireFeature(t, f, f.ShardedPubSub(), "sharded pub/sub")
}

// modes returns the pub/sub modes the server has: classic (false), and
// sharded (true) from Redis 7.0 on.
func modes(t *testing.T, rc rueidis.Client) []bool {
	t.Helper()
	if redistest.FeaturesOf(t, rc).ShardedPubSub() {
		return []bool{false, true}
	}
	return []bool{false}
}

// eventually polls cond every few milliseconds for up to prompt.
func eventually(t *testing.T, cond func() bool, format string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(prompt)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: "+format, args...)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func entryOf(h *Hub, channel string, sharded bool) *entry {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.entries[chanKey{name: channel, sharded: sharded}]
}

func waitParked(t *testing.T, h *Hub, channel string, sharded bool, n int) {
	t.Helper()
	eventually(t, func() bool {
		e := entryOf(h, channel, sharded)
		return e != nil && e.parked() == n
	}, "%d waiters parked on %s", n, channel)
}

// waitAsync runs Wait in a goroutine and delivers its result. Like a lock
// waiter, it then passes on its turn in a wake-all.
func waitAsync(ctx context.Context, s *Subscription, d time.Duration) <-chan error {
	ch := make(chan error, 1)
	go func() {
		err := s.Wait(ctx, d)
		s.Pass()
		ch <- err
	}()
	return ch
}

func recv(t *testing.T, ch <-chan error, within time.Duration) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(within):
		t.Fatalf("Wait did not return within %v", within)
		return nil
	}
}

func numsub(t *testing.T, rc rueidis.Client, channels ...string) map[string]int64 {
	t.Helper()
	m, err := rc.Do(context.Background(), rc.B().PubsubNumsub().Channel(channels...).Build()).AsIntMap()
	require.NoError(t, err)
	return m
}

func pubsubChannels(t *testing.T, rc rueidis.Client, cmd, pattern string) []string {
	t.Helper()
	list, err := do(t, rc, "PUBSUB", cmd, pattern).AsStrSlice()
	require.NoError(t, err)
	return list
}

func pubsubClients(t *testing.T, rc rueidis.Client) []string {
	t.Helper()
	out, err := do(t, rc, "CLIENT", "LIST", "TYPE", "pubsub").ToString()
	require.NoError(t, err)
	out = strings.TrimPrefix(out, "txt:") // RESP3 verbatim string
	var lines []string
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		if line != "" {
			lines = append(lines, line)
		}
	}
	return lines
}

func TestNewHubValidates(t *testing.T) {
	_, err := NewHub(nil)
	assert.Error(t, err)
	rc := sharedServer.Client(t)
	_, err = NewHub(rc, nil)
	assert.Error(t, err)
	_, err = NewHub(rc, WithErrorHandler(nil))
	assert.Error(t, err)
	_, err = NewHub(rc, WithReconnectBackoff(nil))
	assert.Error(t, err)
	h := newHub(t, rc)
	_, err = h.Subscribe(context.Background(), "", false)
	assert.Error(t, err)
}

func TestSubscribeReturnsAfterConfirmation(t *testing.T) {
	rc := sharedServer.Client(t)
	h := newHub(t, rc)
	ctx := testCtx(t)

	for i := range 30 {
		name := chanName(t, i)
		sub, err := h.Subscribe(ctx, name, false)
		require.NoError(t, err)
		// Published right after Subscribe returned: always received.
		require.EqualValues(t, 1, publish(t, rc, name, "0"), "subscribers of %s", name)
		start := time.Now()
		require.NoError(t, sub.Wait(ctx, longTTL))
		require.Less(t, time.Since(start), prompt)
		sub.Close()
	}

	// Concurrent first subscribers all wait for the same confirmation.
	name := chanName(t, 1000)
	var wg sync.WaitGroup
	subs := make([]*Subscription, 20)
	errs := make([]error, 20)
	for i := range subs {
		wg.Go(func() {
			subs[i], errs[i] = h.Subscribe(ctx, name, false)
			if errs[i] == nil {
				// Each one may publish at once and be heard.
				if n := publish(t, rc, name, "1"); n != 1 {
					errs[i] = fmt.Errorf("PUBLISH reached %d subscribers", n)
				}
			}
		})
	}
	wg.Wait()
	for i := range subs {
		require.NoError(t, errs[i])
		subs[i].Close()
	}
	assert.Equal(t, 0, h.Channels())
}

func TestRefcountSharesOneServerSubscription(t *testing.T) {
	rc := sharedServer.Client(t)
	h := newHub(t, rc)
	ctx := testCtx(t)
	eventually(t, func() bool { return len(pubsubClients(t, rc)) == 0 }, "earlier tests' subscription connections to go: %v", pubsubClients(t, rc))

	const nChannels, nSubs = 20, 200
	names := make([]string, nChannels)
	for i := range names {
		names[i] = chanName(t, i)
	}
	subs := make([]*Subscription, nSubs)
	errs := make([]error, nSubs)
	var wg sync.WaitGroup
	for i := range subs {
		wg.Go(func() { subs[i], errs[i] = h.Subscribe(ctx, names[i%nChannels], false) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, nChannels, h.Channels())
	for name, n := range numsub(t, rc, names...) {
		assert.EqualValues(t, 1, n, "PUBSUB NUMSUB %s", name)
	}
	assert.Len(t, pubsubClients(t, rc), 1, "one subscription connection for the hub")

	for i, s := range subs {
		s.Close()
		if i == nSubs-1 {
			break
		}
		s.Close() // idempotent
	}
	assert.Equal(t, 0, h.Channels(), "entries drop synchronously")
	eventually(t, func() bool {
		return len(pubsubChannels(t, rc, "CHANNELS", "pubsubtest:"+t.Name()+":*")) == 0
	}, "PUBSUB CHANNELS to become empty")
}

func TestUnlockMessageWakesExactlyOne(t *testing.T) {
	rc := sharedServer.Client(t)
	h := newHub(t, rc)
	ctx := testCtx(t)
	name := chanName(t, 0)

	const n = 5
	results := make([]<-chan error, n)
	for i := range n {
		sub, err := h.Subscribe(ctx, name, false)
		require.NoError(t, err)
		defer sub.Close()
		results[i] = waitAsync(ctx, sub, -1)
	}
	waitParked(t, h, name, false, n)

	for woken := 1; woken <= n; woken++ {
		require.EqualValues(t, 1, publish(t, rc, name, "0"))
		eventually(t, func() bool { return entryOf(h, name, false).parked() == n-woken }, "one waiter to leave")
		time.Sleep(quiet / 3) // a second wake-up would show up here
		require.Equal(t, n-woken, entryOf(h, name, false).parked(), "exactly one waiter woken per message")
	}
	for _, r := range results {
		require.NoError(t, recv(t, r, prompt))
	}
	assert.Equal(t, 0, entryOf(h, name, false).storedPermits())
}

func TestUnlockMessageIsStoredAsPermit(t *testing.T) {
	rc := sharedServer.Client(t)
	h := newHub(t, rc)
	ctx := testCtx(t)
	name := chanName(t, 0)

	a, err := h.Subscribe(ctx, name, false)
	require.NoError(t, err)
	b, err := h.Subscribe(ctx, name, false)
	require.NoError(t, err)
	e := entryOf(h, name, false)

	publish(t, rc, name, "0")
	eventually(t, func() bool { return e.storedPermits() == 1 }, "a permit")
	for range 3 {
		publish(t, rc, name, "0")
	}
	eventually(t, func() bool { return e.storedPermits() == 2 }, "two permits")
	time.Sleep(quiet / 3)
	assert.Equal(t, 2, e.storedPermits(), "permits are capped at one per Subscription")

	start := time.Now()
	require.NoError(t, a.Wait(ctx, -1), "a stored permit is consumed at once")
	require.NoError(t, a.Wait(ctx, -1))
	assert.Less(t, time.Since(start), prompt)
	assert.Equal(t, 0, e.storedPermits())

	// Permits die with the entry.
	publish(t, rc, name, "0")
	eventually(t, func() bool { return e.storedPermits() == 1 }, "a permit")
	a.Close()
	b.Close()
	c, err := h.Subscribe(ctx, name, false)
	require.NoError(t, err)
	defer c.Close()
	start = time.Now()
	require.NoError(t, c.Wait(ctx, 100*time.Millisecond))
	assert.GreaterOrEqual(t, time.Since(start), 90*time.Millisecond, "no permit survived the entry")
	assert.NoError(t, c.Wait(ctx, 0), "d == 0 returns at once")
}

func TestOtherPayloadWakesEveryParkedWaiter(t *testing.T) {
	rc := sharedServer.Client(t)
	h := newHub(t, rc)
	ctx := testCtx(t)
	name := chanName(t, 0)

	const n = 6
	subs := make([]*Subscription, n)
	results := make([]<-chan error, n)
	for i := range n {
		sub, err := h.Subscribe(ctx, name, false)
		require.NoError(t, err)
		defer sub.Close()
		subs[i] = sub
		results[i] = waitAsync(ctx, sub, longTTL)
	}
	waitParked(t, h, name, false, n)
	require.EqualValues(t, 1, publish(t, rc, name, "1"))
	for _, r := range results {
		require.NoError(t, recv(t, r, prompt))
	}
	assert.Equal(t, 0, entryOf(h, name, false).storedPermits(), "a wake-all stores nothing")
	start := time.Now()
	require.NoError(t, subs[0].Wait(ctx, 100*time.Millisecond))
	assert.GreaterOrEqual(t, time.Since(start), 90*time.Millisecond)
}

func TestWaitTimerAndContext(t *testing.T) {
	rc := sharedServer.Client(t)
	h := newHub(t, rc)
	ctx := testCtx(t)
	sub, err := h.Subscribe(ctx, chanName(t, 0), false)
	require.NoError(t, err)
	defer sub.Close()

	for range 3 { // the timer is reused
		start := time.Now()
		require.NoError(t, sub.Wait(ctx, 50*time.Millisecond))
		elapsed := time.Since(start)
		assert.GreaterOrEqual(t, elapsed, 45*time.Millisecond)
		assert.Less(t, elapsed, prompt)
	}

	done, cancel := context.WithCancel(ctx)
	cancel()
	assert.ErrorIs(t, sub.Wait(done, -1), context.Canceled)

	short, cancel2 := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel2()
	assert.ErrorIs(t, sub.Wait(short, -1), context.DeadlineExceeded)
	assert.Equal(t, 0, entryOf(h, sub.Channel(), false).parked())

	// Close while parked.
	r := waitAsync(ctx, sub, -1)
	waitParked(t, h, sub.Channel(), false, 1)
	sub.Close()
	assert.ErrorIs(t, recv(t, r, prompt), ErrSubscriptionClosed)
	assert.ErrorIs(t, sub.Wait(ctx, -1), ErrSubscriptionClosed)
}

func TestCancelledWaiterPassesWakeUpOn(t *testing.T) {
	rc := sharedServer.Client(t)
	h := newHub(t, rc)
	ctx := testCtx(t)
	name := chanName(t, 0)

	a, err := h.Subscribe(ctx, name, false)
	require.NoError(t, err)
	defer a.Close()
	b, err := h.Subscribe(ctx, name, false)
	require.NoError(t, err)
	defer b.Close()
	e := entryOf(h, name, false)

	t.Run("to another parked waiter", func(t *testing.T) {
		actx, cancelA := context.WithCancel(ctx)
		defer cancelA()
		ra := waitAsync(actx, a, -1)
		waitParked(t, h, name, false, 1) // a is first in line
		rb := waitAsync(ctx, b, -1)
		waitParked(t, h, name, false, 2)

		// Hand the single wake-up to a while its ctx ends: a must leave
		// with the context error and b must get the wake-up.
		e.mu.Lock()
		cancelA()
		e.releaseOneLocked()
		e.mu.Unlock()

		assert.ErrorIs(t, recv(t, ra, prompt), context.Canceled)
		assert.NoError(t, recv(t, rb, prompt))
		assert.Equal(t, 0, e.storedPermits())
	})

	t.Run("back as a permit", func(t *testing.T) {
		actx, cancelA := context.WithCancel(ctx)
		defer cancelA()
		ra := waitAsync(actx, a, -1)
		waitParked(t, h, name, false, 1)
		e.mu.Lock()
		cancelA()
		e.releaseOneLocked()
		e.mu.Unlock()
		assert.ErrorIs(t, recv(t, ra, prompt), context.Canceled)
		assert.Equal(t, 1, e.storedPermits())
		start := time.Now()
		assert.NoError(t, b.Wait(ctx, longTTL))
		assert.Less(t, time.Since(start), prompt)
	})

	t.Run("cancelled waiter leaves the line", func(t *testing.T) {
		actx, cancelA := context.WithCancel(ctx)
		ra := waitAsync(actx, a, -1)
		waitParked(t, h, name, false, 1)
		rb := waitAsync(ctx, b, -1)
		waitParked(t, h, name, false, 2)
		cancelA()
		assert.ErrorIs(t, recv(t, ra, prompt), context.Canceled)
		waitParked(t, h, name, false, 1)
		publish(t, rc, name, "0")
		assert.NoError(t, recv(t, rb, prompt))
	})
}

// gate lets a test hold the connection goroutine just before it sends a
// round of commands.
type gate struct {
	mu      sync.Mutex
	armed   bool
	entered chan struct{}
	release chan struct{}
}

func newGate() *gate { return &gate{entered: make(chan struct{}, 16)} }

func (g *gate) arm() {
	g.mu.Lock()
	g.armed = true
	g.release = make(chan struct{})
	g.mu.Unlock()
}

func (g *gate) open() {
	g.mu.Lock()
	g.armed = false
	close(g.release)
	g.mu.Unlock()
}

func (g *gate) hook() {
	g.mu.Lock()
	armed, release := g.armed, g.release
	g.mu.Unlock()
	if !armed {
		return
	}
	g.entered <- struct{}{}
	<-release
}

func TestSubscribeCancelledBeforeConfirmation(t *testing.T) {
	rc := sharedServer.Client(t)
	h, err := NewHub(rc)
	require.NoError(t, err)
	defer h.Close()
	g := newGate()
	h.testHookBeforeSend = g.hook
	ctx := testCtx(t)
	name := chanName(t, 0)

	g.arm()
	sctx, cancel := context.WithCancel(ctx)
	res := make(chan error, 1)
	go func() {
		sub, err := h.Subscribe(sctx, name, false)
		if err == nil {
			sub.Close()
		}
		res <- err
	}()
	<-g.entered // the SUBSCRIBE is about to be sent
	cancel()
	assert.ErrorIs(t, <-res, context.Canceled)
	assert.Equal(t, 0, h.Channels())
	g.open() // the late confirmation must be undone

	eventually(t, func() bool {
		return numsub(t, rc, name)[name] == 0 && len(pubsubChannels(t, rc, "CHANNELS", name)) == 0
	}, "the late subscription to be undone")

	// Many short deadlines racing the confirmation leave nothing behind.
	for i := range 100 {
		c, cancel := context.WithTimeout(ctx, time.Duration(i%10)*50*time.Microsecond)
		sub, err := h.Subscribe(c, chanName(t, 1+i%7), false)
		cancel()
		if err == nil {
			sub.Close()
		} else {
			require.ErrorIs(t, err, context.DeadlineExceeded)
		}
	}
	assert.Equal(t, 0, h.Channels())
	eventually(t, func() bool {
		return len(pubsubChannels(t, rc, "CHANNELS", "pubsubtest:"+t.Name()+":*")) == 0
	}, "PUBSUB CHANNELS to become empty")
}

func TestResubscribeRacesPendingUnsubscribe(t *testing.T) {
	rc := sharedServer.Client(t)
	h, err := NewHub(rc)
	require.NoError(t, err)
	defer h.Close()
	g := newGate()
	h.testHookBeforeSend = g.hook
	ctx := testCtx(t)
	name := chanName(t, 0)

	first, err := h.Subscribe(ctx, name, false)
	require.NoError(t, err)
	g.arm()
	first.Close()
	<-g.entered // the UNSUBSCRIBE is about to be sent
	res := make(chan *Subscription, 1)
	go func() {
		sub, err := h.Subscribe(ctx, name, false)
		assert.NoError(t, err)
		res <- sub
	}()
	eventually(t, func() bool { return h.Channels() == 1 }, "the new entry")
	g.open()
	second := <-res
	require.NotNil(t, second)
	defer second.Close()
	require.EqualValues(t, 1, publish(t, rc, name, "0"), "the subscription works after the race")
	require.NoError(t, second.Wait(ctx, longTTL))

	// And without a gate, as fast as it goes.
	for i := range 100 {
		s1, err := h.Subscribe(ctx, name+"x", false)
		require.NoError(t, err)
		s1.Close()
		s2, err := h.Subscribe(ctx, name+"x", false)
		require.NoError(t, err)
		require.EqualValues(t, 1, publish(t, rc, name+"x", "1"), "iteration %d", i)
		s2.Close()
	}
}

func TestReconnectWakesWaitersAndResubscribes(t *testing.T) {
	rc := sharedServer.Client(t)
	var reported atomic.Int32
	h := newHub(t, rc, WithErrorHandler(func(error) { reported.Add(1) }))
	ctx := testCtx(t)

	for _, kill := range []string{"TYPE", "ID"} {
		t.Run("CLIENT KILL "+kill, func(t *testing.T) {
			const nChannels, perChannel = 4, 3
			var results []<-chan error
			subs := map[string][]*Subscription{}
			for i := range nChannels {
				name := chanName(t, i)
				for range perChannel {
					sub, err := h.Subscribe(ctx, name, false)
					require.NoError(t, err)
					defer sub.Close()
					subs[name] = append(subs[name], sub)
					results = append(results, waitAsync(ctx, sub, longTTL))
				}
				waitParked(t, h, name, false, perChannel)
			}
			before := reported.Load()

			if kill == "TYPE" {
				n, err := do(t, rc, "CLIENT", "KILL", "TYPE", "pubsub").AsInt64()
				require.NoError(t, err)
				require.GreaterOrEqual(t, n, int64(1))
			} else {
				clients := pubsubClients(t, rc)
				require.Len(t, clients, 1)
				id := strings.TrimPrefix(strings.Fields(clients[0])[0], "id=")
				require.NoError(t, do(t, rc, "CLIENT", "KILL", "ID", id).Error())
			}

			// Every waiter is woken long before its timer.
			for _, r := range results {
				require.NoError(t, recv(t, r, prompt))
			}
			assert.Greater(t, reported.Load(), before, "the loss is reported")
			// The channels are subscribed again: a message is received.
			for name, list := range subs {
				assert.EqualValues(t, 1, publish(t, rc, name, "0"))
				assert.NoError(t, list[0].Wait(ctx, longTTL))
			}
			assert.Len(t, pubsubClients(t, rc), 1)
		})
	}
}

func TestServerDownAndBack(t *testing.T) {
	// The test kills and restarts its server, so it must own one.
	redistest.RequireProcess(t)
	srv := redistest.Standalone(t)
	rc := srv.Client(t)
	var reported atomic.Int32
	h := newHub(t, rc,
		WithErrorHandler(func(error) { reported.Add(1) }),
		WithReconnectBackoff(func(int) time.Duration { return 20 * time.Millisecond }))
	ctx := testCtx(t)
	name := chanName(t, 0)

	sub, err := h.Subscribe(ctx, name, false)
	require.NoError(t, err)
	defer sub.Close()
	r := waitAsync(ctx, sub, longTTL)
	waitParked(t, h, name, false, 1)

	require.NoError(t, srv.Kill())
	eventually(t, func() bool { return reported.Load() > 0 }, "the loss to be reported")

	// A new channel cannot be subscribed while the server is down.
	sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	_, err = h.Subscribe(sctx, chanName(t, 1), false)
	cancel()
	require.Error(t, err)
	assert.NotErrorIs(t, err, context.DeadlineExceeded, "the connection error is returned: %v", err)
	eventually(t, func() bool { return h.Channels() == 1 }, "the failed entry to go")

	require.NoError(t, srv.Restart(ctx))
	require.NoError(t, recv(t, r, prompt), "the waiter is woken after the resubscription")
	var n int64
	eventually(t, func() bool { // rc's own connection may report the old break once
		var err error
		n, err = rc.Do(ctx, rc.B().Publish().Channel(name).Message("0").Build()).AsInt64()
		return err == nil
	}, "PUBLISH to succeed")
	require.EqualValues(t, 1, n)
	require.NoError(t, sub.Wait(ctx, longTTL))
}

func TestRefusedSubscriptionFailsEverySubscriber(t *testing.T) {
	admin := sharedServer.Client(t)
	f := redistest.FeaturesOf(t, admin)
	redistest.RequireFeature(t, f, f.ChannelACL(), "ACL channel rules (resetchannels)")
	user := "pubsubtest-nochannels"
	require.NoError(t, do(t, admin, "ACL", "SETUSER", user, "reset", "on", ">secret", "~*", "+@all", "resetchannels").Error())
	t.Cleanup(func() { do(t, admin, "ACL", "DELUSER", user) })

	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{sharedServer.Addr()}, Username: user, Password: "secret"})
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	var reported atomic.Int32
	h := newHub(t, rc, WithErrorHandler(func(error) { reported.Add(1) }))
	ctx := testCtx(t)

	errs := make([]error, 20)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() {
			sub, err := h.Subscribe(ctx, chanName(t, 0), false)
			if err == nil {
				sub.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.Error(t, err)
		var rerr *rueidis.RedisError
		require.ErrorAs(t, err, &rerr)
		assert.Contains(t, rerr.Error(), "NOPERM")
	}
	assert.Equal(t, 0, h.Channels())
	assert.Positive(t, reported.Load())
}

func TestMalformedPayloadsNeverPanic(t *testing.T) {
	rc := sharedServer.Client(t)
	h := newHub(t, rc)
	ctx := testCtx(t)

	for _, sharded := range modes(t, rc) {
		name := chanName(t, 0)
		sub, err := h.Subscribe(ctx, name, sharded)
		require.NoError(t, err)
		payloads := []string{"", "00", "-1", "0 ", " 0", "\x00\xff\xfe", "１", "9223372036854775808", strings.Repeat("x", 1<<20)}
		for _, p := range payloads {
			r := waitAsync(ctx, sub, longTTL)
			waitParked(t, h, name, sharded, 1)
			if sharded {
				require.EqualValues(t, 1, spublish(t, rc, name, p))
			} else {
				require.EqualValues(t, 1, publish(t, rc, name, p))
			}
			require.NoError(t, recv(t, r, prompt), "payload of %d bytes wakes", len(p))
		}
		sub.Close()
	}
}

func TestCloseJoinsEverything(t *testing.T) {
	rc := sharedServer.Client(t)
	require.NoError(t, do(t, rc, "PING").Error())
	sharded := redistest.FeaturesOf(t, rc).ShardedPubSub()
	ignore := goleak.IgnoreCurrent()

	h, err := NewHub(rc)
	require.NoError(t, err)
	ctx := testCtx(t)
	var results []<-chan error
	var subs []*Subscription
	for i := range 10 {
		sub, err := h.Subscribe(ctx, chanName(t, i%3), sharded && i%2 == 0)
		require.NoError(t, err)
		subs = append(subs, sub)
		results = append(results, waitAsync(ctx, sub, -1))
	}
	eventually(t, func() bool {
		n := 0
		for i := range 3 {
			for _, sharded := range []bool{false, true} {
				if e := entryOf(h, chanName(t, i), sharded); e != nil {
					n += e.parked()
				}
			}
		}
		return n == 10
	}, "all parked")

	h.Close()
	for _, r := range results {
		assert.ErrorIs(t, recv(t, r, prompt), ErrClosed)
	}
	_, err = h.Subscribe(ctx, "x", false)
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, subs[0].Wait(ctx, -1), ErrClosed)
	for _, s := range subs {
		s.Close()
	}
	h.Close() // idempotent
	assert.Equal(t, 0, h.Channels())
	goleak.VerifyNone(t, ignore)
	eventually(t, func() bool {
		return len(pubsubChannels(t, rc, "CHANNELS", "pubsubtest:"+t.Name()+":*")) == 0 &&
			(!sharded || len(pubsubChannels(t, rc, "SHARDCHANNELS", "pubsubtest:"+t.Name()+":*")) == 0)
	}, "the server to drop the subscriptions")
}

func TestShardedOnCluster(t *testing.T) {
	nodes := sharedCluster.Nodes()
	rc := sharedCluster.Client(t)
	requireSharded(t, rc)
	require.Equal(t, rueidis.ClientModeCluster, rc.Mode())
	h := newHub(t, rc)
	ctx := testCtx(t)

	const n = 24
	names := make([]string, n)
	var sharded, classic []*Subscription
	for i := range n {
		names[i] = fmt.Sprintf("pubsubtest:%s:{k%d}", t.Name(), i)
		s, err := h.Subscribe(ctx, names[i], true)
		require.NoError(t, err)
		sharded = append(sharded, s)
		c, err := h.Subscribe(ctx, names[i], false)
		require.NoError(t, err)
		classic = append(classic, c)
	}
	assert.Equal(t, 2*n, h.Channels())

	// Our slot hashing agrees with the server.
	node0 := nodes[0].Client(t)
	for _, name := range names {
		slot, err := node0.Do(ctx, node0.B().ClusterKeyslot().Key(name).Build()).AsInt64()
		require.NoError(t, err)
		require.EqualValues(t, slot, keys.Slot(name), name)
	}

	// SPUBLISH reaches the SSUBSCRIBE subscription on the owning node...
	for i, name := range names {
		require.EqualValues(t, 1, spublish(t, rc, name, "0"), "SPUBLISH %s", name)
		e := entryOf(h, name, true)
		eventually(t, func() bool { return e.storedPermits() == 1 }, "sharded permit on %s", name)
		require.NoError(t, sharded[i].Wait(ctx, 0))
	}
	// ...and a classic SUBSCRIBE does not see it.
	time.Sleep(quiet)
	for _, name := range names {
		assert.Equal(t, 0, entryOf(h, name, false).storedPermits(), "classic entry of %s", name)
	}
	// PUBLISH reaches the classic one. (Its reply counts only the receivers
	// on the node that took it, which need not be the node we subscribed on.)
	for _, name := range names {
		publish(t, rc, name, "0")
		e := entryOf(h, name, false)
		eventually(t, func() bool { return e.storedPermits() == 1 }, "classic permit on %s", name)
	}

	// One sharded connection per master, plus one classic connection.
	h.mu.Lock()
	var shardedConns, classicConns int
	for k := range h.conns {
		if k.sharded {
			shardedConns++
		} else {
			classicConns++
		}
	}
	h.mu.Unlock()
	assert.Equal(t, 3, shardedConns)
	assert.Equal(t, 1, classicConns)
	// On the servers: four subscription connections in all, at most two per
	// node (connections of earlier tests' hubs may take a moment to go).
	eventually(t, func() bool {
		total, most := 0, 0
		for _, node := range nodes {
			n := len(pubsubClients(t, node.Client(t)))
			total += n
			most = max(most, n)
		}
		return total == 4 && most <= 2
	}, "one sharded connection per node and one classic connection")

	// Reconnect of one node's connection: its waiters are woken, and the
	// channel works again.
	victim := names[0]
	owner, _, ok := h.routes.Master(keys.Slot(victim))
	require.True(t, ok)
	ownerNode := sharedCluster.NodeForKey(victim)
	require.Equal(t, ownerNode.Addr(), owner, "the hub routes %s to its master", victim)
	r := waitAsync(ctx, sharded[0], longTTL)
	waitParked(t, h, victim, true, 1)
	oc := ownerNode.Client(t)
	require.NoError(t, do(t, oc, "CLIENT", "KILL", "TYPE", "pubsub").Error())
	require.NoError(t, recv(t, r, prompt))
	require.EqualValues(t, 1, spublish(t, rc, victim, "0"))
	require.NoError(t, sharded[0].Wait(ctx, longTTL))

	for i := range sharded {
		sharded[i].Close()
		classic[i].Close()
	}
	assert.Equal(t, 0, h.Channels())
	for _, node := range nodes {
		nc := node.Client(t)
		eventually(t, func() bool {
			return len(pubsubChannels(t, nc, "SHARDCHANNELS", "pubsubtest:*")) == 0 &&
				len(pubsubChannels(t, nc, "CHANNELS", "pubsubtest:*")) == 0
		}, "node %s to drop the subscriptions", node.Addr())
	}
}

func TestShardedMovedReroutes(t *testing.T) {
	nodes := sharedCluster.Nodes()
	rc := sharedCluster.Client(t)
	requireSharded(t, rc)
	h := newHub(t, rc, WithErrorHandler(func(err error) { t.Errorf("hub error: %v", err) }))
	ctx := testCtx(t)

	// Pretend node 0 owns every slot: most channels get MOVED.
	h.routes.Store([]route.Range{{First: 0, Last: route.Slots - 1, Addr: nodes[0].Addr()}})
	var subs []*Subscription
	for i := range 12 {
		name := fmt.Sprintf("pubsubtest:%s:{m%d}", t.Name(), i)
		s, err := h.Subscribe(ctx, name, true)
		require.NoError(t, err)
		subs = append(subs, s)
		require.EqualValues(t, 1, spublish(t, rc, name, "0"), "SPUBLISH %s after MOVED", name)
		require.NoError(t, s.Wait(ctx, longTTL))
	}
	assert.Greater(t, len(h.routes.Masters()), 1, "MOVED replies were followed")
	for _, s := range subs {
		s.Close()
	}
	for _, node := range nodes {
		nc := node.Client(t)
		eventually(t, func() bool {
			return len(pubsubChannels(t, nc, "SHARDCHANNELS", "pubsubtest:*")) == 0
		}, "node %s to drop the subscriptions", node.Addr())
	}
}

func TestSubscribeHonorsContextErrors(t *testing.T) {
	rc := sharedServer.Client(t)
	h := newHub(t, rc)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := h.Subscribe(ctx, "x", false)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 0, h.Channels())
	assert.False(t, errors.Is(err, ErrClosed))
}

// TestShardedSlotMigration moves the slot of a subscribed sharded channel to
// another master: Redis drops the subscription with a sunsubscribe of its
// own, and the hub must follow the slot and wake the waiters.
func TestShardedSlotMigration(t *testing.T) {
	nodes := sharedCluster.Nodes()
	rc := sharedCluster.Client(t)
	requireSharded(t, rc)
	h := newHub(t, rc, WithErrorHandler(func(err error) { t.Logf("hub error: %v", err) }))
	ctx := testCtx(t)

	name := fmt.Sprintf("pubsubtest:%s:{migrate}", t.Name())
	slot := strconv.Itoa(int(keys.Slot(name)))
	sub, err := h.Subscribe(ctx, name, true)
	require.NoError(t, err)
	defer sub.Close()

	src, _, ok := h.routes.Master(keys.Slot(name))
	require.True(t, ok)
	srcNode := sharedCluster.NodeForKey(name)
	require.Equal(t, srcNode.Addr(), src, "the hub routes %s to its master", name)
	var dstNode *redistest.Server
	for _, n := range nodes {
		if n != srcNode {
			dstNode = n
			break
		}
	}
	dst := dstNode.Addr()
	srcc, dstc := srcNode.Client(t), dstNode.Client(t)
	id := func(c rueidis.Client) string {
		s, err := do(t, c, "CLUSTER", "MYID").ToString()
		require.NoError(t, err)
		return s
	}
	srcID, dstID := id(srcc), id(dstc)
	move := func(from, to rueidis.Client, fromID, toID string) {
		require.NoError(t, do(t, to, "CLUSTER", "SETSLOT", slot, "IMPORTING", fromID).Error())
		require.NoError(t, do(t, from, "CLUSTER", "SETSLOT", slot, "MIGRATING", toID).Error())
		require.NoError(t, do(t, to, "CLUSTER", "SETSLOT", slot, "NODE", toID).Error())
		require.NoError(t, do(t, from, "CLUSTER", "SETSLOT", slot, "NODE", toID).Error())
	}
	t.Cleanup(func() {
		move(dstc, srcc, dstID, srcID)
		// Let every node agree again before other tests use the cluster.
		for _, n := range nodes {
			nc := n.Client(t)
			eventually(t, func() bool {
				out, err := do(t, nc, "CLUSTER", "SLOTS").ToArray()
				if err != nil {
					return false
				}
				for _, r := range out {
					f, _ := r.ToArray()
					first, _ := f[0].AsInt64()
					last, _ := f[1].AsInt64()
					m, _ := f[2].ToArray()
					port, _ := m[1].AsInt64()
					if first <= int64(keys.Slot(name)) && int64(keys.Slot(name)) <= last {
						return strings.HasSuffix(src, ":"+strconv.FormatInt(port, 10))
					}
				}
				return false
			}, "node %s to see the slot back on %s", n.Addr(), src)
		}
	})

	r := waitAsync(ctx, sub, longTTL)
	waitParked(t, h, name, true, 1)
	move(srcc, dstc, srcID, dstID)

	require.NoError(t, recv(t, r, prompt), "the waiter is woken once the channel followed its slot")
	eventually(t, func() bool {
		owner, _, _ := h.routes.Master(keys.Slot(name))
		return owner == dst
	}, "the route to follow the slot")
	n, err := dstc.Do(ctx, dstc.B().Spublish().Channel(name).Message("0").Build()).AsInt64()
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "subscribed on the new owner")
	require.NoError(t, sub.Wait(ctx, longTTL))
}
