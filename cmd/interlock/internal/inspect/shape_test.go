//go:build unix

package inspect

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/cmd/interlock/internal/clitest"
	"github.com/interlock-go/interlock/cmd/interlock/internal/kinds"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/semaphore"
)

// Fits accepts what each kind writes, and nothing under the name, and
// says what else is there.
func TestFits(t *testing.T) {
	t.Parallel()
	const owner = clitest.JavaA + ":1"
	lock := Facts{KeyType: "hash", Fields: map[string]string{owner: "2"}}
	rw := Facts{KeyType: "hash", Fields: map[string]string{"mode": "write", owner + ":write": "1", owner: "1"}}
	counter := Facts{KeyType: "string", value: "5"}
	none := Facts{KeyType: "none"}
	locks := []string{kinds.Reentrant, kinds.Fair, kinds.Fenced, kinds.Spin}
	halves := []string{kinds.Read, kinds.Write}
	counters := []string{kinds.Semaphore, kinds.Expirable, kinds.Latch}
	fits := func(f Facts, ks ...string) {
		t.Helper()
		for _, k := range ks {
			f.Name = "n"
			assert.NoError(t, Fits(&f, k), "%s on %+v", k, f)
		}
	}
	fits(none, append(append(locks, halves...), counters...)...)
	fits(lock, locks...)
	fits(rw, halves...)
	fits(counter, counters...)
	fits(Facts{KeyType: "none", PermitsType: "zset"}, kinds.Semaphore, kinds.Expirable)
	fits(Facts{KeyType: "hash", Fields: lock.Fields, queueType: "list", timesType: "zset"}, kinds.Fair)
	fits(Facts{KeyType: "none", tokenType: "string", token: "42"}, kinds.Fenced)

	for _, tc := range []struct {
		f    Facts
		kind string
		want string
	}{
		{Facts{KeyType: "string", value: "hello"}, kinds.Reentrant, `"n" is no reentrant lock: it holds a string, "hello", not an integer`},
		{Facts{KeyType: "string", value: "hello"}, kinds.Latch, `"n" is no latch: it holds a string, "hello", not an integer`},
		{Facts{KeyType: "hash", Fields: map[string]string{"a": "1"}}, kinds.Fair, `"n" is no fair lock: it holds a hash, no lock (field "a": not "<client id>:<owner id>")`},
		{Facts{KeyType: "hash", Fields: map[string]string{"a": "1"}}, kinds.Semaphore, `"n" is no semaphore: it holds a hash, no lock (field "a": not "<client id>:<owner id>")`},
		{Facts{KeyType: "hash", Fields: map[string]string{owner: "0"}}, kinds.Reentrant, `it holds a hash, no lock (field "` + owner + `": hold count 0 is not positive)`},
		{Facts{KeyType: "hash", Fields: map[string]string{"mode": "both", owner: "1"}}, kinds.Read, `"n" is no read/write lock: it holds a hash, no lock (mode "both" is neither "read" nor "write")`},
		{rw, kinds.Reentrant, `"n" is no reentrant lock: it holds a read/write lock (mode "write"): use --kind read or --kind write`},
		{lock, kinds.Write, `"n" is no read/write lock: it holds a reentrant, fair or fenced lock (a hash of holders with no "mode")`},
		{lock, kinds.Expirable, `"n" is no expirable semaphore: it holds a lock (a hash of holders)`},
		{rw, kinds.Latch, `"n" is no latch: it holds a read/write lock (mode "write")`},
		{counter, kinds.Spin, `"n" is no spin lock: it holds the integer 5, the count of a semaphore or a latch`},
		{Facts{KeyType: "list"}, kinds.Fenced, `"n" is no fenced lock: it holds a list`},
		{Facts{KeyType: "zset"}, kinds.Semaphore, `"n" is no semaphore: it holds a sorted set`},
		{Facts{KeyType: "ReJSON-RL"}, kinds.Reentrant, `it holds a key of type ReJSON-RL`},
		{Facts{KeyType: "none", queueType: "string"}, kinds.Fair, `"n" is no fair lock: redisson_lock_queue:{n} holds a string, not a fair lock's queue (a list)`},
		{Facts{KeyType: "none", timesType: "list"}, kinds.Fair, `redisson_lock_timeout:{n} holds a list, not a fair lock's deadlines (a sorted set)`},
		{Facts{KeyType: "none", tokenType: "hash"}, kinds.Fenced, `redisson_lock_token:{n} holds a hash, not a fencing token`},
		{Facts{KeyType: "none", tokenType: "string", token: "-1"}, kinds.Fenced, `redisson_lock_token:{n} holds "-1", not a fencing token (an integer)`},
		{Facts{KeyType: "string", value: "5", PermitsType: "zset"}, kinds.Latch, `"n" is no latch: it is an expirable semaphore: {n}:timeout holds its acquired permits`},
		{Facts{KeyType: "none", PermitsType: "list"}, kinds.Expirable, `{n}:timeout holds a list, not an expirable semaphore's acquired permits (a sorted set)`},
	} {
		tc.f.Name = "n"
		err := Fits(&tc.f, tc.kind)
		require.Error(t, err, tc.want)
		assert.Contains(t, err.Error(), tc.want)
		m, ok := err.(*Misfit)
		require.True(t, ok)
		assert.Equal(t, tc.kind, m.Kind)
	}
}

// ProbeShape reads a bounded sample, yet sees the "mode" of a read/write
// lock with many readers, and tells a large application hash from a lock.
func TestProbeShapeLargeKeys(t *testing.T) {
	t.Parallel()
	_, rc := clitest.NewLockClient(t)
	base := clitest.LockName(t)
	readers, mixed := base+":readers", base+":mixed"
	clitest.CleanupKeys(t, rc, readers, mixed)
	cmds := rueidis.Commands{rc.B().Hset().Key(readers).FieldValue().FieldValue("mode", "read").Build()}
	for i := range 5000 {
		cmds = append(cmds,
			rc.B().Hset().Key(readers).FieldValue().FieldValue(fmt.Sprintf("%s:%d", clitest.JavaA, i), "1").Build(),
			rc.B().Hset().Key(mixed).FieldValue().FieldValue("field"+strconv.Itoa(i), "x").Build())
	}
	for _, r := range rc.DoMulti(t.Context(), cmds...) {
		require.NoError(t, r.Error())
	}
	assert.NoError(t, Check(t.Context(), rc, readers, kinds.Read))
	err := Check(t.Context(), rc, readers, kinds.Reentrant)
	assert.ErrorContains(t, err, `it holds a read/write lock (mode "read")`)
	err = Check(t.Context(), rc, mixed, kinds.Reentrant)
	assert.ErrorContains(t, err, "it holds a hash, no lock")
	f, err := ProbeShape(t.Context(), rc, readers)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(f.Fields), 2*shapeFields, "a sample, not the whole hash")
}

// On a cluster, the shape check reads the name's node, and inspect counts
// a semaphore's waiters wherever they subscribed (sharded pub/sub, on the
// slot's node).
func TestInspectCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.ClusterWith(t, redistest.WithReplicas(1))
	rc := cl.Client(t)
	c, err := interlock.New(rc)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	urls := strings.Join(cl.Addrs(), ",")
	name := "inspect-cluster:sem"
	other := "inspect-cluster:str"
	require.NoError(t, rc.Do(t.Context(), rc.B().Set().Key(other).Value("hello").Build()).Error())
	assert.NoError(t, Check(t.Context(), rc, name, kinds.Semaphore))
	assert.ErrorContains(t, Check(t.Context(), rc, other, kinds.Semaphore), `it holds a string, "hello", not an integer`)

	wctx, cancel := context.WithCancel(t.Context())
	waited := make(chan error, 1)
	go func() { waited <- semaphore.New(c, name).Acquire(wctx, 1) }()
	defer func() {
		cancel()
		assert.ErrorIs(t, <-waited, context.Canceled)
	}()
	var r Report
	require.Eventually(t, func() bool {
		res := clitest.Run(t, Command, "--redis", urls, "--json", name)
		if res.Code != 0 {
			return false
		}
		r = clitest.JSONLines[Report](t, res.Stdout)[0]
		return r.Subscribers > 0
	}, 10*time.Second, 20*time.Millisecond, "the waiter is counted")
	assert.Equal(t, kinds.Semaphore, r.Kind)
	require.NotNil(t, r.Permits)
	assert.Equal(t, int64(0), *r.Permits)
}
