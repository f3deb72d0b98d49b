//go:build unix

package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/cmd/interlock/internal/clitest"
	"github.com/interlock-go/interlock/cmd/interlock/internal/kinds"
	"github.com/interlock-go/interlock/internal/keys"
)

// While run waits on a semaphore nobody set up, inspect shows it as a
// semaphore with its waiter, not as a free name.
func TestInspectShowsWaitersOfAnUnsetSemaphore(t *testing.T) {
	t.Parallel()
	_, rc := clitest.NewLockClient(t)
	name := clitest.LockName(t)
	cmd := clitest.Command("run", "--redis", clitest.RedisURL(), "--kind", "expirable-semaphore", name, "--", "true")
	var stderr clitest.SyncBuffer
	cmd.Stderr = &stderr
	clitest.Start(t, cmd)
	channel := keys.SemaphoreChannel(name)
	require.Eventually(t, func() bool {
		n, err := rc.Do(t.Context(), rc.B().PubsubNumsub().Channel(channel).Build()).AsIntMap()
		return err == nil && n[channel] > 0
	}, 10*time.Second, 10*time.Millisecond, "run waits on the semaphore's channel")

	reports := inspectJSON(t, name)
	require.Len(t, reports, 1)
	r := reports[0]
	assert.Equal(t, kinds.Semaphore, r.Kind)
	assert.Equal(t, int64(1), r.Subscribers)
	require.NotNil(t, r.Permits)
	assert.Equal(t, int64(0), *r.Permits)
	assert.Contains(t, r.Notes, "there is no key: the semaphore is not set up, and no permit is free")

	res := runInProcess(t, "inspect", "--redis", clitest.RedisURL(), name)
	require.Equal(t, 0, res.Code, res.Stderr)
	lines := clitest.FieldLines(res.Stdout)
	require.GreaterOrEqual(t, len(lines), 2, res.Stdout)
	assert.Equal(t, name+" semaphore - - - - - 0 permits available, 1 subscribed (waiting)", lines[1])

	// Once set up, the waiter gets its permit and run ends.
	res = runInProcess(t, "semaphore", "--redis", clitest.RedisURL(), "init", name, "1")
	require.Equal(t, 0, res.Code, res.Stderr)
	clitest.CleanupKeys(t, rc, name)
	assert.Equal(t, 0, clitest.Wait(t, cmd), stderr.String())
}
