package runtime_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/rlock"
)

// hasWaitAOF reports whether the server at rc knows WAITAOF (Redis 7.2+,
// Valkey).
func hasWaitAOF(t *testing.T, rc rueidis.Client) bool {
	t.Helper()
	err := rc.Do(t.Context(), rc.B().Waitaof().Numlocal(0).Numreplicas(0).Timeout(0).Build()).Error()
	if err != nil {
		require.Contains(t, strings.ToLower(err.Error()), "unknown command", "WAITAOF probe")
	}
	return err == nil
}

// awaitAck waits until the master's replica acknowledges a write (its
// first acknowledgements after the initial sync can be slow), and with aof
// until it has written it to its AOF too.
func awaitAck(t *testing.T, rc rueidis.Client, aof bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	wait := rc.B().Wait().Numreplicas(1).Timeout(10000).Build()
	if aof {
		wait = rc.B().Waitaof().Numlocal(1).Numreplicas(1).Timeout(10000).Build()
	}
	redistest.Eventually(t, 25*time.Second, func() bool {
		res := rc.DoMulti(ctx, rc.B().Set().Key("warm").Value("1").Build(), wait)
		if aof {
			got, err := res[1].AsIntSlice()
			return err == nil && len(got) == 2 && got[0] == 1 && got[1] == 1
		}
		n, err := res[1].AsInt64()
		return err == nil && n == 1
	}, "the replica acknowledges")
}

// syncedWith is syncedClient with more options.
func syncedWith(t *testing.T, rc rueidis.Client, opts ...interlock.Option) *interlock.Client {
	t.Helper()
	c, err := interlock.New(rc, append([]interlock.Option{interlock.WithReplicaSync(interlock.DefaultReplicaSyncTimeout)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// waitOf returns the wait command that followed the first script on key
// from position from on, and fails unless it went alone with the script.
func waitOf(t *testing.T, c *counter, key string, from int) []string {
	t.Helper()
	ps := c.scriptPipelines(key, from)
	require.NotEmpty(t, ps, "no script on %s", key)
	require.Len(t, ps[0], 2, "pipeline %q", ps[0])
	return ps[0][1]
}

// Replica-sync mode on a master with AOF on and one replica (both
// appendfsync always; see TestReplicaSyncAOFEverysec for everysec): the scripts go with WAITAOF 1 1 1000 where the
// server knows WAITAOF (learnt from INFO persistence and one probe), and
// with WAIT 1 1000 where it does not (Redis before 7.2) or with SyncAck;
// with the replica frozen an acquisition fails after the timeout and is
// taken back either way.
func TestReplicaSyncAOF(t *testing.T) {
	r := redistest.Replicas(t, 1, redistest.WithAOF())
	master, replica := r.Master(), r.Replicas()[0]
	plain := redistest.NewClient(t, master.Addr())
	waitaof := hasWaitAOF(t, plain)
	t.Logf("WAITAOF known: %v", waitaof)
	awaitAck(t, plain, waitaof)

	rc := &counter{Client: plain}
	auto := syncedClient(t, rc)
	ack := syncedWith(t, rc, interlock.WithReplicaSyncMode(interlock.SyncAck))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	name := "replicasync-aof:" + t.Name()
	m := rlock.New(auto, name)
	wantAuto := []string{"WAIT", "1", "1000"}
	if waitaof {
		wantAuto = []string{"WAITAOF", "1", "1", "1000"}
	}

	// On a server with WAITAOF each call takes about the timeout and may
	// fail (see TestReplicaSyncAOFEverysec): what is checked here is what
	// goes out, and that a failed acquisition is taken back.
	for i := range 3 {
		from := rc.mark()
		start := time.Now()
		ok, err := m.TryLock(ctx, 0, 0)
		t.Logf("TryLock: %v, %v after %v", ok, err, time.Since(start).Round(time.Millisecond))
		assert.Equal(t, wantAuto, waitOf(t, rc, name, from))
		if i == 0 {
			assert.Equal(t, [][]string{{"INFO", "replication"}, {"INFO", "persistence"}}, rc.commands("INFO")[:2])
			assert.Equal(t, [][]string{{"WAITAOF", "0", "0", "0"}}, probes(rc, 0), "one probe, with the first read")
		}
		from = rc.mark()
		if settle(t, plain, m, ok, err) {
			assert.Equal(t, wantAuto, waitOf(t, rc, name, from), "the unlock")
		}
	}
	if !waitaof {
		assert.Len(t, rc.commands("INFO"), 2, "read once")
		assert.Len(t, probes(rc, 0), 1, "probed once")
	}
	probed := len(probes(rc, 0))

	// SyncAck: WAIT, and neither INFO persistence nor a probe.
	ma := rlock.New(ack, name+":ack")
	infos := len(rc.commands("INFO"))
	from := rc.mark()
	require.NoError(t, ma.Lock(ctx))
	assert.Equal(t, []string{"WAIT", "1", "1000"}, waitOf(t, rc, name+":ack", from))
	assert.Equal(t, [][]string{{"INFO", "replication"}}, rc.commands("INFO")[infos:])
	from = rc.mark()
	require.NoError(t, ma.Unlock(ctx))
	assert.Equal(t, []string{"WAIT", "1", "1000"}, waitOf(t, rc, name+":ack", from))
	assert.Len(t, probes(rc, 0), probed, "SyncAck sends no probe")

	// The replica is frozen: it stays connected, and acknowledges nothing.
	require.NoError(t, replica.Pause())
	t.Cleanup(func() { _ = replica.Resume() })
	for _, c := range []struct {
		mode string
		m    *rlock.Mutex
		msg  string
	}{
		{"auto", m, "0 of 1 replicas acknowledged within 1s"},
		{"ack", ma, "0 of 1 replicas acknowledged within 1s"},
	} {
		start := time.Now()
		ok, err := c.m.TryLock(ctx, 0, 0)
		took := time.Since(start)
		t.Logf("%s: TryLock with the replica frozen: %v after %v", c.mode, err, took.Round(time.Millisecond))
		require.ErrorIs(t, err, interlock.ErrReplication)
		assert.Contains(t, err.Error(), c.msg)
		assert.Equal(t, waitaof && c.mode == "auto", strings.Contains(err.Error(), "WAITAOF"), "the error names WAITAOF")
		assert.False(t, ok)
		assert.GreaterOrEqual(t, took, time.Second)
		assert.Less(t, took, 3*time.Second, "TryLock must fail, not retry")
		assert.False(t, exists(t, plain, c.m.Name()), "the acquisition was not taken back")
	}
	require.NoError(t, replica.Resume())
	awaitAck(t, plain, waitaof)
	from = rc.mark()
	ok, err := m.TryLock(ctx, 0, 0)
	assert.Equal(t, wantAuto, waitOf(t, rc, name, from))
	settle(t, plain, m, ok, err)
}

// settle checks the outcome of a TryLock in replica-sync mode: acquired
// (then it unlocks: the unlock counts even when no replica acknowledged
// it), or failed with ErrReplication and taken back. It reports whether
// the lock was acquired.
func settle(t *testing.T, rc rueidis.Client, m *rlock.Mutex, ok bool, err error) bool {
	t.Helper()
	ctx := t.Context()
	if err != nil {
		require.ErrorIs(t, err, interlock.ErrReplication)
		assert.False(t, exists(t, rc, m.Name()), "the acquisition was not taken back")
		return false
	}
	require.True(t, ok)
	if err := m.Unlock(ctx); err != nil {
		require.ErrorIs(t, err, interlock.ErrReplication)
	}
	assert.False(t, exists(t, rc, m.Name()), "the unlock did not release")
	return true
}

// AOF turned off on the master while a Client waits with WAITAOF: the next
// WAITAOF is refused ("appendonly is disabled"), that one acquisition is
// taken back and fails, and the Client reads the master again and waits
// with WAIT from then on; turned on again, WAITAOF comes back after the
// next re-read.
func TestReplicaSyncAOFTurnedOff(t *testing.T) {
	r := redistest.Replicas(t, 1, redistest.WithAOF())
	plain := redistest.NewClient(t, r.Master().Addr())
	if !hasWaitAOF(t, plain) {
		t.Skip("the server has no WAITAOF (Redis before 7.2)")
	}
	awaitAck(t, plain, true)
	rc := &counter{Client: plain}
	c := syncedClient(t, rc)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	name := "replicasync-aofoff:" + t.Name()
	m := rlock.New(c, name)
	// Until a WAITAOF agrees with the count (one that answers 0 has the
	// master read again anyway).
	agreed := false
	for range 8 {
		from := rc.mark()
		ok, err := m.TryLock(ctx, 0, 0)
		require.Equal(t, []string{"WAITAOF", "1", "1", "1000"}, waitOf(t, rc, name, from))
		if agreed = settle(t, plain, m, ok, err); agreed {
			break
		}
	}
	require.True(t, agreed, "no WAITAOF was acknowledged")

	require.NoError(t, plain.Do(ctx, plain.B().ConfigSet().ParameterValue().ParameterValue("appendonly", "no").Build()).Error())
	from := rc.mark()
	ok, err := m.TryLock(ctx, 0, 0)
	t.Logf("TryLock after AOF was turned off: %v", err)
	if err == nil && waitOf(t, rc, name, from)[0] == "WAIT" {
		// The Client had just read the master again (its count is
		// re-read once it is old), and already waits with WAIT.
		assert.True(t, ok)
		require.NoError(t, m.Unlock(ctx))
	} else {
		require.ErrorIs(t, err, interlock.ErrReplication)
		assert.Contains(t, err.Error(), "appendonly is disabled")
		assert.False(t, ok)
		assert.False(t, exists(t, plain, name), "the acquisition was not taken back")
	}

	from = rc.mark()
	require.NoError(t, m.Lock(ctx))
	assert.Equal(t, []string{"WAIT", "1", "1000"}, waitOf(t, rc, name, from))
	require.NoError(t, m.Unlock(ctx))
}

// With appendfsync everysec on the replica, WAITAOF waits for its next
// fsync and acknowledgement, about a second: with the default timeout
// (1s) a call takes up to the timeout and often fails. This is what made
// Redisson 4 go back to WAIT after lock scripts; SyncAck does the same.
// The test measures, and checks only that a call ends within the timeout
// and either succeeds or fails with ErrReplication, taken back.
func TestReplicaSyncAOFEverysec(t *testing.T) {
	r := redistest.Replicas(t, 1, redistest.WithArgs("--appendonly", "yes", "--appendfsync", "everysec"))
	plain := redistest.NewClient(t, r.Master().Addr())
	if !hasWaitAOF(t, plain) {
		t.Skip("the server has no WAITAOF (Redis before 7.2)")
	}
	awaitAck(t, plain, true)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for _, mode := range []interlock.SyncMode{interlock.SyncAuto, interlock.SyncAck} {
		c := syncedWith(t, plain, interlock.WithReplicaSyncMode(mode))
		m := rlock.New(c, "replicasync-everysec:"+t.Name()+":"+mode.String())
		var took []time.Duration
		failed := 0
		for range 5 {
			start := time.Now()
			ok, err := m.TryLock(ctx, 0, 0)
			took = append(took, time.Since(start).Round(time.Millisecond))
			switch {
			case err != nil:
				require.ErrorIs(t, err, interlock.ErrReplication)
				assert.False(t, exists(t, plain, m.Name()), "the acquisition was not taken back")
				failed++
			default:
				settle(t, plain, m, ok, err)
			}
			assert.Less(t, took[len(took)-1], time.Second+time.Second, "bounded by the timeout")
		}
		t.Logf("%s: TryLock took %v; %d of %d failed", mode, took, failed, len(took))
	}
}

// probes returns the WAITAOF 0 0 0 probes sent from position from on.
func probes(c *counter, from int) [][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out [][]string
	for _, p := range c.sent[from:] {
		for _, cmd := range p {
			if strings.Join(cmd, " ") == "WAITAOF 0 0 0" {
				out = append(out, cmd)
			}
		}
	}
	return out
}
