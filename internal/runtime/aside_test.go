package runtime_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/script"
	"github.com/interlock-go/interlock/rlock"
)

// roundCounting counts the renewal rounds sent on the client and on a
// connection it dedicated.
type roundCounting struct {
	rueidis.Client
	onClient, aside atomic.Int64
}

func isRound(cmds []rueidis.Completed) bool {
	args := cmds[0].Commands()
	return len(args) > 1 && args[0] == "EVALSHA" && args[1] == script.Renew().SHA1()
}

func (c *roundCounting) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	if isRound(cmds) {
		c.onClient.Add(1)
	}
	return c.Client.DoMulti(ctx, cmds...)
}

func (c *roundCounting) Dedicate() (rueidis.DedicatedClient, func()) {
	dc, release := c.Client.Dedicate()
	return &roundCountingConn{DedicatedClient: dc, c: c}, release
}

// Nodes returns the nodes of a cluster client, each dedicating
// connections whose rounds are counted as the client's are.
func (c *roundCounting) Nodes() map[string]rueidis.Client {
	nodes := c.Client.Nodes()
	for addr, n := range nodes {
		nodes[addr] = &roundCountingNode{Client: n, c: c}
	}
	return nodes
}

type roundCountingNode struct {
	rueidis.Client
	c *roundCounting
}

func (n *roundCountingNode) Dedicate() (rueidis.DedicatedClient, func()) {
	dc, release := n.Client.Dedicate()
	return &roundCountingConn{DedicatedClient: dc, c: n.c}, release
}

type roundCountingConn struct {
	rueidis.DedicatedClient
	c *roundCounting
}

func (d *roundCountingConn) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	if isRound(cmds) {
		d.c.aside.Add(1)
	}
	return d.DedicatedClient.DoMulti(ctx, cmds...)
}

// Outside a cluster the renewal rounds go on a connection of their own
// once the Client has sent a script, so that they never share the one of
// the scripts with a caller (which would leave rueidis's synchronous mode
// there for good); after that connection is killed, the next rounds
// reconnect and renew.
func TestRoundsGoAside(t *testing.T) {
	rc := &roundCounting{Client: redistest.NewClient(t, addr)}
	c, err := interlock.New(rc, interlock.WithWatchdogTimeout(300*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	m := rlock.New(c, "aside:"+t.Name())
	require.NoError(t, m.Lock(ctx))
	require.Eventually(t, func() bool { return rc.aside.Load() >= 3 }, 5*time.Second, 10*time.Millisecond)
	assert.LessOrEqual(t, rc.onClient.Load(), int64(1), "only a round sent before the connection was dialled goes on the client")

	admin := redistest.NewClient(t, addr)
	n, err := admin.Do(ctx, admin.B().ClientKill().TypeNormal().Build()).AsInt64()
	require.NoError(t, err)
	require.Positive(t, n)
	seen := rc.aside.Load()
	require.Eventually(t, func() bool { return rc.aside.Load() >= seen+3 }, 5*time.Second, 10*time.Millisecond)
	time.Sleep(400 * time.Millisecond) // longer than the lease: only renewals keep it
	ttl, err := admin.Do(ctx, admin.B().Pttl().Key(m.Name()).Build()).AsInt64()
	require.NoError(t, err)
	assert.Positive(t, ttl, "renewed after the kill")
	require.NoError(t, m.Unlock(ctx))
}

// On a cluster the rounds go on a connection per master, and after those
// connections are killed, on new ones.
func TestRoundsGoAsideOnCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	cl := redistest.Cluster(t)
	rc := &roundCounting{Client: cl.Client(t)}
	c, err := interlock.New(rc, interlock.WithWatchdogTimeout(300*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	var locks []*rlock.Mutex
	for i := range 12 { // on every master
		m := rlock.New(c, fmt.Sprintf("aside:%s:%d", t.Name(), i))
		require.NoError(t, m.Lock(ctx))
		locks = append(locks, m)
	}
	require.Eventually(t, func() bool { return rc.aside.Load() >= 9 }, 5*time.Second, 10*time.Millisecond)
	assert.LessOrEqual(t, rc.onClient.Load(), int64(1), "only a round sent before the connections were dialled goes on the client")

	for _, n := range cl.Nodes() {
		admin := n.Client(t)
		_, err := admin.Do(ctx, admin.B().ClientKill().TypeNormal().Build()).AsInt64()
		require.NoError(t, err)
	}
	seen := rc.aside.Load()
	require.Eventually(t, func() bool { return rc.aside.Load() >= seen+9 }, 5*time.Second, 10*time.Millisecond)
	time.Sleep(400 * time.Millisecond) // longer than the lease: only renewals keep them
	for _, m := range locks {
		held, err := m.IsLocked(ctx)
		require.NoError(t, err)
		assert.True(t, held, "%s renewed after the kill", m.Name())
		require.NoError(t, m.Unlock(ctx))
	}
}
