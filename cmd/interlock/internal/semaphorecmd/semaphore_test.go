//go:build unix

package semaphorecmd

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/cmd/interlock/internal/clitest"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
)

func TestSemaphoreInitAdd(t *testing.T) {
	t.Parallel()
	_, rc := clitest.NewLockClient(t)
	name, ttlName := clitest.LockName(t), clitest.LockName(t)+":ttl"
	clitest.CleanupKeys(t, rc, name, ttlName)

	res := clitest.Run(t, Command, "--redis", clitest.RedisURL(), "init", name, "2")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Equal(t, name+": set to 2 permits\n", res.Stdout)
	res = clitest.Run(t, Command, "init", "--redis", clitest.RedisURL(), name, "5")
	assert.Equal(t, exit.Failure, res.Code)
	assert.Equal(t, "interlock: semaphore init: \""+name+"\" is already set (2 permits available); nothing changed\n", res.Stderr)
	assert.Equal(t, int64(2), clitest.Available(t, rc, name))

	res = clitest.Run(t, Command, "add", name, "3", "--redis", clitest.RedisURL())
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Equal(t, name+": added 3 permits\n", res.Stdout)
	assert.Equal(t, int64(5), clitest.Available(t, rc, name))
	res = clitest.Run(t, Command, "--redis", clitest.RedisURL(), "add", name, "-2")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Equal(t, name+": took away 2 permits\n", res.Stdout)
	res = clitest.Run(t, Command, "--redis", clitest.RedisURL(), "--kind", "expirable-semaphore", "add", name, "--", "-1")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Equal(t, int64(2), clitest.Available(t, rc, name))

	res = clitest.Run(t, Command, "--redis", clitest.RedisURL(), "init", "--ttl", "10s", ttlName, "1")
	require.Equal(t, 0, res.Code, res.Stderr)
	ttl, err := rc.Do(t.Context(), rc.B().Pttl().Key(ttlName).Build()).AsInt64()
	require.NoError(t, err)
	assert.InDelta(t, 10000, ttl, float64(clitest.Slack.Milliseconds()))
}
