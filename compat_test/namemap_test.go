package compat_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/fenced"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/latch"
	"github.com/interlock-go/interlock/nonreentrant"
	"github.com/interlock-go/interlock/rlock"
	"github.com/interlock-go/interlock/rwlock"
	"github.com/interlock-go/interlock/semaphore"
	"github.com/interlock-go/interlock/spin"
)

// Name mapping (interlock.WithNameMapper), kind by kind, on the shared
// standalone server: a Client with PrefixNames(namePrefix) writes only
// keys derived from the mapped name, exactly those Redisson derives, and
// announces on the mapped name's channel, never on the unmapped one; Name
// reports the name as given.

const namePrefix = "app:"

// nameCase is one kind's scenario: hold takes what the kind takes (a
// lock, permits, a latch count) and returns the keys that must exist then,
// release gives it back, which announces msgs on channel. left are the
// keys that stay afterwards. All are functions of the mapped name.
type nameCase struct {
	kind    string
	name    func(c *interlock.Client, name string) string // the object's Name()
	hold    func(ctx context.Context, t *testing.T, c *interlock.Client, name string) (release func())
	held    func(mapped, owner string) []string
	channel func(mapped string) string
	msgs    []string
	left    func(mapped string) []string
}

func lockCase(kind string, mk func(c *interlock.Client, name string) interlock.Locker, held func(mapped, owner string) []string,
	channel func(string) string, msg string, left func(string) []string) nameCase {
	return nameCase{
		kind: kind,
		name: func(c *interlock.Client, name string) string { return mk(c, name).Name() },
		hold: func(ctx context.Context, t *testing.T, c *interlock.Client, name string) func() {
			m := mk(c, name)
			require.NoError(t, m.Lock(ctx))
			return func() { require.NoError(t, m.Unlock(ctx)) }
		},
		held: held, channel: channel, msgs: []string{msg}, left: left,
	}
}

func nameCases() []nameCase {
	hash := func(mapped, _ string) []string { return []string{mapped} }
	none := func(string) []string { return nil }
	rl := func(c *interlock.Client, n string) interlock.Locker { return rlock.New(c, n) }
	return []nameCase{
		lockCase("rlock", rl, hash, keys.LockChannel, "0", none),
		lockCase("nonreentrant", func(c *interlock.Client, n string) interlock.Locker { return nonreentrant.New(c, n) },
			hash, keys.LockChannel, "0", none),
		lockCase("spin", func(c *interlock.Client, n string) interlock.Locker { return spin.New(c, n) },
			hash, keys.LockChannel, "0", none),
		lockCase("fenced", func(c *interlock.Client, n string) interlock.Locker { return fenced.New(c, n) },
			func(m, _ string) []string { return []string{m, "redisson_lock_token:{" + m + "}"} },
			keys.LockChannel, "0", func(m string) []string { return []string{"redisson_lock_token:{" + m + "}"} }),
		lockCase("rwlock-read", func(c *interlock.Client, n string) interlock.Locker { return rwlock.New(c, n).Read() },
			func(m, owner string) []string { return []string{m, "{" + m + "}:" + owner + ":rwlock_timeout:1"} },
			func(m string) string { return "redisson_rwlock:{" + m + "}" }, "0", none),
		lockCase("rwlock-write", func(c *interlock.Client, n string) interlock.Locker { return rwlock.New(c, n).Write() },
			hash, func(m string) string { return "redisson_rwlock:{" + m + "}" }, "1", none),
		{
			kind: "semaphore",
			name: func(c *interlock.Client, n string) string { return semaphore.New(c, n).Name() },
			hold: func(ctx context.Context, t *testing.T, c *interlock.Client, n string) func() {
				s := semaphore.New(c, n)
				ok, err := s.TrySetPermits(ctx, 1)
				require.True(t, ok)
				require.NoError(t, err)
				require.NoError(t, s.Acquire(ctx, 1))
				return func() { require.NoError(t, s.Release(ctx, 1)) }
			},
			held:    hash,
			channel: keys.SemaphoreChannel, msgs: []string{"1"},
			left: func(m string) []string { return []string{m} },
		},
		{
			kind: "expirable",
			name: func(c *interlock.Client, n string) string { return semaphore.NewExpirable(c, n).Name() },
			hold: func(ctx context.Context, t *testing.T, c *interlock.Client, n string) func() {
				s := semaphore.NewExpirable(c, n)
				ok, err := s.TrySetPermits(ctx, 1)
				require.True(t, ok)
				require.NoError(t, err)
				ids, err := s.Acquire(ctx, 1, time.Minute)
				require.NoError(t, err)
				return func() { require.NoError(t, s.Release(ctx, ids...)) }
			},
			held:    func(m, _ string) []string { return []string{m, "{" + m + "}:timeout"} },
			channel: keys.SemaphoreChannel, msgs: []string{"1"},
			left: func(m string) []string { return []string{m} },
		},
		{
			kind: "latch",
			name: func(c *interlock.Client, n string) string { return latch.New(c, n).Name() },
			hold: func(ctx context.Context, t *testing.T, c *interlock.Client, n string) func() {
				l := latch.New(c, n)
				ok, err := l.TrySetCount(ctx, 1)
				require.True(t, ok)
				require.NoError(t, err)
				return func() { require.NoError(t, l.CountDown(ctx)) }
			},
			held:    hash,
			channel: keys.LatchChannel, msgs: []string{"0"},
			left: none,
		},
	}
}

// namedKeys returns the keys on the standalone server that contain name,
// less the unlock latches and receipts that are deleted in the background
// (checked for the mapped name all the same), sorted.
func namedKeys(t *testing.T, rc rueidis.Client, name, mapped string) []string {
	t.Helper()
	all, err := rc.Do(testCtx(t, 5*time.Second), rc.B().Keys().Pattern("*"+redistest.Glob(name)+"*").Build()).AsStrSlice()
	require.NoError(t, err)
	var out []string
	for _, k := range all {
		require.Containsf(t, k, mapped, "key %q is not derived from the mapped name %q", k, mapped)
		if !strings.HasPrefix(k, "redisson_unlock_latch:") && !strings.HasPrefix(k, "interlock_receipt:") {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func TestNameMapperKeys(t *testing.T) {
	parallel(t)
	rc := redistest.NewClient(t, standaloneAddr)
	subs := redistest.NewClient(t, standaloneAddr)
	c := newLockClient(t, rc, interlock.WithNameMapper(interlock.PrefixNames(namePrefix)))
	for _, k := range nameCases() {
		t.Run(k.kind, func(t *testing.T) {
			name := unique("names-" + k.kind)
			mapped := namePrefix + name
			t.Cleanup(func() { redistest.DeleteLike([]string{standaloneAddr}, name) })
			ctx := interlock.WithOwner(testCtx(t, 30*time.Second), interlock.NewOwnerID())
			owner, err := c.Owner(ctx)
			require.NoError(t, err)

			assert.Equal(t, name, k.name(c, name), "Name() is the name as given")
			in := redistest.Listen(t, subs, k.channel(mapped), false)
			off := redistest.Listen(t, subs, k.channel(name), false)

			release := k.hold(ctx, t, c, name)
			assert.Equal(t, sorted(k.held(mapped, owner)), namedKeys(t, rc, name, mapped), "keys while held")
			in.Next(t) // a semaphore's or latch's set-up announces too
			release()
			assert.Equal(t, k.msgs, in.Next(t), "messages on %s", k.channel(mapped))
			assert.Empty(t, off.Next(t), "messages on the unmapped channel %s", k.channel(name))
			assert.Equal(t, sorted(k.left(mapped)), namedKeys(t, rc, name, mapped), "keys left")
		})
	}
}

// TestNameMapperFairLock: a fair lock's waiter queues under the mapped
// name's queue and deadline keys and is woken on its own channel under the
// mapped name. The waiter is on another Client, so that the release is a
// message rather than a hand-off within one Client.
func TestNameMapperFairLock(t *testing.T) {
	parallel(t)
	rc := redistest.NewClient(t, standaloneAddr)
	subs := redistest.NewClient(t, standaloneAddr)
	c := newLockClient(t, rc, interlock.WithNameMapper(interlock.PrefixNames(namePrefix)))
	cB := newLockClient(t, rc, interlock.WithNameMapper(interlock.PrefixNames(namePrefix)))
	name := unique("names-fair")
	mapped := namePrefix + name
	t.Cleanup(func() { redistest.DeleteLike([]string{standaloneAddr}, name) })
	ctxA := interlock.WithOwner(testCtx(t, 30*time.Second), interlock.NewOwnerID())
	ctxB := interlock.WithOwner(testCtx(t, 30*time.Second), interlock.NewOwnerID())
	ownerB, err := cB.Owner(ctxB)
	require.NoError(t, err)

	m, mB := fairlock.New(c, name), fairlock.New(cB, name)
	assert.Equal(t, name, m.Name())
	require.NoError(t, m.Lock(ctxA))
	in := redistest.Listen(t, subs, keys.LockChannel(mapped)+":"+ownerB, false)
	done := make(chan error, 1)
	go func() { done <- mB.Lock(ctxB) }()
	queue, deadlines := "redisson_lock_queue:{"+mapped+"}", "redisson_lock_timeout:{"+mapped+"}"
	require.Eventually(t, func() bool {
		n, err := rc.Do(ctxA, rc.B().Llen().Key(queue).Build()).AsInt64()
		return err == nil && n == 1
	}, 10*time.Second, 5*time.Millisecond, "B queues in %s", queue)
	assert.Equal(t, sorted([]string{mapped, queue, deadlines}), namedKeys(t, rc, name, mapped))
	require.NoError(t, m.Unlock(ctxA))
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("B was not woken")
	}
	assert.Equal(t, []string{"0"}, in.Next(t), "B's wake-up")
	require.NoError(t, mB.Unlock(ctxB))
	assert.Empty(t, namedKeys(t, rc, name, mapped))
}

// TestNameMapperRefusesBadNames: a mapped name that is no valid lock name
// is refused with ErrInvalid before anything is sent, by every kind.
func TestNameMapperRefusesBadNames(t *testing.T) {
	parallel(t)
	rc := redistest.NewClient(t, standaloneAddr)
	for _, bad := range []interlock.NameMapper{interlock.PrefixNames("{"), emptyNames{}} {
		c := newLockClient(t, rc, interlock.WithNameMapper(bad))
		name := unique("names-bad")
		ctx := testCtx(t, 10*time.Second)
		calls := map[string]func() error{
			"rlock":        func() error { return rlock.New(c, name).Lock(ctx) },
			"fairlock":     func() error { return fairlock.New(c, name).Lock(ctx) },
			"rwlock":       func() error { return rwlock.New(c, name).Write().Lock(ctx) },
			"fenced":       func() error { return fenced.New(c, name).Lock(ctx) },
			"nonreentrant": func() error { return nonreentrant.New(c, name).Lock(ctx) },
			"spin":         func() error { return spin.New(c, name).Lock(ctx) },
			"semaphore":    func() error { _, err := semaphore.New(c, name).TrySetPermits(ctx, 1); return err },
			"expirable":    func() error { _, err := semaphore.NewExpirable(c, name).TrySetPermits(ctx, 1); return err },
			"latch":        func() error { _, err := latch.New(c, name).TrySetCount(ctx, 1); return err },
		}
		for kind, call := range calls {
			err := call()
			require.ErrorIsf(t, err, interlock.ErrInvalid, "%s with mapper %T", kind, bad)
			assert.Containsf(t, err.Error(), "is mapped to an invalid name", "%s: %v", kind, err)
		}
		assert.Empty(t, namedKeys(t, rc, name, ""), "nothing was written")
	}
}

// emptyNames maps every name to "".
type emptyNames struct{}

func (emptyNames) Map(string) string   { return "" }
func (emptyNames) Unmap(string) string { return "" }

// TestNameMapperReportsGivenNames: errors and the Observer's OpLost events name
// the lock as the caller did, although the Client works on the mapped key.
func TestNameMapperReportsGivenNames(t *testing.T) {
	parallel(t)
	rc := redistest.NewClient(t, standaloneAddr)
	obs := &lostNames{}
	c := newLockClient(t, rc, interlock.WithNameMapper(interlock.PrefixNames(namePrefix)),
		interlock.WithObserver(obs), interlock.WithWatchdogTimeout(300*time.Millisecond))
	name := unique("names-lost")
	t.Cleanup(func() { redistest.DeleteLike([]string{standaloneAddr}, name) })
	ctx := interlock.WithOwner(testCtx(t, 30*time.Second), interlock.NewOwnerID())

	m := rlock.New(c, name)
	var ie *interlock.Error
	err := m.Unlock(ctx)
	require.ErrorIs(t, err, interlock.ErrNotHeld)
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, name, ie.Name)

	require.NoError(t, m.Lock(ctx))
	g := m.Guard(ctx)
	require.NoError(t, rc.Do(ctx, rc.B().Del().Key(namePrefix+name).Build()).Error())
	select {
	case <-g.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the lost hold's guard did not end")
	}
	require.ErrorIs(t, context.Cause(g), interlock.ErrLockLost)
	require.Eventually(t, func() bool { return len(obs.names()) > 0 }, 5*time.Second, 5*time.Millisecond)
	assert.Equal(t, []string{name}, obs.names())
}

// lostNames records the names of the OpLost events.
type lostNames struct {
	mu   sync.Mutex
	lost []string
}

func (o *lostNames) Observe(_ context.Context, e interlock.Event) {
	if e.Op == interlock.OpLost && errors.Is(e.Err, interlock.ErrLockLost) {
		o.mu.Lock()
		o.lost = append(o.lost, e.Name)
		o.mu.Unlock()
	}
}

func (o *lostNames) names() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.lost)
}
