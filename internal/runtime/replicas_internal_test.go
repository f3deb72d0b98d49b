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
	n, recheck := c.get(1, now)
	assert.Equal(t, int64(-1), n, "unknown at first")
	assert.False(t, recheck)

	n, err := c.learn(1, replicationInfo(2, "aaaa"), now)
	require.NoError(t, err)
	assert.Equal(t, int64(2), n)
	_, err = c.learn(2, replicationInfo(2, "aaaa"), now)
	require.NoError(t, err)
	_, err = c.learn(3, replicationInfo(0, "bbbb"), now)
	require.NoError(t, err)
	n, _ = c.get(2, now)
	assert.Equal(t, int64(2), n)
	n, _ = c.get(3, now)
	assert.Zero(t, n)

	c.stale(1) // a WAIT through slot 1 disagreed
	n, _ = c.get(2, now)
	assert.Equal(t, int64(-1), n, "slot 2 has the same master")
	n, _ = c.get(3, now)
	assert.Zero(t, n, "another master")
	_, err = c.learn(2, replicationInfo(1, "aaaa"), now)
	require.NoError(t, err)
	n, _ = c.get(1, now)
	assert.Equal(t, int64(1), n)

	// A slot that moved to another master follows it.
	_, err = c.learn(2, replicationInfo(0, "bbbb"), now)
	require.NoError(t, err)
	c.stale(2)
	n, _ = c.get(3, now)
	assert.Equal(t, int64(-1), n)
	n, _ = c.get(1, now)
	assert.Equal(t, int64(1), n)
}

// An old count is handed out with recheck once per replicaRecheck.
func TestReplicaCountsRecheck(t *testing.T) {
	var c replicaCounts
	now := time.Now()
	_, err := c.learn(0, replicationInfo(0, "aaaa"), now)
	require.NoError(t, err)
	_, recheck := c.get(0, now.Add(replicaRecheck-time.Millisecond))
	assert.False(t, recheck)
	n, recheck := c.get(0, now.Add(replicaRecheck))
	assert.Zero(t, n)
	assert.True(t, recheck)
	_, recheck = c.get(0, now.Add(replicaRecheck+time.Millisecond))
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
	n, _ := c.get(7, now)
	assert.Equal(t, int64(1), n)
}

func TestParseReplication(t *testing.T) {
	n, id, err := parseReplication(replicationInfo(3, "abc"))
	require.NoError(t, err)
	assert.Equal(t, int64(3), n)
	assert.Equal(t, "abc", id)
	_, _, err = parseReplication("# Replication\r\nrole:master\r\n")
	assert.ErrorContains(t, err, "no connected_slaves")
	_, _, err = parseReplication("connected_slaves:x\r\n")
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
	n, recheck := r.replicas.get(0, time.Now())
	assert.Equal(t, int64(1), n, "the count was read again with the script")
	assert.False(t, recheck)

	require.True(t, rueidis.IsRedisNil(r.Exec(ctx, &a, script.Acquire(), []string{name}, []string{"30000", "o:1"}).Error()))
	assert.Equal(t, int64(1), a.want)
	assert.Equal(t, int64(1), a.got)
	require.NoError(t, r.CheckAcks(&a))
}
