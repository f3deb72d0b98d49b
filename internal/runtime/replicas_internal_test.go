package runtime

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/script"
)

func replicationInfo(n int, id string) string {
	return "# Replication\r\nrole:master\r\nconnected_slaves:" + string(rune('0'+n)) +
		"\r\nmaster_failover_state:no-failover\r\nmaster_replid:" + id + "\r\nmaster_repl_offset:42\r\n"
}

// A count is cached per master: read through one slot, invalidated through
// another, re-read through a third.
func TestReplicaCountsPerMaster(t *testing.T) {
	var c replicaCounts
	now := time.Now()
	n, _, recheck := c.get(1, now, false)
	assert.Equal(t, int64(-1), n, "unknown at first")
	assert.False(t, recheck)

	n, err := c.learn(1, replicationInfo(2, "aaaa"), now)
	require.NoError(t, err)
	assert.Equal(t, int64(2), n)
	_, err = c.learn(2, replicationInfo(2, "aaaa"), now)
	require.NoError(t, err)
	_, err = c.learn(3, replicationInfo(0, "bbbb"), now)
	require.NoError(t, err)
	n, _, _ = c.get(2, now, false)
	assert.Equal(t, int64(2), n)
	n, _, _ = c.get(3, now, false)
	assert.Zero(t, n)

	c.stale(1, false) // a WAIT through slot 1 disagreed
	n, _, _ = c.get(2, now, false)
	assert.Equal(t, int64(-1), n, "slot 2 has the same master")
	n, _, _ = c.get(3, now, false)
	assert.Zero(t, n, "another master")
	_, err = c.learn(2, replicationInfo(1, "aaaa"), now)
	require.NoError(t, err)
	n, _, _ = c.get(1, now, false)
	assert.Equal(t, int64(1), n)

	// A slot that moved to another master follows it.
	_, err = c.learn(2, replicationInfo(0, "bbbb"), now)
	require.NoError(t, err)
	c.stale(2, false)
	n, _, _ = c.get(3, now, false)
	assert.Equal(t, int64(-1), n)
	n, _, _ = c.get(1, now, false)
	assert.Equal(t, int64(1), n)
}

// An old count is handed out with recheck once per replicaRecheck.
func TestReplicaCountsRecheck(t *testing.T) {
	var c replicaCounts
	now := time.Now()
	_, err := c.learn(0, replicationInfo(0, "aaaa"), now)
	require.NoError(t, err)
	_, _, recheck := c.get(0, now.Add(replicaRecheck-time.Millisecond), false)
	assert.False(t, recheck)
	n, _, recheck := c.get(0, now.Add(replicaRecheck), false)
	assert.Zero(t, n)
	assert.True(t, recheck)
	_, _, recheck = c.get(0, now.Add(replicaRecheck+time.Millisecond), false)
	assert.False(t, recheck, "one caller rechecks")
}

// Masters no slot points to are forgotten once there are many.
func TestReplicaCountsForget(t *testing.T) {
	var c replicaCounts
	now := time.Now()
	for i := range 3 * replicaNodesMax {
		_, err := c.learn(7, replicationInfo(1, "id"+string(rune('A'+i%26))+string(rune('a'+i/26))), now)
		require.NoError(t, err)
	}
	assert.LessOrEqual(t, len(c.nodes), replicaNodesMax)
	n, _, _ := c.get(7, now, false)
	assert.Equal(t, int64(1), n)
}

func TestParseReplication(t *testing.T) {
	n, id, _, err := parseReplication(replicationInfo(3, "abc"))
	require.NoError(t, err)
	assert.Equal(t, int64(3), n)
	assert.Equal(t, "abc", id)
	_, _, _, err = parseReplication("# Replication\r\nrole:master\r\n")
	assert.ErrorContains(t, err, "no connected_slaves")
	_, _, _, err = parseReplication("connected_slaves:x\r\n")
	assert.ErrorContains(t, err, "bad connected_slaves")
}

// A count of 0 grown old is read again in the pipeline of a call, so a
// replica that joined later is waited for from the next call on.
func TestReplicaSyncRecheckFindsNewReplicas(t *testing.T) {
	master, _ := redistest.Replicated(t)
	rc := redistest.NewClient(t, master.Addr())
	r, err := New(rc, Config{Watchdog: 30 * time.Second, BatchSize: 100, ReplicaSync: true,
		ReplicaTimeout: time.Second})
	require.NoError(t, err)
	t.Cleanup(r.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res := rc.DoMulti(ctx, rc.B().Set().Key("warm").Value("1").Build(), rc.B().Wait().Numreplicas(1).Timeout(10000).Build())
	require.NoError(t, res[1].Error())

	// As if the master had had no replica 11s ago.
	_, err = r.replicas.learn(0, replicationInfo(0, "old"), time.Now().Add(-replicaRecheck-time.Second))
	require.NoError(t, err)
	name := "recheck:" + t.Name()
	t.Cleanup(func() { rc.Do(context.Background(), rc.B().Del().Key(name).Build()) })
	var a Acks
	require.True(t, rueidis.IsRedisNil(r.Exec(ctx, &a, script.Acquire(), []string{name}, []string{"30000", "o:1"}).Error()))
	assert.Zero(t, a.want, "no WAIT with the old count of 0")
	require.NoError(t, r.CheckAcks(&a))
	n, _, recheck := r.replicas.get(0, time.Now(), false)
	assert.Equal(t, int64(1), n, "the count was read again with the script")
	assert.False(t, recheck)

	require.True(t, rueidis.IsRedisNil(r.Exec(ctx, &a, script.Acquire(), []string{name}, []string{"30000", "o:1"}).Error()))
	assert.Equal(t, int64(1), a.want)
	assert.Equal(t, int64(1), a.got)
	require.NoError(t, r.CheckAcks(&a))
}

// With the AOF check, a master with AOF on is read (and probed) before it
// gets WAITAOF; a refused probe or a master without AOF gets WAIT; a
// refused WAITAOF has it probed again.
func TestReplicaCountsAOF(t *testing.T) {
	var c replicaCounts
	now := time.Now()
	aofOn := replicationInfo(1, "aaaa") + "\r\n# Persistence\r\naof_enabled:1\r\n"
	_, err := c.learn(0, aofOn, now)
	require.NoError(t, err)
	n, aof, _ := c.get(0, now, false)
	assert.Equal(t, int64(1), n, "without the check the AOF state does not matter")
	assert.False(t, aof)
	n, _, _ = c.get(0, now, true)
	assert.Equal(t, int64(-1), n, "AOF on and not probed: read and probe first")
	c.probed(0, true)
	n, aof, _ = c.get(0, now, true)
	assert.Equal(t, int64(1), n)
	assert.True(t, aof)

	c.stale(0, false) // a WAITAOF answered 0: the probe still holds
	_, err = c.learn(0, aofOn, now)
	require.NoError(t, err)
	_, aof, _ = c.get(0, now, true)
	assert.True(t, aof)

	c.stale(0, true) // a WAITAOF was refused
	_, err = c.learn(0, aofOn, now)
	require.NoError(t, err)
	n, _, _ = c.get(0, now, true)
	assert.Equal(t, int64(-1), n, "probed again")
	c.probed(0, false)
	n, aof, _ = c.get(0, now, true)
	assert.Equal(t, int64(1), n)
	assert.False(t, aof, "a refused probe means WAIT")

	// AOF turned off: WAIT, whatever the probe said.
	_, err = c.learn(1, replicationInfo(1, "bbbb")+"aof_enabled:0\r\n", now)
	require.NoError(t, err)
	c.probed(1, true)
	n, aof, _ = c.get(1, now, true)
	assert.Equal(t, int64(1), n)
	assert.False(t, aof)

	_, _, aof, err = parseReplication(aofOn)
	require.NoError(t, err)
	assert.True(t, aof)
}
