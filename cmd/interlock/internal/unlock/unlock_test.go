//go:build unix

package unlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/cmd/interlock/internal/clitest"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/fenced"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/rlock"
	"github.com/interlock-go/interlock/rwlock"
)

func TestUnlockNeedsForce(t *testing.T) {
	t.Parallel()
	lock := clitest.LockName(t)
	// A watchdog timeout of 1s: held until the forced unlock, however late
	// a loaded machine runs the renewals; the holder learns of it a third
	// of that later.
	c, rc := clitest.NewLockClient(t, interlock.WithWatchdogTimeout(time.Second))
	m := rlock.New(c, lock)
	ctx := interlock.WithOwner(t.Context(), 1)
	require.NoError(t, m.Lock(ctx))
	guard := m.Guard(ctx)

	res := clitest.Run(t, Command, "--redis", clitest.RedisURL(), lock)
	assert.Equal(t, exit.Usage, res.Code)
	assert.Contains(t, res.Stderr, "interlock: unlock: refusing to unlock")
	assert.Contains(t, res.Stderr, "--force")
	assert.NotContains(t, res.Stderr, c.ID(), "errors never show owner ids")
	assert.True(t, clitest.Exists(t, rc, lock), "the lock is still there")

	res = clitest.Run(t, Command, "--redis", clitest.RedisURL(), "--force", lock)
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Equal(t, lock+": unlocked (forced, reentrant)\n", res.Stdout)
	assert.False(t, clitest.Exists(t, rc, lock))
	// The holder learns of it at its next renewal.
	<-guard.Done()
	assert.ErrorIs(t, context.Cause(guard), interlock.ErrLockLost)

	res = clitest.Run(t, Command, "--redis", clitest.RedisURL(), "--force", lock)
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Equal(t, lock+": was not locked\n", res.Stdout)
}

func TestUnlockUsage(t *testing.T) {
	t.Parallel()
	assert.Equal(t, exit.Usage, clitest.Run(t, Command, "--force").Code)
	assert.Equal(t, exit.Usage, clitest.Run(t, Command, "--force", "a", "b").Code)
	assert.Equal(t, exit.Usage, clitest.Run(t, Command, "--force", "x}y").Code)
	res := clitest.Run(t, Command, "--force", "--kind", "spin", "x")
	assert.Equal(t, exit.Usage, res.Code)
	assert.Contains(t, res.Stderr, `unknown --kind "spin"`)
}

// unlock --force uses the force-unlock of the kind it finds: the holders
// learn of it, and the waiters are woken.
func TestUnlockEveryKind(t *testing.T) {
	t.Parallel()
	// Held until the forced unlock, however late a loaded machine runs
	// the renewals.
	c, rc := clitest.NewLockClient(t, interlock.WithWatchdogTimeout(time.Second))

	t.Run("fair", func(t *testing.T) {
		t.Parallel()
		lock := clitest.LockName(t)
		// The default watchdog: the lease (30s) is far longer than the
		// wait for the waiter below, which must be woken by the message.
		c, _ := clitest.NewLockClient(t)
		m := fairlock.New(c, lock)
		holder := interlock.WithOwner(t.Context(), 1)
		require.NoError(t, m.Lock(holder))
		queue := keys.Prefix(keys.FairQueuePrefix, lock)
		waiter := interlock.WithOwner(t.Context(), 2)
		acquired := make(chan error, 1)
		go func() { acquired <- m.Lock(waiter) }()
		require.Eventually(t, func() bool { return clitest.Exists(t, rc, queue) }, 10*time.Second, 5*time.Millisecond)

		res := clitest.Run(t, Command, "--redis", clitest.RedisURL(), "--force", lock)
		require.Equal(t, 0, res.Code, res.Stderr)
		assert.Equal(t, lock+": unlocked (forced, fair)\n", res.Stdout)
		// The head of the queue is woken at once.
		select {
		case err := <-acquired:
			require.NoError(t, err)
		case <-time.After(clitest.Slack):
			t.Fatal("the waiter was not woken")
		}
		require.NoError(t, m.Unlock(waiter))
		assert.False(t, clitest.Exists(t, rc, queue))
	})

	t.Run("read", func(t *testing.T) {
		t.Parallel()
		lock := clitest.LockName(t)
		rw := rwlock.New(c, lock)
		one, two := interlock.WithOwner(t.Context(), 1), interlock.WithOwner(t.Context(), 2)
		require.NoError(t, rw.Read().Lock(one))
		require.NoError(t, rw.Read().Lock(two))
		guard := rw.Read().Guard(one)

		res := clitest.Run(t, Command, "--redis", clitest.RedisURL(), "--force", lock)
		require.Equal(t, 0, res.Code, res.Stderr)
		assert.Equal(t, lock+": unlocked (forced, read)\n", res.Stdout)
		assert.False(t, clitest.Exists(t, rc, lock))
		<-guard.Done()
		assert.ErrorIs(t, context.Cause(guard), interlock.ErrLockLost)
		// A writer gets in now.
		ok, err := rw.Write().TryLock(one, 0, time.Second)
		require.NoError(t, err)
		assert.True(t, ok)
	})

	t.Run("write", func(t *testing.T) {
		t.Parallel()
		lock := clitest.LockName(t)
		rw := rwlock.New(c, lock)
		one := interlock.WithOwner(t.Context(), 1)
		require.NoError(t, rw.Write().Lock(one))
		guard := rw.Write().Guard(one)

		// Asked to unlock it as a read lock, unlock leaves it.
		res := clitest.Run(t, Command, "--redis", clitest.RedisURL(), "--force", "--kind", "read", lock)
		assert.Equal(t, exit.Failure, res.Code)
		assert.Contains(t, res.Stderr, "is still locked: it is not locked as a read lock")
		assert.True(t, clitest.Exists(t, rc, lock))

		res = clitest.Run(t, Command, "--redis", clitest.RedisURL(), "--force", lock)
		require.Equal(t, 0, res.Code, res.Stderr)
		assert.Equal(t, lock+": unlocked (forced, write)\n", res.Stdout)
		assert.False(t, clitest.Exists(t, rc, lock))
		<-guard.Done()
		assert.ErrorIs(t, context.Cause(guard), interlock.ErrLockLost)
	})

	t.Run("fenced", func(t *testing.T) {
		t.Parallel()
		lock := clitest.LockName(t)
		m := fenced.New(c, lock)
		ctx := interlock.WithOwner(t.Context(), 1)
		token, err := m.LockToken(ctx)
		require.NoError(t, err)
		guard := m.Guard(ctx)

		res := clitest.Run(t, Command, "--redis", clitest.RedisURL(), "--force", lock)
		require.Equal(t, 0, res.Code, res.Stderr)
		assert.Equal(t, lock+": unlocked (forced, fenced)\n", res.Stdout)
		assert.False(t, clitest.Exists(t, rc, lock))
		<-guard.Done()
		assert.ErrorIs(t, context.Cause(guard), interlock.ErrLockLost)
		got, err := m.Token(ctx)
		require.NoError(t, err)
		assert.Equal(t, token, got, "the token counter stays")
	})

	t.Run("kind given", func(t *testing.T) {
		t.Parallel()
		lock := clitest.LockName(t)
		m := fairlock.New(c, lock)
		ctx := interlock.WithOwner(t.Context(), 1)
		require.NoError(t, m.Lock(ctx))
		res := clitest.Run(t, Command, "--redis", clitest.RedisURL(), "--force", "--kind", "fair", lock)
		require.Equal(t, 0, res.Code, res.Stderr)
		assert.Equal(t, lock+": unlocked (forced, fair)\n", res.Stdout)
	})
}

// unlock refuses a --kind that contradicts what Redis holds, and keys
// that are no locks of the kind, with 64, naming the key and what it
// holds; nothing is deleted.
func TestUnlockRefusesOtherKinds(t *testing.T) {
	t.Parallel()
	_, rc := clitest.NewLockClient(t)
	base := clitest.LockName(t)
	fair, rw, str := base+":fair", base+":rw", base+":str"
	queue := keys.Prefix(keys.FairQueuePrefix, fair)
	app, count, list, sem := base+":app", base+":count", base+":list", base+":sem"
	badQueue := base + ":badqueue"
	badQueueKey := keys.Prefix(keys.FairQueuePrefix, badQueue)
	clitest.Do(t, rc, []string{
		"HSET " + fair + " u:1 1", "RPUSH " + queue + " u:2",
		"HSET " + rw + " mode read u:1 1",
		"SET " + str + " x",
		"HSET " + app + " a 1 " + clitest.JavaA + ":1 1",
		"HSET " + count + " " + clitest.JavaA + ":1 many",
		"RPUSH " + list + " job",
		"SET " + sem + " 5",
		"HSET " + badQueue + " " + clitest.JavaA + ":1 1", "SET " + badQueueKey + " x",
	}, fair, queue, rw, str, app, count, list, sem, badQueue, badQueueKey)
	for _, tc := range []struct {
		lock, kind, want string
	}{
		{fair, "reentrant", "is a fair lock, not a reentrant lock; use --kind fair, or no --kind"},
		{rw, "fenced", "is a read/write lock, not a fenced lock; use --kind read or --kind write"},
		{fair, "read", "is a fair lock, not a read lock"},
		{str, "", `"` + str + `" is no reentrant lock: it holds a string, "x", not an integer; it was not deleted`},
		{app, "", `"` + app + `" is no reentrant lock: it holds a hash, no lock (field "a": not "<client id>:<owner id>"); it was not deleted`},
		{app, "fenced", `"` + app + `" is no fenced lock: it holds a hash, no lock (field "a"`},
		{count, "", `it holds a hash, no lock (field "` + clitest.JavaA + `:1": hold count "many" is not an integer)`},
		{list, "", `"` + list + `" is no reentrant lock: it holds a list; it was not deleted`},
		{sem, "", `"` + sem + `" is no reentrant lock: it holds the integer 5, the count of a semaphore or a latch`},
		{sem, "fair", `"` + sem + `" is no fair lock: it holds the integer 5`},
		{badQueue, "fair", badQueueKey + ` holds a string, not a fair lock's queue (a list)`},
	} {
		args := []string{"--redis", clitest.RedisURL(), "--force", tc.lock}
		if tc.kind != "" {
			args = append(args, "--kind", tc.kind)
		}
		res := clitest.Run(t, Command, args...)
		assert.Equal(t, exit.Usage, res.Code, tc)
		assert.Contains(t, res.Stderr, tc.want, tc)
		assert.Empty(t, res.Stdout, tc)
	}
	for _, k := range []string{fair, queue, rw, str, app, count, list, sem, badQueue, badQueueKey} {
		assert.True(t, clitest.Exists(t, rc, k), "%s is still there", k)
	}
	fields, err := rc.Do(t.Context(), rc.B().Hgetall().Key(app).Build()).AsStrMap()
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": "1", clitest.JavaA + ":1": "1"}, fields, "the application's hash is untouched")
}
