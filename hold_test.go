package interlock_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/fenced"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/multilock"
	"github.com/interlock-go/interlock/nonreentrant"
	"github.com/interlock-go/interlock/rlock"
	"github.com/interlock-go/interlock/rwlock"
	"github.com/interlock-go/interlock/spin"
)

// heldLock is a Locker of one kind, and the hash fields that hold it on
// the server for an owner string: key → field.
type heldLock struct {
	name   string
	l      func(c *interlock.Client, key string) interlock.Locker
	fields func(key, owner string) map[string]string
}

func heldLocks() []heldLock {
	field := func(key, owner string) map[string]string { return map[string]string{key: owner} }
	return []heldLock{
		{"rlock", func(c *interlock.Client, k string) interlock.Locker { return rlock.New(c, k) }, field},
		{"fairlock", func(c *interlock.Client, k string) interlock.Locker { return fairlock.New(c, k) }, field},
		{"rwlock.read", func(c *interlock.Client, k string) interlock.Locker { return rwlock.New(c, k).Read() }, field},
		{"rwlock.write", func(c *interlock.Client, k string) interlock.Locker { return rwlock.New(c, k).Write() },
			func(key, owner string) map[string]string { return map[string]string{key: owner + ":write"} }},
		{"fenced", func(c *interlock.Client, k string) interlock.Locker { return fenced.New(c, k) }, field},
		{"nonreentrant", func(c *interlock.Client, k string) interlock.Locker { return nonreentrant.New(c, k) }, field},
		{"nonreentrant.fair", func(c *interlock.Client, k string) interlock.Locker { return nonreentrant.NewFair(c, k) }, field},
		{"spin", func(c *interlock.Client, k string) interlock.Locker { return spin.New(c, k) }, field},
		{"multilock", func(c *interlock.Client, k string) interlock.Locker {
			return multilock.New(rlock.New(c, k+":a"), fairlock.New(c, k+":b"))
		}, func(key, owner string) map[string]string {
			return map[string]string{key + ":a": owner, key + ":b": owner}
		}},
	}
}

// onOtherGoroutine runs f on a goroutine of its own, which has ended when
// it returns.
func onOtherGoroutine[T any](f func() T) T {
	out := make(chan T)
	go func() { out <- f() }()
	return <-out
}

// TestHoldUnlocksFromAnotherGoroutine: a hold taken on one goroutine is
// released on another, for every lock kind. On the server the hold is the
// acquiring goroutine's, exactly as its own Lock would have made it; its
// Guard and Remaining work from the other goroutine, and a second Unlock
// of the same Hold releases nothing else.
func TestHoldUnlocksFromAnotherGoroutine(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	c, err := interlock.New(rc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()

	for _, k := range heldLocks() {
		t.Run(k.name, func(t *testing.T) {
			key := "hold-test:" + k.name
			l := k.l(c, key)
			type taken struct {
				h     *interlock.Hold
				owner string
				err   error
			}
			got := onOtherGoroutine(func() taken {
				owner, err := c.Owner(ctx)
				if err != nil {
					return taken{err: err}
				}
				h, err := interlock.Lock(ctx, l)
				return taken{h, owner, err}
			})
			require.NoError(t, got.err)
			mine, err := c.Owner(ctx)
			require.NoError(t, err)
			require.NotEqual(t, mine, got.owner)
			assert.Equal(t, got.owner, c.ID()+":"+itoa(got.h.Owner()))
			for key, field := range k.fields(key, got.owner) {
				ok, err := rc.Do(ctx, rc.B().Hexists().Key(key).Field(field).Build()).AsBool()
				require.NoError(t, err)
				assert.True(t, ok, "the server holds %s under the acquiring goroutine's owner %s", key, field)
			}

			// From this goroutine, which does not own it.
			assert.Positive(t, got.h.Remaining())
			guard := got.h.Guard(ctx)
			require.NoError(t, guard.Err())
			id, err := interlock.OwnerID(guard)
			require.NoError(t, err)
			assert.Equal(t, mine, c.ID()+":"+itoa(id), "the guard does not carry the hold's owner")
			require.NoError(t, got.h.Unlock(ctx))
			for key := range k.fields(key, "") {
				n, err := rc.Do(ctx, rc.B().Exists().Key(key).Build()).AsInt64()
				require.NoError(t, err)
				assert.Zero(t, n, "%s is released", key)
			}
			select {
			case <-guard.Done():
				assert.ErrorIs(t, context.Cause(guard), context.Canceled)
			case <-time.After(5 * time.Second):
				t.Fatal("the guard did not end with the release")
			}
			assert.Zero(t, got.h.Remaining())

			// The owner takes it again; the old Hold's second Unlock
			// returns the first one's answer and leaves the new hold.
			again := interlock.WithOwner(ctx, got.h.Owner())
			require.NoError(t, l.Lock(again))
			assert.NoError(t, got.h.Unlock(ctx))
			held, err := l.IsHeld(again)
			require.NoError(t, err)
			assert.True(t, held)
			require.NoError(t, l.Unlock(again))
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestHoldAcquisitions: LockLease and TryLock return holds too (TryLock's
// nil when busy), an owner from WithOwner is the hold's, and bad input is
// refused before anything is sent.
func TestHoldAcquisitions(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	c, err := interlock.New(rc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	m := rlock.New(c, "hold-test:acquisitions")

	h, err := interlock.LockLease(ctx, m, time.Minute)
	require.NoError(t, err)
	pttl, err := rc.Do(ctx, rc.B().Pttl().Key("hold-test:acquisitions").Build()).AsInt64()
	require.NoError(t, err)
	assert.Greater(t, pttl, int64(50*time.Second/time.Millisecond), "the hold has the given lease")

	other := interlock.WithOwner(ctx, interlock.NewOwnerID())
	busy, ok, err := interlock.TryLock(other, m, 0, 0)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Nil(t, busy)
	require.NoError(t, onOtherGoroutine(func() error { return h.Unlock(ctx) }))

	id := interlock.NewOwnerID()
	h, ok, err = interlock.TryLock(interlock.WithOwner(ctx, id), m, time.Second, 0)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, id, h.Owner())
	assert.Same(t, m, h.Locker())
	require.NoError(t, onOtherGoroutine(func() error { return h.Unlock(ctx) }))

	_, err = interlock.Lock(ctx, nil)
	assert.ErrorIs(t, err, interlock.ErrInvalid)
	_, err = interlock.Lock(interlock.WithOwner(ctx, -1), m)
	assert.ErrorIs(t, err, interlock.ErrInvalid)
	_, err = interlock.LockLease(ctx, m, 0)
	assert.ErrorIs(t, err, interlock.ErrInvalid)
	locked, err := m.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked)

	// A hold that failed to release says so, once and again.
	h, err = interlock.Lock(ctx, m)
	require.NoError(t, err)
	_, err = m.ForceUnlock(ctx)
	require.NoError(t, err)
	err = h.Unlock(ctx)
	assert.True(t, errors.Is(err, interlock.ErrNotHeld), "%v", err)
	assert.Equal(t, err, h.Unlock(ctx))
}

// TestHoldExtendsFromAnotherGoroutine: a lease hold taken on one goroutine
// is extended on another, for every lock kind: each of its keys gets the
// new lease as its TTL, and Remaining follows. Once released, the Hold's
// Extend fails with ErrNotHeld.
func TestHoldExtendsFromAnotherGoroutine(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	c, err := interlock.New(rc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	const lease = 5 * time.Second

	for _, k := range heldLocks() {
		t.Run(k.name, func(t *testing.T) {
			key := "hold-extend-test:" + k.name
			l := k.l(c, key)
			var h *interlock.Hold
			err := onOtherGoroutine(func() (err error) {
				h, err = interlock.LockLease(ctx, l, 300*time.Millisecond)
				return err
			})
			require.NoError(t, err)
			require.NotNil(t, h)
			sent := time.Now()
			require.NoError(t, h.Extend(ctx, lease))
			for key := range k.fields(key, "") {
				ms, err := rc.Do(ctx, rc.B().Pttl().Key(key).Build()).AsInt64()
				require.NoError(t, err)
				ttl := time.Duration(ms) * time.Millisecond
				assert.LessOrEqual(t, ttl, lease, key)
				assert.GreaterOrEqual(t, ttl, lease-time.Since(sent)-time.Millisecond, key)
			}
			assert.Greater(t, h.Remaining(), lease-time.Since(sent)-time.Millisecond)
			require.NoError(t, h.Unlock(ctx))
			assert.ErrorIs(t, h.Extend(ctx, lease), interlock.ErrNotHeld)
		})
	}
}
