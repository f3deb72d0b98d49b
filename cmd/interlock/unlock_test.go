//go:build unix

package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/rlock"
)

func TestUnlockNeedsForce(t *testing.T) {
	t.Parallel()
	lock := lockName(t)
	c, rc := newLockClient(t, interlock.WithWatchdogTimeout(300*time.Millisecond))
	m := rlock.New(c, lock)
	ctx := interlock.WithOwner(t.Context(), 1)
	require.NoError(t, m.Lock(ctx))
	guard := m.Guard(ctx)

	res := runInProcess(t, "unlock", "--redis", redisURL(), lock)
	assert.Equal(t, exitUsage, res.code)
	assert.Contains(t, res.stderr, "interlock: unlock: refusing to unlock")
	assert.Contains(t, res.stderr, "--force")
	assert.NotContains(t, res.stderr, c.ID(), "errors never show owner ids")
	assert.True(t, exists(t, rc, lock), "the lock is still there")

	res = runInProcess(t, "unlock", "--redis", redisURL(), "--force", lock)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Equal(t, lock+": unlocked (forced)\n", res.stdout)
	assert.False(t, exists(t, rc, lock))
	// The holder learns of it at its next renewal.
	<-guard.Done()
	assert.ErrorIs(t, context.Cause(guard), rlock.ErrLockLost)

	res = runInProcess(t, "unlock", "--redis", redisURL(), "--force", lock)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Equal(t, lock+": was not locked\n", res.stdout)
}

func TestUnlockRefusesKindsNotSupportedYet(t *testing.T) {
	t.Parallel()
	lock := lockName(t)
	_, rc := newLockClient(t)
	ctx := t.Context()
	queue := keys.Prefix(prefixFairQueue, lock)
	require.NoError(t, rc.Do(ctx, rc.B().Hset().Key(lock).FieldValue().FieldValue("u:1", "1").Build()).Error())
	require.NoError(t, rc.Do(ctx, rc.B().Rpush().Key(queue).Element("u:2").Build()).Error())
	t.Cleanup(func() { rc.Do(context.Background(), rc.B().Del().Key(lock, queue).Build()) })

	res := runInProcess(t, "unlock", "--redis", redisURL(), "--force", lock)
	assert.Equal(t, exitUsage, res.code)
	assert.Contains(t, res.stderr, "is a fair lock; unlocking it is not supported yet")
	assert.True(t, exists(t, rc, lock))
}

func TestUnlockUsage(t *testing.T) {
	t.Parallel()
	assert.Equal(t, exitUsage, runInProcess(t, "unlock", "--force").code)
	assert.Equal(t, exitUsage, runInProcess(t, "unlock", "--force", "a", "b").code)
	assert.Equal(t, exitUsage, runInProcess(t, "unlock", "--force", "x}y").code)
}
