package latch_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/latch"
)

func TestLatchTrySetCount(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, rc := tg.Client(t)
		name := latchName(t)
		l := latch.New(c, name)
		assert.Equal(t, name, l.Name())
		in := redistest.Listen(t, rc, keys.LatchChannel(name), tg.Cluster)

		assert.ErrorIs(t, second(l.TrySetCount(ctx, -1)), interlock.ErrInvalid)
		assert.ErrorIs(t, second(l.TrySetCount(ctx, -1)), interlock.ErrInvalid)
		assert.False(t, redistest.Exists(t, rc, name))

		require.True(t, redistest.Must[bool](t)(l.TrySetCount(ctx, 3)))
		assert.Equal(t, []string{"1"}, in.Next(t), "Redisson's new-count message")
		assert.EqualValues(t, 3, redistest.Must[int64](t)(l.Count(ctx)))
		require.False(t, redistest.Must[bool](t)(l.TrySetCount(ctx, 5)))
		assert.Empty(t, in.Next(t), "a refused set announces nothing")
		assert.EqualValues(t, 3, redistest.Must[int64](t)(l.Count(ctx)))
		assert.Empty(t, redistest.Receipts(t, rc, name), "TrySetCount takes no receipt")
	})
}

// The count reaching 0 wakes every waiter, of every Client, by its
// message.
func TestLatchCountDownOpens(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c1, rc := tg.Client(t)
		c2, _ := tg.Client(t)
		name := latchName(t)
		l1, l2 := latch.New(c1, name), latch.New(c2, name)
		in := redistest.Listen(t, rc, keys.LatchChannel(name), tg.Cluster)
		require.True(t, redistest.Must[bool](t)(l1.TrySetCount(ctx, 2)))
		in.Next(t)

		type result struct {
			err error
			at  time.Time
		}
		const waiters = 5
		results := make(chan result, waiters)
		var wg sync.WaitGroup
		for i := range waiters {
			l := l1
			if i%2 == 1 {
				l = l2
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := l.Await(ctx)
				results <- result{err, time.Now()}
			}()
		}
		defer wg.Wait()
		require.Eventually(t, func() bool { return c1.Stats().Channels == 1 && c2.Stats().Channels == 1 }, redistest.Prompt, time.Millisecond)
		time.Sleep(redistest.Quiet) // parked

		require.NoError(t, l2.CountDown(ctx))
		redistest.OneReceipt(t, rc, name, "CountDown")
		assert.EqualValues(t, 1, redistest.Must[int64](t)(l1.Count(ctx)))
		assert.Empty(t, in.Next(t), "nothing announced above 0")
		select {
		case r := <-results:
			t.Fatalf("Await returned at count 1: %v", r.err)
		case <-time.After(redistest.Quiet):
		}

		start := time.Now()
		require.NoError(t, l1.CountDown(ctx))
		for range waiters {
			select {
			case r := <-results:
				require.NoError(t, r.err)
				took := r.at.Sub(start)
				assert.Less(t, took, redistest.Slack, "woken by the message, not the repoll")
				t.Logf("waiter woken after %v", took)
			case <-time.After(redistest.Prompt):
				t.Fatal("a waiter was not woken")
			}
		}
		assert.Equal(t, []string{"0"}, in.Next(t))
		assert.False(t, redistest.Exists(t, rc, name), "an open latch has no key")
		assert.EqualValues(t, 0, redistest.Must[int64](t)(l2.Count(ctx)))
		redistest.OneReceipt(t, rc, name, "CountDown")
		require.Eventually(t, func() bool { return c1.Stats().Channels == 0 && c2.Stats().Channels == 0 }, redistest.Prompt, time.Millisecond, "waiters unsubscribed")

		// Counting down an open latch does nothing.
		require.NoError(t, l1.CountDown(ctx))
		assert.False(t, redistest.Exists(t, rc, name))
		assert.Empty(t, in.Next(t))
		require.NoError(t, l1.Await(ctx))
	})
}

func TestLatchCountDownMissing(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, rc := tg.Client(t)
		name := latchName(t)
		l := latch.New(c, name)
		in := redistest.Listen(t, rc, keys.LatchChannel(name), tg.Cluster)

		for range 3 {
			require.NoError(t, l.CountDown(ctx))
			assert.False(t, redistest.Exists(t, rc, name), "no key created")
			assert.Empty(t, in.Next(t), "nothing published")
			redistest.OneReceipt(t, rc, name, "CountDown")
		}
		assert.EqualValues(t, 0, redistest.Must[int64](t)(l.Count(ctx)))
		require.True(t, redistest.Must[bool](t)(l.TrySetCount(ctx, 1)), "the latch can still be closed")
	})
}

func TestLatchAwait(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, rc := tg.Client(t)
		name := latchName(t)
		l := latch.New(c, name)

		start := time.Now()
		require.NoError(t, l.Await(ctx), "a missing latch is open")
		assert.Less(t, time.Since(start), redistest.Slack)
		assert.Zero(t, c.Stats().Channels, "no subscription for an open latch")

		// A count of 0 is an open latch too.
		require.True(t, redistest.Must[bool](t)(l.TrySetCount(ctx, 0)))
		assert.EqualValues(t, 0, redistest.Must[int64](t)(l.Count(ctx)))
		start = time.Now()
		require.NoError(t, l.Await(ctx))
		assert.Less(t, time.Since(start), redistest.Slack)
		_, err := l.Delete(ctx)
		require.NoError(t, err)

		require.True(t, redistest.Must[bool](t)(l.TrySetCount(ctx, 1)))
		start = time.Now() // before the deadline is set: it counts from there
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		err = l.Await(short)
		took := time.Since(start)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.GreaterOrEqual(t, took, 300*time.Millisecond)
		assert.Less(t, took, 300*time.Millisecond+redistest.Slack)
		require.Eventually(t, func() bool { return c.Stats().Channels == 0 }, redistest.Prompt, time.Millisecond, "unsubscribed")

		done, cancel2 := context.WithCancel(ctx)
		cancel2()
		assert.ErrorIs(t, l.Await(done), context.Canceled)
		assert.EqualValues(t, 1, redistest.Must[int64](t)(l.Count(ctx)))
		assert.True(t, redistest.Exists(t, rc, name))
		assert.Empty(t, redistest.Receipts(t, rc, name))
	})
}

// Delete opens the latch without waking its waiters, as in Redisson: they
// see it open at their next periodic read, within about 2s.
func TestLatchDelete(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out several leases or repolls; the server matrix runs with -short")
	}
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, rc := tg.Client(t)
		name := latchName(t)
		l := latch.New(c, name)
		in := redistest.Listen(t, rc, keys.LatchChannel(name), tg.Cluster)
		assert.False(t, redistest.Must[bool](t)(l.Delete(ctx)))
		assert.Empty(t, in.Next(t), "deleting a missing latch announces nothing")

		require.True(t, redistest.Must[bool](t)(l.TrySetCount(ctx, 2)))
		in.Next(t)
		got := make(chan error, 1)
		go func() { got <- l.Await(ctx) }()
		require.Eventually(t, func() bool { return c.Stats().Channels == 1 }, redistest.Prompt, time.Millisecond)
		time.Sleep(redistest.Quiet)

		start := time.Now()
		require.True(t, redistest.Must[bool](t)(l.Delete(ctx)))
		assert.False(t, redistest.Exists(t, rc, name))
		assert.Equal(t, []string{"1"}, in.Next(t), "Redisson's new-count message, which wakes nobody")
		select {
		case err := <-got:
			took := time.Since(start)
			require.NoError(t, err)
			t.Logf("waiter saw the deleted latch after %v", took)
			assert.Greater(t, took, time.Second, "not woken by the delete's message")
			assert.Less(t, took, 2*time.Second+redistest.Slack, "seen at the next repoll")
		case <-time.After(2*time.Second + redistest.Prompt):
			t.Fatal("waiter never saw the deleted latch")
		}
		assert.False(t, redistest.Must[bool](t)(l.Delete(ctx)))
		assert.Empty(t, redistest.Receipts(t, rc, name))
	})
}

// On a cluster a name with braces puts the latch's channel in another
// slot than its key (Redisson's naming), so it is refused there.
func TestLatchBraces(t *testing.T) {
	const braced = "latch-test:{tag}x"
	t.Run("cluster", func(t *testing.T) {
		ctx := redistest.Context(t)
		rc := redistest.NewClient(t, redistest.SharedCluster(t)...)
		c := wrap(t, rc)
		for _, name := range []string{braced, "{latch-test}"} {
			l := latch.New(c, name)
			for _, o := range allOps(ctx, l) {
				err := o.f()
				assert.ErrorIs(t, err, interlock.ErrInvalid, "%s: %s", name, o.name)
				assert.Contains(t, err.Error(), "braces", "%s: %s", name, o.name)
			}
			assert.False(t, redistest.Exists(t, rc, name), "nothing sent")
		}
	})
	t.Run("standalone", func(t *testing.T) {
		ctx := redistest.Context(t)
		c, rc := newClient(t)
		t.Cleanup(func() { redistest.DeleteLike([]string{addr}, braced) })
		l := latch.New(c, braced)
		require.True(t, redistest.Must[bool](t)(l.TrySetCount(ctx, 1)))
		assert.EqualValues(t, 1, redistest.Must[int64](t)(l.Count(ctx)))
		got := make(chan error, 1)
		go func() { got <- l.Await(ctx) }()
		require.Eventually(t, func() bool { return c.Stats().Channels == 1 }, redistest.Prompt, time.Millisecond)
		time.Sleep(redistest.Quiet)
		start := time.Now()
		require.NoError(t, l.CountDown(ctx))
		require.NoError(t, <-got)
		assert.Less(t, time.Since(start), redistest.Slack)
		assert.False(t, redistest.Exists(t, rc, braced))
	})
}

func TestLatchBadInput(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, rc := tg.Client(t)
		name := latchName(t)

		for what, l := range map[string]*latch.Latch{
			"nil client": latch.New(nil, name),
			"empty name": latch.New(c, ""),
			"a{b":        latch.New(c, "a{b"),
		} {
			for _, o := range allOps(ctx, l) {
				assert.ErrorIs(t, o.f(), interlock.ErrInvalid, "%s: %s", what, o.name)
			}
		}
		assert.False(t, redistest.Exists(t, rc, name))

		// A key of another type (an rlock's hash).
		redistest.Do(t, rc, "HSET", name, "client:1", "1")
		hash := func() map[string]string {
			m, err := rc.Do(ctx, rc.B().Hgetall().Key(name).Build()).AsStrMap()
			require.NoError(t, err)
			return m
		}
		before := hash()
		l := latch.New(c, name)
		ops := map[string]interlock.Op{"TrySetCount": interlock.OpSet, "CountDown": interlock.OpRelease,
			"Count": interlock.OpInspect, "Await": interlock.OpAcquire, "Delete": interlock.OpDelete}
		for _, o := range allOps(ctx, l) {
			err := o.f()
			require.Error(t, err, o.name)
			assert.ErrorIs(t, err, interlock.ErrInvalid, o.name)
			var ie *interlock.Error
			if assert.True(t, errors.As(err, &ie), "%s: %T", o.name, err) {
				assert.Equal(t, interlock.KindLatch, ie.Kind, o.name)
				assert.Equal(t, ops[o.name], ie.Op, "%s: the Op of the call, as in its Events", o.name)
			}
			assert.Contains(t, err.Error(), name+" holds another type of data: a hash, not an integer count", o.name)
			assert.Equal(t, before, hash(), "%s changed the key", o.name)
		}
		assert.Empty(t, redistest.Receipts(t, rc, name), "failed operations leave no receipt")

		c2, _ := tg.Client(t)
		l2 := latch.New(c2, name+":closed")
		require.NoError(t, c2.Close())
		for _, o := range allOps(ctx, l2) {
			assert.ErrorIs(t, o.f(), interlock.ErrClosed, o.name)
		}
	})
}

type op struct {
	name string
	f    func() error
}

func allOps(ctx context.Context, l *latch.Latch) []op {
	return []op{
		{"TrySetCount", func() error { return second(l.TrySetCount(ctx, 1)) }},
		{"CountDown", func() error { return l.CountDown(ctx) }},
		{"Count", func() error { return second(l.Count(ctx)) }},
		{"Await", func() error {
			short, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			return l.Await(short)
		}},
		{"Delete", func() error { return second(l.Delete(ctx)) }},
	}
}

// Closing the Client ends its waiters with ErrClosed, at once.
func TestLatchCloseEndsWaiters(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, _ := tg.Client(t)
		l := latch.New(c, latchName(t))
		require.True(t, redistest.Must[bool](t)(l.TrySetCount(ctx, 1)))
		got := make(chan error, 1)
		go func() { got <- l.Await(ctx) }()
		require.Eventually(t, func() bool { return c.Stats().Channels == 1 }, redistest.Prompt, time.Millisecond)
		time.Sleep(redistest.Quiet)
		start := time.Now()
		require.NoError(t, c.Close())
		select {
		case err := <-got:
			assert.ErrorIs(t, err, interlock.ErrClosed)
		case <-time.After(redistest.Prompt):
			t.Fatal("Await outlived Close")
		}
		assert.Less(t, time.Since(start), redistest.Slack)
		assert.ErrorIs(t, l.Await(ctx), interlock.ErrClosed)
	})
}
