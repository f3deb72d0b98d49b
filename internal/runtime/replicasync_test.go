package runtime_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/rlock"
	"github.com/interlock-go/interlock/semaphore"
)

// counter passes every command to the real client and keeps a copy of its
// words, grouped by pipeline; it changes nothing.
type counter struct {
	rueidis.Client
	mu   sync.Mutex
	sent [][][]string // one entry per Do or DoMulti
}

func (c *counter) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.add(cmd)
	return c.Client.Do(ctx, cmd)
}

func (c *counter) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	c.add(cmds...)
	return c.Client.DoMulti(ctx, cmds...)
}

// add copies the words before rueidis recycles the commands.
func (c *counter) add(cmds ...rueidis.Completed) {
	p := make([][]string, len(cmds))
	for i := range cmds {
		p[i] = slices.Clone(cmds[i].Commands())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sent = append(c.sent, p)
}

// commands returns the commands sent so far whose first word is name.
func (c *counter) commands(name string) [][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out [][]string
	for _, p := range c.sent {
		for _, cmd := range p {
			if cmd[0] == name {
				out = append(out, cmd)
			}
		}
	}
	return out
}

// mark returns a position in the log, for after.
func (c *counter) mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sent)
}

// scriptPipelines returns the pipelines from position from on that ran a
// script on key (its first key), each as the commands' words.
func (c *counter) scriptPipelines(key string, from int) [][][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out [][][]string
	for _, p := range c.sent[from:] {
		if (p[0][0] == "EVALSHA" || p[0][0] == "EVAL") && len(p[0]) > 3 && p[0][3] == key {
			out = append(out, p)
		}
	}
	return out
}

// requireSynced asserts that the first script on key from position from on
// went in a pipeline with WAIT n 1000 and nothing else.
func requireSynced(t *testing.T, c *counter, key string, from, n int) {
	t.Helper()
	ps := c.scriptPipelines(key, from)
	require.NotEmpty(t, ps, "no script on %s", key)
	require.Len(t, ps[0], 2, "pipeline %q", ps[0])
	assert.Equal(t, []string{"WAIT", strconv.Itoa(n), "1000"}, ps[0][1])
}

func syncedClient(t *testing.T, rc rueidis.Client) *interlock.Client {
	t.Helper()
	c, err := interlock.New(rc, interlock.WithReplicaSync(interlock.DefaultReplicaSyncTimeout))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func exists(t *testing.T, rc rueidis.Client, key string) bool {
	t.Helper()
	n, err := rc.Do(context.Background(), rc.B().Exists().Key(key).Build()).AsInt64()
	require.NoError(t, err)
	return n == 1
}

// Replica-sync mode on a master with one replica: the acquire and unlock
// scripts go with WAIT 1 1000; with the replica frozen an acquisition
// (lock or semaphore) fails after the timeout and is taken back; once it
// runs again the count is read anew and locking works.
func TestReplicaSync(t *testing.T) {
	master, replica := redistest.Replicated(t)
	rc := &counter{Client: redistest.NewClient(t, master.Addr())}
	c := syncedClient(t, rc)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	name := "replicasync:" + t.Name()
	m := rlock.New(c, name)
	sem := semaphore.New(c, name+":sem")
	ok, err := sem.TrySetPermits(ctx, 2)
	require.NoError(t, err)
	require.True(t, ok)

	// The replica acknowledges (wait until it does: its first
	// acknowledgements after the initial sync can be slow).
	res := rc.Client.DoMulti(ctx, rc.B().Set().Key("warm").Value("1").Build(), rc.B().Wait().Numreplicas(1).Timeout(10000).Build())
	require.NoError(t, res[1].Error())

	from := rc.mark()
	ok, err = m.TryLock(ctx, 0, 0)
	require.NoError(t, err)
	require.True(t, ok)
	requireSynced(t, rc, name, from, 1)
	require.Len(t, rc.commands("INFO"), 2, "the count is read once, before the first call")
	assert.Equal(t, [][]string{{"INFO", "replication"}, {"INFO", "persistence"}}, rc.commands("INFO"))
	from = rc.mark()
	require.NoError(t, m.Unlock(ctx))
	requireSynced(t, rc, name, from, 1)
	from = rc.mark()
	ok, err = sem.TryAcquire(ctx, 1, 0)
	require.NoError(t, err)
	require.True(t, ok)
	requireSynced(t, rc, name+":sem", from, 1)
	require.NoError(t, sem.Release(ctx, 1))
	assert.Len(t, rc.commands("INFO"), 2, "the count is cached")

	// The replica is frozen: it stays connected, and acknowledges nothing.
	require.NoError(t, replica.Pause())
	t.Cleanup(func() { _ = replica.Resume() })
	start := time.Now()
	ok, err = m.TryLock(ctx, 0, 0)
	took := time.Since(start)
	t.Logf("TryLock with the replica frozen failed after %v", took.Round(time.Millisecond))
	require.ErrorIs(t, err, interlock.ErrReplication)
	assert.Contains(t, err.Error(), "0 of 1 replicas acknowledged within 1s")
	assert.False(t, ok)
	assert.GreaterOrEqual(t, took, time.Second)
	assert.Less(t, took, 3*time.Second, "TryLock must fail, not retry")
	assert.False(t, exists(t, rc, name), "the acquisition was not taken back")
	assert.Zero(t, c.Stats().Holds)
	infos := len(rc.commands("INFO"))

	// A semaphore's acquisition too; after a WAIT that disagreed, the
	// count is read again (still 1: the frozen replica is connected).
	from = rc.mark()
	start = time.Now()
	ok, err = sem.TryAcquire(ctx, 1, 0)
	took = time.Since(start)
	t.Logf("TryAcquire with the replica frozen failed after %v", took.Round(time.Millisecond))
	require.ErrorIs(t, err, interlock.ErrReplication)
	assert.Contains(t, err.Error(), "0 of 1 replicas acknowledged")
	assert.False(t, ok)
	assert.Len(t, rc.commands("INFO"), infos+2, "count not read again after WAIT answered 0")
	requireSynced(t, rc, name+":sem", from, 1)
	require.Eventually(t, func() bool {
		n, err := sem.Available(ctx)
		return err == nil && n == 2
	}, 5*time.Second, 10*time.Millisecond, "the permit was not given back")

	// The replica runs again: both work.
	require.NoError(t, replica.Resume())
	ok, err = m.TryLock(ctx, 0, 0)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, m.Unlock(ctx))
	from = rc.mark()
	ok, err = sem.TryAcquire(ctx, 1, 0)
	require.NoError(t, err)
	require.True(t, ok)
	requireSynced(t, rc, name+":sem", from, 1)
	require.NoError(t, sem.Release(ctx, 1))
}

// With no replica, replica-sync mode reads the count once and sends no WAIT;
// without the option, neither INFO nor WAIT goes out.
func TestReplicaSyncWithoutReplicas(t *testing.T) {
	for _, synced := range []bool{true, false} {
		t.Run("synced="+strconv.FormatBool(synced), func(t *testing.T) {
			rc := &counter{Client: redistest.NewClient(t, addr)}
			var opts []interlock.Option
			if synced {
				opts = append(opts, interlock.WithReplicaSync(interlock.DefaultReplicaSyncTimeout))
			}
			c, err := interlock.New(rc, opts...)
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			name := "replicasync:" + t.Name()
			m := rlock.New(c, name)
			for range 3 {
				require.NoError(t, m.Lock(ctx))
				require.NoError(t, m.Unlock(ctx))
			}
			sem := semaphore.New(c, name+":sem")
			t.Cleanup(func() { rc.Client.Do(context.Background(), rc.B().Del().Key(name+":sem").Build()) })
			_, err = sem.TrySetPermits(ctx, 1)
			require.NoError(t, err)
			ok, err := sem.TryAcquire(ctx, 1, 0)
			require.NoError(t, err)
			require.True(t, ok)
			require.NoError(t, sem.Release(ctx, 1))

			assert.Empty(t, rc.commands("WAIT"))
			want := 0
			if synced {
				want = 2 // INFO replication and INFO persistence
			}
			assert.Len(t, rc.commands("INFO"), want)
			for _, p := range rc.scriptPipelines(name, 0) {
				assert.Len(t, p, 1, "the script goes alone")
			}
		})
	}
}

// On a cluster the count is read from, and WAIT sent to, the node of the
// lock's slot: once for each slot, then from the cache.
func TestReplicaSyncCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster with replicas")
	}
	cl := redistest.ClusterWith(t, redistest.WithReplicas(1))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	masters := cl.Masters()
	direct := make(map[*redistest.Server]rueidis.Client)
	for _, n := range masters {
		d := n.Client(t)
		direct[n] = d
		// Until a replica has acknowledged once, WAIT may count it out.
		res := d.DoMulti(ctx, d.B().Set().Key(keyOn(cl, n, "warm")).Value("1").Build(), d.B().Wait().Numreplicas(1).Timeout(10000).Build())
		require.NoError(t, res[1].Error())
		require.NoError(t, d.Do(ctx, d.B().ConfigResetstat().Build()).Error())
	}
	rc := &counter{Client: cl.Client(t)}
	c := syncedClient(t, rc)

	// Two locks on the first master, in different slots; one on the second.
	first := keyOn(cl, masters[0], "replicasync:a")
	second := first
	for i := 0; keys.Slot(second) == keys.Slot(first) || cl.NodeForKey(second) != masters[0]; i++ {
		second = "replicasync:b" + strconv.Itoa(i)
	}
	other := keyOn(cl, masters[1], "replicasync:c")
	for range 2 {
		for _, name := range []string{first, second, other} {
			m := rlock.New(c, name)
			from := rc.mark()
			require.NoError(t, m.Lock(ctx))
			requireSynced(t, rc, name, from, 1)
			from = rc.mark()
			require.NoError(t, m.Unlock(ctx))
			requireSynced(t, rc, name, from, 1)
		}
	}

	calls := func(n *redistest.Server, cmd string) int {
		d := direct[n]
		s, err := d.Do(ctx, d.B().Info().Section("commandstats").Build()).ToString()
		require.NoError(t, err)
		for line := range strings.Lines(s) {
			if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls="); ok {
				v, _, _ := strings.Cut(rest, ",")
				n, err := strconv.Atoi(v)
				require.NoError(t, err)
				return n
			}
		}
		return 0
	}
	// The WAITs the client sent after scripts on the keys of each master
	// (a NOSCRIPT reply, on first use, sends the pipeline twice).
	waits := func(names ...string) int {
		n := 0
		for _, name := range names {
			for _, p := range rc.scriptPipelines(name, 0) {
				for _, cmd := range p[1:] {
					if cmd[0] == "WAIT" {
						n++
					}
				}
			}
		}
		return n
	}
	// Each read is INFO replication and INFO persistence.
	assert.Equal(t, 2*2, calls(masters[0], "info"), "one read for each slot of the first master")
	assert.Equal(t, waits(first, second), calls(masters[0], "wait"))
	assert.Equal(t, 2, calls(masters[1], "info"))
	assert.Equal(t, waits(other), calls(masters[1], "wait"))
	assert.Zero(t, calls(masters[2], "info"))
	assert.Zero(t, calls(masters[2], "wait"))
	assert.Len(t, rc.commands("INFO"), 3*2)
}

// keyOn returns base, or base with a number appended, such that the key
// lives on master n.
func keyOn(cl *redistest.ClusterServers, n *redistest.Server, base string) string {
	k := base
	for i := 0; cl.NodeForKey(k) != n; i++ {
		k = base + ":" + strconv.Itoa(i)
	}
	return k
}

// A server that refuses INFO: every acquisition is taken back and fails
// with ErrReplication, naming the refusal.
func TestReplicaSyncWithoutInfo(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	admin := redistest.NewClient(t, addr)
	user := "noinfo-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	rules := redistest.FeaturesOf(t, admin).ACLRules([]string{"on", ">pw", "~*", "&*", "+@all", "-info"}) // Redis 6.0: no "&*"
	require.NoError(t, admin.Do(ctx, admin.B().Arbitrary("ACL", "SETUSER", user).Args(rules...).Build()).Error())
	t.Cleanup(func() { admin.Do(context.Background(), admin.B().Arbitrary("ACL", "DELUSER", user).Build()) })
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, Username: user, Password: "pw"})
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	c := syncedClient(t, rc)
	name := "replicasync:" + t.Name()
	m := rlock.New(c, name)

	ok, err := m.TryLock(ctx, 0, 0)
	t.Log(err)
	require.ErrorIs(t, err, interlock.ErrReplication)
	assert.Contains(t, err.Error(), "INFO replication")
	assert.Contains(t, err.Error(), "NOPERM")
	assert.False(t, ok)
	assert.False(t, exists(t, admin, name), "the acquisition was not taken back")
	assert.Zero(t, c.Stats().Holds)
}

// Dedicate dedicates a connection whose renewal rounds and latch sweeps
// go through counter's DoMulti (redistest.Aside).
func (c *counter) Dedicate() (rueidis.DedicatedClient, func()) {
	dc, release := c.Client.Dedicate()
	return redistest.Aside(dc, c.DoMulti), release
}
