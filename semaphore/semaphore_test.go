package semaphore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/script"
	"github.com/interlock-go/interlock/semaphore"
)

func TestSemaphoreTrySetPermits(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, rc := tg.Client(t)
		name := semName(t)
		s := semaphore.New(c, name)
		assert.Equal(t, name, s.Name())
		in := redistest.Listen(t, rc, keys.SemaphoreChannel(name), tg.Cluster)

		require.True(t, redistest.Must[bool](t)(s.TrySetPermits(ctx, 3)))
		assert.Equal(t, []string{"3"}, in.Next(t), "the new count is announced")
		assert.EqualValues(t, 3, redistest.Must[int64](t)(s.Available(ctx)))
		assert.Equal(t, time.Duration(-1), redistest.Must[time.Duration](t)(s.TTL(ctx)))

		require.False(t, redistest.Must[bool](t)(s.TrySetPermits(ctx, 5)))
		require.False(t, redistest.Must[bool](t)(s.TrySetPermitsTTL(ctx, 5, time.Minute)))
		assert.Empty(t, in.Next(t), "a refused set announces nothing")
		assert.EqualValues(t, 3, redistest.Must[int64](t)(s.Available(ctx)))
		assert.Equal(t, time.Duration(-1), redistest.Must[time.Duration](t)(s.TTL(ctx)), "a refused set leaves the TTL")

		// With a TTL.
		name2 := name + ":ttl"
		s2 := semaphore.New(c, name2)
		in2 := redistest.Listen(t, rc, keys.SemaphoreChannel(name2), tg.Cluster)
		require.True(t, redistest.Must[bool](t)(s2.TrySetPermitsTTL(ctx, 2, 10*time.Second)))
		assert.Equal(t, []string{"2"}, in2.Next(t))
		ttl := redistest.Must[time.Duration](t)(s2.TTL(ctx))
		within(t, ttl, 9*time.Second, 10*time.Second, "TTL")
		require.False(t, redistest.Must[bool](t)(s2.TrySetPermitsTTL(ctx, 7, time.Hour)))
		require.False(t, redistest.Must[bool](t)(s2.TrySetPermits(ctx, 7)))
		assert.Empty(t, in2.Next(t))
		assert.EqualValues(t, 2, redistest.Must[int64](t)(s2.Available(ctx)))
		assert.LessOrEqual(t, redistest.Must[time.Duration](t)(s2.TTL(ctx)), 10*time.Second)

		// Zero permits is a valid semaphore.
		s3 := semaphore.New(c, name+":zero")
		require.True(t, redistest.Must[bool](t)(s3.TrySetPermits(ctx, 0)))
		assert.True(t, redistest.Exists(t, rc, name+":zero"))
		assert.EqualValues(t, 0, redistest.Must[int64](t)(s3.Available(ctx)))
		assert.Empty(t, redistest.Receipts(t, rc, name), "a try-set takes no receipt")
	})
}

func TestSemaphoreAddPermits(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, rc := tg.Client(t)
		name := semName(t)
		s := semaphore.New(c, name)
		in := redistest.Listen(t, rc, keys.SemaphoreChannel(name), tg.Cluster)

		// On a missing semaphore AddPermits creates it.
		require.NoError(t, s.AddPermits(ctx, 5))
		assert.Equal(t, []string{"5"}, in.Next(t))
		assert.EqualValues(t, 5, redistest.Must[int64](t)(s.Available(ctx)))
		redistest.OneReceipt(t, rc, name, "AddPermits")

		require.NoError(t, s.AddPermits(ctx, -2))
		assert.Equal(t, []string{"3"}, in.Next(t), "the new total is announced")
		assert.EqualValues(t, 3, redistest.Must[int64](t)(s.Available(ctx)))
		redistest.OneReceipt(t, rc, name, "AddPermits")

		require.NoError(t, s.AddPermits(ctx, -5))
		assert.EqualValues(t, -2, redistest.Must[int64](t)(s.Available(ctx)), "the count may go below zero")
		assert.Equal(t, []string{"-2"}, in.Next(t))
		redistest.OneReceipt(t, rc, name, "AddPermits")

		assert.ErrorIs(t, s.AddPermits(ctx, 0), interlock.ErrInvalid)
		assert.Empty(t, in.Next(t), "a zero delta sends nothing")
		assert.Empty(t, redistest.Receipts(t, rc, name))
		assert.EqualValues(t, -2, redistest.Must[int64](t)(s.Available(ctx)))

		// AddPermits clears the TTL, of either sign.
		for _, delta := range []int{3, -1} {
			s2 := semaphore.New(c, name+":ttl")
			_, _ = s2.Delete(ctx)
			require.True(t, redistest.Must[bool](t)(s2.TrySetPermitsTTL(ctx, 2, time.Minute)))
			require.NoError(t, s2.AddPermits(ctx, delta))
			assert.Equal(t, time.Duration(-1), redistest.Must[time.Duration](t)(s2.TTL(ctx)), "delta %d", delta)
			assert.EqualValues(t, 2+delta, redistest.Must[int64](t)(s2.Available(ctx)))
		}
	})
}

func TestSemaphoreAcquire(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, rc := tg.Client(t)
		name := semName(t)
		s := semaphore.New(c, name)

		// On a missing semaphore nothing can be taken.
		assert.False(t, redistest.Must[bool](t)(s.TryAcquire(ctx, 1, 0)))
		assert.False(t, redistest.Exists(t, rc, name))
		assert.Empty(t, redistest.Receipts(t, rc, name), "a failed attempt leaves no receipt")

		require.True(t, redistest.Must[bool](t)(s.TrySetPermits(ctx, 3)))
		require.NoError(t, s.Acquire(ctx, 2))
		redistest.OneReceipt(t, rc, name, "Acquire")
		assert.EqualValues(t, 1, redistest.Must[int64](t)(s.Available(ctx)))
		start := time.Now()
		assert.False(t, redistest.Must[bool](t)(s.TryAcquire(ctx, 2, 0)), "2 of 1 free")
		assert.Less(t, time.Since(start), redistest.Slack, "wait 0 is one attempt")
		assert.EqualValues(t, 1, redistest.Must[int64](t)(s.Available(ctx)), "a failed attempt takes nothing")
		assert.Empty(t, redistest.Receipts(t, rc, name))
		assert.True(t, redistest.Must[bool](t)(s.TryAcquire(ctx, 1, 0)))
		redistest.OneReceipt(t, rc, name, "TryAcquire")
		assert.EqualValues(t, 0, redistest.Must[int64](t)(s.Available(ctx)))

		// Acquire of n waits until n are free, not one.
		got := make(chan error, 1)
		go func() { got <- s.Acquire(ctx, 2) }()
		require.NoError(t, s.Release(ctx, 1))
		select {
		case err := <-got:
			t.Fatalf("Acquire(2) returned with 1 free: %v", err)
		case <-time.After(redistest.Quiet):
		}
		require.NoError(t, s.Release(ctx, 1))
		select {
		case err := <-got:
			require.NoError(t, err)
		case <-time.After(redistest.Prompt):
			t.Fatal("Acquire(2) not woken by the second release")
		}
		assert.EqualValues(t, 0, redistest.Must[int64](t)(s.Available(ctx)))

		// Acquire ends with its ctx, taking nothing.
		start = time.Now() // before the deadline is set, which counts from its own now
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		err := s.Acquire(short, 1)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		within(t, time.Since(start), 300*time.Millisecond, 300*time.Millisecond+redistest.Slack, "Acquire until its deadline")
		require.NoError(t, s.Release(ctx, 1))
		assert.EqualValues(t, 1, redistest.Must[int64](t)(s.Available(ctx)))
	})
}

// TryAcquire waits until its deadline, and tries once more then: permits
// that came back without a message are still found.
func TestSemaphoreTryAcquireDeadline(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, cnt := counted(t, tg)
		rc := cnt.Client
		name := semName(t)
		s := semaphore.New(c, name)
		require.True(t, redistest.Must[bool](t)(s.TrySetPermits(ctx, 0)))

		const wait = 500 * time.Millisecond
		start := time.Now()
		assert.False(t, redistest.Must[bool](t)(s.TryAcquire(ctx, 1, wait)))
		within(t, time.Since(start), wait, wait+redistest.Slack, "TryAcquire(500ms)")
		// A try, a try once subscribed, a try at the deadline.
		assert.EqualValues(t, 3, cnt.n(script.SemAcquire()), "attempts")

		// A permit put back silently in the middle of the wait is taken by
		// the try at the deadline.
		before := cnt.n(script.SemAcquire())
		done := make(chan bool, 1)
		start = time.Now()
		go func() {
			ok, err := s.TryAcquire(ctx, 1, wait)
			assert.NoError(t, err)
			done <- ok
		}()
		time.Sleep(wait / 4)
		redistest.Do(t, rc, "SET", name, "1") // no message
		ok := <-done
		took := time.Since(start)
		assert.True(t, ok, "the try at the deadline")
		within(t, took, wait-10*time.Millisecond, wait+redistest.Slack, "TryAcquire(500ms)")
		assert.EqualValues(t, 3, cnt.n(script.SemAcquire())-before, "attempts")
		assert.EqualValues(t, 0, redistest.Must[int64](t)(s.Available(ctx)))
		redistest.OneReceipt(t, rc, name, "TryAcquire")
	})
}

// A release wakes a parked waiter by its message, not by the repoll.
func TestSemaphoreReleaseWakesWaiter(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, cnt := counted(t, tg)
		rc := cnt.Client
		name := semName(t)
		s := semaphore.New(c, name)
		in := redistest.Listen(t, rc, keys.SemaphoreChannel(name), tg.Cluster)
		require.True(t, redistest.Must[bool](t)(s.TrySetPermits(ctx, 0)))
		in.Next(t)

		done := make(chan error, 1)
		go func() { done <- s.Acquire(ctx, 1) }()
		require.Eventually(t, func() bool { return cnt.n(script.SemAcquire()) == 2 }, redistest.Prompt, time.Millisecond, "waiter parked")
		time.Sleep(50 * time.Millisecond)
		start := time.Now()
		require.NoError(t, s.Release(ctx, 1))
		var woke time.Duration
		select {
		case err := <-done:
			woke = time.Since(start)
			require.NoError(t, err)
		case <-time.After(redistest.Prompt):
			t.Fatal("waiter not woken")
		}
		t.Logf("woken %v after the release", woke)
		assert.Less(t, woke, redistest.Slack, "woken by the message, not by the 2s repoll")
		assert.EqualValues(t, 3, cnt.n(script.SemAcquire()), "one attempt after the wake-up")
		assert.Equal(t, []string{"1"}, in.Next(t), "Release announces the new free count")
		assert.EqualValues(t, 0, redistest.Must[int64](t)(s.Available(ctx)))
		assert.Eventually(t, func() bool { return len(redistest.Receipts(t, rc, name)) == 0 }, 5*time.Second, 10*time.Millisecond,
			"answered receipts are deleted by the Client")
	})
}

func TestSemaphoreRelease(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, rc := tg.Client(t)
		name := semName(t)
		s := semaphore.New(c, name)
		in := redistest.Listen(t, rc, keys.SemaphoreChannel(name), tg.Cluster)

		// Release creates a missing semaphore, as Redisson's does.
		require.NoError(t, s.Release(ctx, 2))
		assert.Equal(t, []string{"2"}, in.Next(t))
		redistest.OneReceipt(t, rc, name, "Release")
		require.NoError(t, s.Release(ctx, 3))
		assert.Equal(t, []string{"5"}, in.Next(t))
		redistest.OneReceipt(t, rc, name, "Release")
		assert.EqualValues(t, 5, redistest.Must[int64](t)(s.Available(ctx)))
	})
}

func TestSemaphoreReleaseIfExists(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, rc := tg.Client(t)
		name := semName(t)
		s := semaphore.New(c, name)
		in := redistest.Listen(t, rc, keys.SemaphoreChannel(name), tg.Cluster)

		assert.False(t, redistest.Must[bool](t)(s.ReleaseIfExists(ctx, 1)))
		assert.False(t, redistest.Exists(t, rc, name), "no semaphore created")
		assert.Empty(t, in.Next(t), "nothing announced")
		redistest.OneReceipt(t, rc, name, "ReleaseIfExists")

		require.True(t, redistest.Must[bool](t)(s.TrySetPermits(ctx, 1)))
		in.Next(t)
		assert.True(t, redistest.Must[bool](t)(s.ReleaseIfExists(ctx, 2)))
		assert.Equal(t, []string{"3"}, in.Next(t))
		assert.EqualValues(t, 3, redistest.Must[int64](t)(s.Available(ctx)))
		redistest.OneReceipt(t, rc, name, "ReleaseIfExists")
	})
}

func TestSemaphoreDrainDeleteTTL(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, rc := tg.Client(t)
		name := semName(t)
		s := semaphore.New(c, name)
		in := redistest.Listen(t, rc, keys.SemaphoreChannel(name), tg.Cluster)

		// Missing.
		assert.EqualValues(t, 0, redistest.Must[int64](t)(s.Drain(ctx)))
		assert.False(t, redistest.Exists(t, rc, name), "Drain creates nothing")
		assert.EqualValues(t, 0, redistest.Must[int64](t)(s.Available(ctx)))
		assert.Zero(t, redistest.Must[time.Duration](t)(s.TTL(ctx)))
		assert.False(t, redistest.Must[bool](t)(s.Delete(ctx)))

		require.True(t, redistest.Must[bool](t)(s.TrySetPermitsTTL(ctx, 4, time.Minute)))
		in.Next(t)
		assert.EqualValues(t, 4, redistest.Must[int64](t)(s.Drain(ctx)))
		assert.Empty(t, in.Next(t), "Drain announces nothing")
		assert.EqualValues(t, 0, redistest.Must[int64](t)(s.Available(ctx)))
		assert.Equal(t, "string:0", state(t, rc, name))
		assert.Equal(t, time.Duration(-1), redistest.Must[time.Duration](t)(s.TTL(ctx)), "Drain clears the TTL")
		assert.EqualValues(t, 0, redistest.Must[int64](t)(s.Drain(ctx)))
		assert.Empty(t, redistest.Receipts(t, rc, name))

		assert.True(t, redistest.Must[bool](t)(s.Delete(ctx)))
		assert.False(t, redistest.Exists(t, rc, name))
		assert.False(t, redistest.Must[bool](t)(s.Delete(ctx)))
		assert.Empty(t, in.Next(t), "Delete announces nothing")

		// Delete does not wake waiters: they wait for a release.
		require.True(t, redistest.Must[bool](t)(s.TrySetPermits(ctx, 0)))
		got := make(chan error, 1)
		go func() { got <- s.Acquire(ctx, 1) }()
		time.Sleep(redistest.Quiet)
		require.True(t, redistest.Must[bool](t)(s.Delete(ctx)))
		select {
		case err := <-got:
			t.Fatalf("Acquire returned after Delete: %v", err)
		case <-time.After(redistest.Quiet):
		}
		require.NoError(t, s.Release(ctx, 1))
		require.NoError(t, <-got)
	})
}

func TestSemaphoreBadInput(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, rc := tg.Client(t)
		name := semName(t)

		s := semaphore.New(c, name)
		invalid := map[string]error{
			"TrySetPermits(-1)":          second(s.TrySetPermits(ctx, -1)),
			"TrySetPermitsTTL(1, 0)":     second(s.TrySetPermitsTTL(ctx, 1, 0)),
			"TrySetPermitsTTL(1, -1s)":   second(s.TrySetPermitsTTL(ctx, 1, -time.Second)),
			"TrySetPermitsTTL(1, 500us)": second(s.TrySetPermitsTTL(ctx, 1, 500*time.Microsecond)),
			"TrySetPermitsTTL(-1, 1s)":   second(s.TrySetPermitsTTL(ctx, -1, time.Second)),
			"Acquire(0)":                 s.Acquire(ctx, 0),
			"Acquire(-1)":                s.Acquire(ctx, -1),
			"TryAcquire(0, 0)":           second(s.TryAcquire(ctx, 0, 0)),
			"TryAcquire(-3, 1s)":         second(s.TryAcquire(ctx, -3, time.Second)),
			"TryAcquire(1, -1ns)":        second(s.TryAcquire(ctx, 1, -1)),
			"Release(0)":                 s.Release(ctx, 0),
			"Release(-1)":                s.Release(ctx, -1),
			"ReleaseIfExists(0)":         second(s.ReleaseIfExists(ctx, 0)),
			"AddPermits(0)":              s.AddPermits(ctx, 0),
		}
		for op, err := range invalid {
			assert.ErrorIs(t, err, interlock.ErrInvalid, op)
			assert.ErrorIs(t, err, interlock.ErrInvalid, op)
		}
		assert.False(t, redistest.Exists(t, rc, name), "nothing sent")
		assert.Empty(t, redistest.Receipts(t, rc, name))

		// A nil client, a bad name: every method, nothing sent.
		for what, s := range map[string]*semaphore.Semaphore{
			"nil client": semaphore.New(nil, name),
			"empty name": semaphore.New(c, ""),
			"a{b":        semaphore.New(c, "a{b"),
			"x}y":        semaphore.New(c, "x}y"),
		} {
			for _, o := range allOps(ctx, s) {
				assert.ErrorIs(t, o.f(), interlock.ErrInvalid, "%s: %s", what, o.name)
			}
		}
		assert.False(t, redistest.Exists(t, rc, name))

		// A key of another type (an rlock's hash): an argument error, and the
		// key is left as it was.
		hashName := name + ":hash"
		redistest.Do(t, rc, "HSET", hashName, "client:1", "1")
		redistest.Do(t, rc, "PEXPIRE", hashName, "60000")
		before := state(t, rc, hashName)
		h := semaphore.New(c, hashName)
		for _, o := range allOps(ctx, h) {
			op := o.name
			if op == "TTL" {
				continue // it works on a key of any type
			}
			err := o.f()
			require.Error(t, err, op)
			assert.ErrorIs(t, err, interlock.ErrInvalid, op)
			var ie *interlock.Error
			assert.True(t, errors.As(err, &ie), "%s: %T", op, err)
			assert.Contains(t, err.Error(), hashName+" holds another type of data: a hash, not an integer count", op)
			assert.Equal(t, before, state(t, rc, hashName), "%s changed the key", op)
		}
		assert.Empty(t, redistest.Receipts(t, rc, hashName), "failed operations leave no receipt")

		// A closed Client.
		c2, _ := tg.Client(t)
		s2 := semaphore.New(c2, name)
		require.NoError(t, c2.Close())
		for _, o := range allOps(ctx, s2) {
			assert.ErrorIs(t, o.f(), interlock.ErrClosed, o.name)
		}
		assert.False(t, redistest.Exists(t, rc, name))
	})
}

func second[T any](_ T, err error) error { return err }

// op is one call of a method, run when the test says.
type op struct {
	name string
	f    func() error
}

// allOps returns a call of every method of s, in an order that leaves a
// valid semaphore with 1 free permit.
func allOps(ctx context.Context, s *semaphore.Semaphore) []op {
	return []op{
		{"TrySetPermits", func() error { return second(s.TrySetPermits(ctx, 1)) }},
		{"TrySetPermitsTTL", func() error { return second(s.TrySetPermitsTTL(ctx, 1, time.Minute)) }},
		{"AddPermits", func() error { return s.AddPermits(ctx, 1) }},
		{"Acquire", func() error { return s.Acquire(ctx, 1) }},
		{"TryAcquire", func() error { return second(s.TryAcquire(ctx, 1, 100*time.Millisecond)) }},
		{"Release", func() error { return s.Release(ctx, 1) }},
		{"ReleaseIfExists", func() error { return second(s.ReleaseIfExists(ctx, 1)) }},
		{"Available", func() error { return second(s.Available(ctx)) }},
		{"Drain", func() error { return second(s.Drain(ctx)) }},
		{"TTL", func() error { return second(s.TTL(ctx)) }},
		{"Delete", func() error { return second(s.Delete(ctx)) }},
	}
}

// Each operation that changes the count leaves at most one receipt, which
// expires within 30s.
func TestSemaphoreReceipts(t *testing.T) {
	each(t, func(t *testing.T, tg target) {
		ctx := redistest.Context(t)
		c, rc := tg.Client(t)
		name := semName(t)
		s := semaphore.New(c, name)
		steps := []op{
			{"TrySetPermitsTTL", func() error { return second(s.TrySetPermitsTTL(ctx, 1, time.Minute)) }},
			{"AddPermits", func() error { return s.AddPermits(ctx, 2) }},
			{"Acquire", func() error { return s.Acquire(ctx, 3) }},
			{"TryAcquire (busy)", func() error { return second(s.TryAcquire(ctx, 1, 300*time.Millisecond)) }},
			{"Release", func() error { return s.Release(ctx, 1) }},
			{"TryAcquire", func() error { return second(s.TryAcquire(ctx, 1, time.Second)) }},
			{"ReleaseIfExists", func() error { return second(s.ReleaseIfExists(ctx, 4)) }},
			{"Available", func() error { return second(s.Available(ctx)) }},
			{"Drain", func() error { return second(s.Drain(ctx)) }},
			{"Delete", func() error { return second(s.Delete(ctx)) }},
			{"ReleaseIfExists (missing)", func() error { return second(s.ReleaseIfExists(ctx, 1)) }},
		}
		for _, st := range steps {
			require.NoError(t, st.f(), st.name)
			redistest.OneReceipt(t, rc, name, st.name)
		}
	})
}
