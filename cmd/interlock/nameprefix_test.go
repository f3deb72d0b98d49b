//go:build unix

package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/cmd/interlock/internal/clitest"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/rlock"
)

// --name-prefix P: run, inspect and unlock work on P+NAME, the key of a
// fleet whose NameMapper prefixes P (interlock.PrefixNames).
func TestNamePrefix(t *testing.T) {
	t.Parallel()
	lock := clitest.LockName(t)
	key := "app:" + lock
	c, rc := clitest.NewLockClient(t, interlock.WithNameMapper(interlock.PrefixNames("app:")))
	m := rlock.New(c, lock)
	ctx := interlock.WithOwner(t.Context(), 1)
	require.NoError(t, m.Lock(ctx))
	require.True(t, clitest.Exists(t, rc, key))

	res := runInProcess(t, "inspect", "--redis", clitest.RedisURL(), "--json", "--name-prefix", "app:", lock)
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Contains(t, res.Stdout, `"name":"`+key+`"`)
	assert.Contains(t, res.Stdout, `"locked":true`)

	res = clitest.RunBinary(t, "", "run", "--redis", clitest.RedisURL(), "--name-prefix", "app:", "--wait", "100ms", lock, "--", "true")
	assert.Equal(t, exit.Busy, res.Code, "run on the prefixed key while it is held: %s", res.Stderr)
	res = clitest.RunBinary(t, "", "run", "--redis", clitest.RedisURL(), "--wait", "100ms", lock, "--", "true")
	assert.Equal(t, 0, res.Code, "run without the prefix is another lock: %s", res.Stderr)

	res = runInProcess(t, "unlock", "--redis", clitest.RedisURL(), "--force", "--name-prefix", "app:", lock)
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Equal(t, key+": unlocked (forced, reentrant)\n", res.Stdout)
	assert.False(t, clitest.Exists(t, rc, key))

	res = clitest.RunBinary(t, "", "run", "--redis", clitest.RedisURL(), "--name-prefix", "app:", "--wait", "5s", lock, "--", "true")
	assert.Equal(t, 0, res.Code, res.Stderr)
	assert.Less(t, res.Took, 5*time.Second)

	res = runInProcess(t, "unlock", "--force", "--name-prefix", "{", lock)
	assert.Equal(t, exit.Usage, res.Code, "a prefixed name that is no valid lock name")
}
