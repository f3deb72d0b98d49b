//go:build unix

package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/rlock"
)

// --name-prefix P: run, inspect and unlock work on P+NAME, the key of a
// fleet whose NameMapper prefixes P (interlock.PrefixNames).
func TestNamePrefix(t *testing.T) {
	t.Parallel()
	lock := lockName(t)
	key := "app:" + lock
	c, rc := newLockClient(t, interlock.WithNameMapper(interlock.PrefixNames("app:")))
	m := rlock.New(c, lock)
	ctx := interlock.WithOwner(t.Context(), 1)
	require.NoError(t, m.Lock(ctx))
	require.True(t, exists(t, rc, key))

	res := runInProcess(t, "inspect", "--redis", redisURL(), "--json", "--name-prefix", "app:", lock)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Contains(t, res.stdout, `"name":"`+key+`"`)
	assert.Contains(t, res.stdout, `"locked":true`)

	res = runBinary(t, "", "run", "--redis", redisURL(), "--name-prefix", "app:", "--wait", "100ms", lock, "--", "true")
	assert.Equal(t, exit.Busy, res.code, "run on the prefixed key while it is held: %s", res.stderr)
	res = runBinary(t, "", "run", "--redis", redisURL(), "--wait", "100ms", lock, "--", "true")
	assert.Equal(t, 0, res.code, "run without the prefix is another lock: %s", res.stderr)

	res = runInProcess(t, "unlock", "--redis", redisURL(), "--force", "--name-prefix", "app:", lock)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Equal(t, key+": unlocked (forced, reentrant)\n", res.stdout)
	assert.False(t, exists(t, rc, key))

	res = runBinary(t, "", "run", "--redis", redisURL(), "--name-prefix", "app:", "--wait", "5s", lock, "--", "true")
	assert.Equal(t, 0, res.code, res.stderr)
	assert.Less(t, res.took, 5*time.Second)

	res = runInProcess(t, "unlock", "--force", "--name-prefix", "{", lock)
	assert.Equal(t, exit.Usage, res.code, "a prefixed name that is no valid lock name")
}
