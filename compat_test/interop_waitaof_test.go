package compat_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/rlock"
)

// serverHasWaitAOF reports whether the server at addr knows WAITAOF
// (Redis 7.2+, Valkey).
func serverHasWaitAOF(t *testing.T, addr string) bool {
	t.Helper()
	_, err := dial(t, addr).try("WAITAOF", "0", "0", "0")
	if err != nil {
		require.Contains(t, strings.ToLower(err.Error()), "unknown command")
	}
	return err == nil
}

// syncWaits reads the MONITOR lines of mon up to a marker sent with ctl and
// returns the wait commands (WAIT or WAITAOF, in upper case, with their
// arguments) that a client sent right after a script on key, in order.
// It looks only at the command name and the key of the script lines,
// whose quoting differs between servers.
func syncWaits(t *testing.T, mon *stream, ctl *conn, key string) []string {
	t.Helper()
	mark := unique("waits-mark")
	ctl.do("ECHO", mark)
	lines := mon.until(t, markerTimeout, func(v any) bool {
		s, _ := v.(string)
		return strings.Contains(s, mark)
	})
	afterScript := map[string]bool{}
	var out []string
	for _, v := range lines {
		s, _ := v.(string)
		open, end := strings.IndexByte(s, '['), strings.Index(s, "] ")
		if open < 0 || end < open {
			continue
		}
		_, client, _ := strings.Cut(s[open+1:end], " ")
		if client == "lua" {
			continue
		}
		rest := s[end+2:]
		name, _, _ := strings.Cut(strings.TrimPrefix(rest, `"`), `"`)
		switch strings.ToLower(name) {
		case "eval", "evalsha":
			afterScript[client] = strings.Contains(rest, `"`+key+`"`)
			continue
		case "wait", "waitaof":
			if afterScript[client] {
				l, err := parseMonitor(s)
				require.NoError(t, err)
				out = append(out, strings.ToUpper(strings.Join(l.Args, " ")))
			}
		}
		afterScript[client] = false
	}
	return out
}

// What Go and Java send after lock scripts in replica-sync mode, on a
// master with one replica, with AOF on (both servers, appendfsync always)
// and off: Redisson 3.52.0 sends WAITAOF 1 1 1000 where the master has AOF
// on and knows WAITAOF, as interlock's SyncAuto does; Redisson 4.7.0
// always sends WAIT 1 1000, as SyncAck does. Where the server has no
// WAITAOF (Redis before 7.2) everyone sends WAIT. With the replica frozen
// every side fails and leaves no key: Go after the timeout, Java after its
// reruns.
func TestInteropReplicaSyncAOF(t *testing.T) {
	parallel(t)
	for _, aof := range []bool{true, false} {
		name := "aof=off"
		if aof {
			name = "aof=on"
		}
		t.Run(name, func(t *testing.T) { interopReplicaSyncAOF(t, aof) })
	}
}

func interopReplicaSyncAOF(t *testing.T, aof bool) {
	var opts []redistest.Option
	if aof {
		opts = append(opts, redistest.WithAOF())
	}
	r := redistest.Replicas(t, 1, opts...)
	master, replica := r.Master(), r.Replicas()[0]
	waitaof := serverHasWaitAOF(t, master.Addr())
	t.Logf("WAITAOF known: %v", waitaof)
	ctl := dial(t, master.Addr())
	rc := redistest.NewClient(t, master.Addr())
	awaitReplica(t, rc)
	mon := openStream(t, master.Addr(), 1, "MONITOR")
	ctx := testCtx(t, 3*time.Minute)
	goA := interlock.WithOwner(ctx, 1)

	withAOF := "WAIT 1 1000"
	if aof && waitaof {
		withAOF = "WAITAOF 1 1 1000"
	}
	want := map[string]string{ // what each side sends after its scripts
		"go/" + interlock.SyncAuto.String(): withAOF,
		"go/" + interlock.SyncAck.String():  "WAIT 1 1000",
		"java/3.52.0":                       withAOF,
		"java/4.7.0":                        "WAIT 1 1000",
	}
	type side struct {
		who, lock string
		try       func() (bool, error) // TryLock(0)
		unlock    func() error
	}
	var sides []side
	for _, mode := range []interlock.SyncMode{interlock.SyncAuto, interlock.SyncAck} {
		c := newLockClient(t, rc, interlock.WithReplicaSync(interlock.DefaultReplicaSyncTimeout), interlock.WithReplicaSyncMode(mode))
		lock := unique("interop-waitaof-go")
		m := rlock.New(c, lock)
		sides = append(sides, side{"go/" + mode.String(), lock,
			func() (bool, error) { return m.TryLock(goA, 0, 0) },
			func() error { return m.Unlock(goA) }})
	}
	for _, v := range peerVersions {
		lock := unique("interop-waitaof-java")
		p := startJavaPeer(t, v, []string{master.Addr()}, withPeerReplicas(replica.Addr()))
		sides = append(sides, side{"java/" + v, lock,
			func() (bool, error) {
				rep := awaitPeer(t, p.Start(t, javaReq(1, "tryLock", lock)))
				if rep.Err != "" {
					return false, peerError(rep.Err)
				}
				return rep.Bool(t), nil
			},
			func() error {
				rep := awaitPeer(t, p.Start(t, javaReq(1, "unlock", lock)))
				if rep.Err != "" {
					return peerError(rep.Err)
				}
				return nil
			}})
	}

	// Each side locks and unlocks until one acquisition went through (with
	// WAITAOF a call takes about the timeout and may find no replica
	// acknowledging); every script it sent was followed by its wait.
	for _, s := range sides {
		var ok bool
		for i := 0; i < 4 && !ok; i++ {
			start := time.Now()
			var err error
			ok, err = s.try()
			t.Logf("%s: tryLock: %v, %v after %v", s.who, ok, err, time.Since(start).Round(time.Millisecond))
			if err != nil {
				assertTakenBack(t, rc, s.lock, "%s left the key", s.who)
			}
		}
		require.True(t, ok, "%s never acquired", s.who)
		if err := s.unlock(); err != nil {
			t.Logf("%s: unlock: %v", s.who, err) // an unlock counts anyway
		}
		assert.False(t, keyExists(t, rc, s.lock), "%s: the unlock did not release", s.who)
		waits := syncWaits(t, mon, ctl, s.lock)
		t.Logf("%s sent %q", s.who, waits)
		require.NotEmpty(t, waits, "%s sent no wait", s.who)
		for _, w := range waits {
			assert.Equal(t, want[s.who], w, s.who)
		}
	}

	// The replica is frozen: it stays connected and acknowledges nothing.
	require.NoError(t, replica.Pause())
	t.Cleanup(func() { _ = replica.Resume() })
	for _, s := range sides {
		start := time.Now()
		ok, err := s.try()
		took := time.Since(start)
		t.Logf("%s: tryLock, replica frozen: %v, %v after %v", s.who, ok, err, took.Round(time.Millisecond))
		assert.False(t, ok, s.who)
		require.Error(t, err, s.who)
		if strings.HasPrefix(s.who, "go/") {
			require.ErrorIs(t, err, interlock.ErrReplication)
			assert.Contains(t, err.Error(), "0 of 1 replicas acknowledged within 1s")
			assert.Less(t, took, 3*time.Second+loadSlack, "Go fails at once")
		} else {
			assert.Contains(t, err.Error(), "NoSyncedSlavesException")
		}
		assert.GreaterOrEqual(t, took, time.Second)
		assertTakenBack(t, rc, s.lock, "%s left the key", s.who)
		waits := syncWaits(t, mon, ctl, s.lock)
		require.NotEmpty(t, waits, s.who)
		for _, w := range waits {
			assert.Equal(t, want[s.who], w, "%s, replica frozen", s.who)
		}
	}
	require.NoError(t, replica.Resume())
}

// peerError is a Java exception the peer reported.
type peerError string

func (e peerError) Error() string { return string(e) }

// awaitPeer waits for a reply the peer was asked for with Start.
func awaitPeer(t *testing.T, ch <-chan peerReply) peerReply {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(peerDoTimeout):
		t.Fatalf("no reply from the peer within %v", peerDoTimeout)
	}
	return peerReply{}
}
