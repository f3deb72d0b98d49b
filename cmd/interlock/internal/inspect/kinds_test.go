//go:build unix

package inspect

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/cmd/interlock/internal/clitest"
	"github.com/interlock-go/interlock/cmd/interlock/internal/kinds"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/fenced"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/rwlock"
)

// inspectJSON runs "inspect --json" on locks and returns the reports.
func inspectJSON(t *testing.T, locks ...string) []Report {
	t.Helper()
	res := clitest.Run(t, Command, append([]string{"--redis", clitest.RedisURL(), "--json"}, locks...)...)
	require.Equal(t, 0, res.Code, res.Stderr)
	reports := clitest.JSONLines[Report](t, res.Stdout)
	require.Len(t, reports, len(locks), res.Stdout)
	return reports
}

// inspectTable runs "inspect" on locks and returns the table.
func inspectTable(t *testing.T, locks ...string) string {
	t.Helper()
	res := clitest.Run(t, Command, append([]string{"--redis", clitest.RedisURL()}, locks...)...)
	require.Equal(t, 0, res.Code, res.Stderr)
	return res.Stdout
}

// Locks as Java Redisson writes them (the protocol's test vectors, §15),
// decoded kind by kind.
func TestInspectJavaWrittenLocks(t *testing.T) {
	t.Parallel()
	_, rc := clitest.NewLockClient(t)
	base := clitest.LockName(t)
	fair, stale, rw, w, fence, str := base+":fair", base+":stale", base+":rw", base+":w", base+":fenced", base+":string"
	queue, times := keys.Prefix(keys.FairQueuePrefix, fair), keys.Prefix(keys.FairTimeoutPrefix, fair)
	staleQueue, staleTimes := keys.Prefix(keys.FairQueuePrefix, stale), keys.Prefix(keys.FairTimeoutPrefix, stale)
	token := keys.Prefix(keys.FenceTokenPrefix, fence)
	a1, a1k1, a1k2 := clitest.JavaA+":1", ReadTimeoutKey(rw, clitest.JavaA+":1", 1), ReadTimeoutKey(rw, clitest.JavaA+":1", 2)
	b3k1 := ReadTimeoutKey(w, clitest.JavaB+":3", 1)
	now := time.Now().UnixMilli()
	first, second := now+329348, now+629348
	ms := func(n int64) string { return strconv.FormatInt(n, 10) }
	clitest.Do(t, rc, []string{
		// A:1 holds the fair lock; B:5, then A:2 queue (§15.2).
		"HSET " + fair + " " + a1 + " 1", "PEXPIRE " + fair + " 30000",
		"RPUSH " + queue + " " + clitest.JavaB + ":5 " + clitest.JavaA + ":2",
		"ZADD " + times + " " + ms(first) + " " + clitest.JavaB + ":5 " + ms(second) + " " + clitest.JavaA + ":2",
		// A free fair lock whose head waiter is overdue (§15.3).
		"RPUSH " + staleQueue + " " + clitest.JavaB + ":5",
		"ZADD " + staleTimes + " " + ms(now-1500) + " " + clitest.JavaB + ":5",
		// Two readers; A:1 re-entered; B:7's timeout key is gone (§15.4).
		"HSET " + rw + " mode read " + a1 + " 2 " + clitest.JavaB + ":7 1", "PEXPIRE " + rw + " 30000",
		"SET " + a1k1 + " 1 PX 30000", "SET " + a1k2 + " 1 PX 20000",
		// B:3 writes, re-entered, and took a read hold (§15.4 step 12).
		"HSET " + w + " mode write " + clitest.JavaB + ":3:write 2 " + clitest.JavaB + ":3 1", "PEXPIRE " + w + " 59000",
		"SET " + b3k1 + " 1 PX 30000",
		// A:1 holds a fenced lock, re-entered: token 2 (§15.6).
		"HSET " + fence + " " + a1 + " 2", "PEXPIRE " + fence + " 30000", "SET " + token + " 2",
		// Not a Redisson lock.
		"SET " + str + " x",
	}, fair, queue, times, staleQueue, staleTimes, rw, a1k1, a1k2, w, b3k1, fence, token, str)

	reports := inspectJSON(t, fair, stale, rw, w, fence, str)

	r := reports[0]
	assert.Equal(t, kinds.Fair, r.Kind)
	assert.True(t, r.Locked)
	assert.Equal(t, []Holder{{Field: a1, ClientID: clitest.JavaA, OwnerID: 1, Holds: 1}}, r.Holders)
	require.Len(t, r.Queue, 2)
	for i, want := range []Waiter{
		{Position: 1, Owner: clitest.JavaB + ":5", ClientID: clitest.JavaB, OwnerID: 5, DeadlineMs: first},
		{Position: 2, Owner: clitest.JavaA + ":2", ClientID: clitest.JavaA, OwnerID: 2, DeadlineMs: second},
	} {
		got := r.Queue[i]
		assert.InDelta(t, want.DeadlineMs-now, got.RemainingMs, float64(clitest.Slack.Milliseconds()))
		want.RemainingMs = got.RemainingMs
		want.Deadline = time.UnixMilli(want.DeadlineMs).Format(JSONTime)
		assert.Equal(t, want, got)
	}
	assert.Empty(t, r.Notes)

	r = reports[1]
	assert.Equal(t, kinds.Fair, r.Kind)
	assert.False(t, r.Locked)
	require.Len(t, r.Queue, 1)
	assert.True(t, r.Queue[0].Stale)
	assert.LessOrEqual(t, r.Queue[0].RemainingMs, int64(-1500))
	assert.Equal(t, []string{"the lock is free but waiters are queued: only the head of the queue may take it " +
		"(a waiter that died blocks the queue until its deadline)"}, r.Notes)

	r = reports[2]
	assert.Equal(t, kinds.ReadWrite, r.Kind)
	assert.Equal(t, "read", r.Mode)
	require.Len(t, r.Holders, 2)
	// Sorted by field: B's client id sorts first.
	assert.Equal(t, Holder{Field: clitest.JavaB + ":7", ClientID: clitest.JavaB, OwnerID: 7, Holds: 1, ReadHoldTTLms: []int64{-2}, Stale: true}, r.Holders[0])
	reader := r.Holders[1]
	assert.Equal(t, a1, reader.Field)
	assert.Equal(t, int64(2), reader.Holds)
	require.Len(t, reader.ReadHoldTTLms, 2)
	assert.InDelta(t, 30000, reader.ReadHoldTTLms[0], float64(clitest.Slack.Milliseconds()))
	assert.InDelta(t, 20000, reader.ReadHoldTTLms[1], float64(clitest.Slack.Milliseconds()))
	assert.False(t, reader.Stale)
	require.Len(t, r.Notes, 1)
	assert.Contains(t, r.Notes[0], "reader "+clitest.JavaB+":7: the timeout keys of all its read holds are gone")

	r = reports[3]
	assert.Equal(t, kinds.ReadWrite, r.Kind)
	assert.Equal(t, "write", r.Mode)
	require.Len(t, r.Holders, 2)
	assert.Equal(t, clitest.JavaB+":3", r.Holders[0].Field)
	require.Len(t, r.Holders[0].ReadHoldTTLms, 1)
	assert.Positive(t, r.Holders[0].ReadHoldTTLms[0])
	assert.Equal(t, Holder{Field: clitest.JavaB + ":3:write", ClientID: clitest.JavaB, OwnerID: 3, Write: true, Holds: 2}, r.Holders[1])
	assert.Empty(t, r.Notes)

	r = reports[4]
	assert.Equal(t, kinds.Fenced, r.Kind)
	assert.Equal(t, "2", r.FenceToken)
	assert.Equal(t, []Holder{{Field: a1, ClientID: clitest.JavaA, OwnerID: 1, Holds: 2}}, r.Holders)

	r = reports[5]
	assert.Equal(t, kinds.Unknown, r.Kind)
	assert.Equal(t, "string", r.KeyType)
	assert.Equal(t, int64(-1), r.TTLms, "no expiry")

	table := inspectTable(t, fair, stale, rw, w, fence, str)
	for _, want := range []string{
		"waiter  " + clitest.JavaB + "  5         -      #1, deadline " + time.UnixMilli(first).Format(TableTime) + ", in 5m",
		"#2, deadline " + time.UnixMilli(second).Format(TableTime) + ", in 10m",
		"#1, deadline " + time.UnixMilli(now-1500).Format(TableTime) + ", passed ",
		"ago; STALE: dropped when at the head",
		"read/write (read)", "read/write (write)",
		"reader  " + clitest.JavaA + "  1         2      read hold TTLs: ",
		"read hold TTLs: gone; STALE: a dead reader",
		"writer  " + clitest.JavaB + "  3         2\n",
		"holder  " + clitest.JavaA + "  1         2      fencing token 2\n",
		"no expiry",
		"note: " + str + ": the key is a string, not a hash",
	} {
		assert.Contains(t, table, want)
	}
}

// A fair lock written by package fairlock, with two waiters: the queue in
// order, with deadlines one wait timeout apart.
func TestInspectFairQueue(t *testing.T) {
	t.Parallel()
	lock := clitest.LockName(t)
	c, rc := clitest.NewLockClient(t)
	const grace = time.Minute
	m := fairlock.New(c, lock, fairlock.WithWaitTimeout(grace))
	ctx := interlock.WithOwner(t.Context(), 1)
	require.NoError(t, m.Lock(ctx))
	queue := keys.Prefix(keys.FairQueuePrefix, lock)

	wctx, cancel := context.WithCancel(t.Context())
	waited := make(chan error, 2)
	for owner := int64(2); owner <= 3; owner++ {
		go func() { waited <- m.Lock(interlock.WithOwner(wctx, owner)) }()
		require.Eventually(t, func() bool {
			n, err := rc.Do(ctx, rc.B().Llen().Key(queue).Build()).AsInt64()
			return err == nil && n == owner-1
		}, 10*time.Second, 5*time.Millisecond, "waiter %d queues", owner)
	}
	defer func() {
		cancel()
		for range 2 {
			assert.ErrorIs(t, <-waited, context.Canceled)
		}
		require.NoError(t, m.Unlock(ctx))
		assert.False(t, clitest.Exists(t, rc, queue), "the waiters left the queue")
	}()

	r := inspectJSON(t, lock)[0]
	assert.Equal(t, kinds.Fair, r.Kind)
	assert.Equal(t, []Holder{{Field: c.ID() + ":1", ClientID: c.ID(), OwnerID: 1, Holds: 1}}, r.Holders)
	require.Len(t, r.Queue, 2)
	for i, w := range r.Queue {
		assert.Equal(t, i+1, w.Position)
		assert.Equal(t, c.ID(), w.ClientID)
		assert.Equal(t, int64(i+2), w.OwnerID)
		assert.False(t, w.Stale)
	}
	// The first waiter's deadline: the holder's TTL then, plus the grace;
	// the second's: the first's plus the grace.
	first := r.Queue[0].RemainingMs
	assert.Greater(t, first, grace.Milliseconds())
	assert.LessOrEqual(t, first, (grace + interlock.DefaultWatchdogTimeout).Milliseconds())
	assert.Equal(t, grace.Milliseconds(), r.Queue[1].DeadlineMs-r.Queue[0].DeadlineMs)
	assert.Empty(t, r.Notes)

	table := inspectTable(t, lock)
	assert.Contains(t, table, "waiter  "+c.ID()+"  2         -      #1, deadline ")
	assert.Contains(t, table, "waiter  "+c.ID()+"  3         -      #2, deadline ")
}

// Read/write locks written by package rwlock: readers with the TTLs of
// their read holds, then a writer that also reads.
func TestInspectReadWriteLock(t *testing.T) {
	t.Parallel()
	lock := clitest.LockName(t)
	c, _ := clitest.NewLockClient(t)
	rw := rwlock.New(c, lock)
	one, two := interlock.WithOwner(t.Context(), 1), interlock.WithOwner(t.Context(), 2)
	require.NoError(t, rw.Read().Lock(one))
	require.NoError(t, rw.Read().LockLease(one, 10*time.Second))
	require.NoError(t, rw.Read().Lock(two))

	r := inspectJSON(t, lock)[0]
	assert.Equal(t, kinds.ReadWrite, r.Kind)
	assert.Equal(t, "read", r.Mode)
	require.Len(t, r.Holders, 2)
	for _, h := range r.Holders {
		assert.False(t, h.Write)
		assert.False(t, h.Stale)
		require.Len(t, h.ReadHoldTTLms, int(h.Holds))
		assert.InDelta(t, interlock.DefaultWatchdogTimeout.Milliseconds(), h.ReadHoldTTLms[0], float64(clitest.Slack.Milliseconds()))
		if h.OwnerID == 1 {
			assert.Equal(t, int64(2), h.Holds)
			assert.InDelta(t, 10000, h.ReadHoldTTLms[1], float64(clitest.Slack.Milliseconds()))
		}
	}
	assert.Empty(t, r.Notes)
	assert.Contains(t, inspectTable(t, lock), "reader  "+c.ID()+"  1         2      read hold TTLs: ")

	require.NoError(t, rw.Read().Unlock(one))
	require.NoError(t, rw.Read().Unlock(one))
	require.NoError(t, rw.Read().Unlock(two))

	// A writer, which may also take the read lock.
	require.NoError(t, rw.Write().Lock(one))
	require.NoError(t, rw.Read().Lock(one))
	defer func() {
		require.NoError(t, rw.Read().Unlock(one))
		require.NoError(t, rw.Write().Unlock(one))
	}()
	r = inspectJSON(t, lock)[0]
	assert.Equal(t, "write", r.Mode)
	require.Len(t, r.Holders, 2)
	assert.Equal(t, c.ID()+":1", r.Holders[0].Field)
	assert.Len(t, r.Holders[0].ReadHoldTTLms, 1)
	assert.Equal(t, Holder{Field: c.ID() + ":1:write", ClientID: c.ID(), OwnerID: 1, Write: true, Holds: 1}, r.Holders[1])
	assert.Empty(t, r.Notes)
	table := inspectTable(t, lock)
	assert.Contains(t, table, "read/write (write)")
	assert.Contains(t, table, "writer  "+c.ID()+"  1         1\n")
}

// A fenced lock written by package fenced: its holder and token, and the
// token once it is free.
func TestInspectFencedLock(t *testing.T) {
	t.Parallel()
	lock := clitest.LockName(t)
	c, _ := clitest.NewLockClient(t)
	m := fenced.New(c, lock)
	ctx := interlock.WithOwner(t.Context(), 4)
	token, err := m.LockToken(ctx)
	require.NoError(t, err)
	want := strconv.FormatUint(token, 10)

	r := inspectJSON(t, lock)[0]
	assert.Equal(t, kinds.Fenced, r.Kind)
	assert.Equal(t, want, r.FenceToken)
	assert.Equal(t, []Holder{{Field: c.ID() + ":4", ClientID: c.ID(), OwnerID: 4, Holds: 1}}, r.Holders)
	assert.Empty(t, r.Notes)
	assert.Contains(t, inspectTable(t, lock), "holder  "+c.ID()+"  4         1      fencing token "+want+"\n")

	require.NoError(t, m.Unlock(ctx))
	r = inspectJSON(t, lock)[0]
	assert.Equal(t, kinds.Fenced, r.Kind)
	assert.False(t, r.Locked)
	assert.Equal(t, want, r.FenceToken)
	assert.Contains(t, clitest.FieldLines(inspectTable(t, lock)), lock+" fenced - - not locked last fencing token "+want)
}

func TestDecodeFairQueue(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1795995449072)
	f := &Facts{
		Name: "q", now: now, KeyType: "none", pttl: -2,
		queueType: "list", queue: []string{"u:1", "u:2", "junk", "u:2"}, queueLen: 5,
		timesType: "zset", timesLen: 4,
		deadlines: map[string]float64{"u:1": float64(now.UnixMilli()), "u:2": float64(now.UnixMilli() + 2500), "junk": math.NaN()},
	}
	r := Decode(f, "")
	assert.Equal(t, kinds.Fair, r.Kind)
	require.Len(t, r.Queue, 4)
	assert.Equal(t, Waiter{Position: 1, Owner: "u:1", ClientID: "u", OwnerID: 1, DeadlineMs: now.UnixMilli(),
		Deadline: now.Format(JSONTime), Stale: true}, r.Queue[0], "a deadline that is now has passed")
	assert.Equal(t, int64(2500), r.Queue[1].RemainingMs)
	assert.False(t, r.Queue[1].Stale)
	assert.Equal(t, Waiter{Position: 3, Owner: "junk"}, r.Queue[2])
	assert.Equal(t, []string{
		`waiter 3 "junk": not "<client id>:<owner id>"`,
		"waiter 3 junk has no usable deadline in redisson_lock_timeout:{q}: Redisson never drops it",
		"u:2 is queued more than once",
		"5 waiters are queued; the first 4 are shown",
		"the lock is free but waiters are queued: only the head of the queue may take it (a waiter that died blocks the queue until its deadline)",
	}, r.Notes)

	var buf bytes.Buffer
	require.NoError(t, writeTable(&buf, []Report{r}))
	assert.Contains(t, buf.String(), "#1, deadline "+now.Format(TableTime)+", passed 0s ago; STALE")
	assert.Contains(t, buf.String(), "#2, deadline "+now.Add(2500*time.Millisecond).Format(TableTime)+", in 2.5s\n")
	assert.Contains(t, clitest.FieldLines(buf.String()), "q fair - waiter junk ? - #3, no deadline")
}

// Whatever Redis holds, decode explains it in notes and never panics.
func TestDecodeOddShapes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		f    Facts
		kind string
		want []string
	}{
		{"aux keys of wrong types", Facts{KeyType: "hash", Fields: map[string]string{"u:1": "1"},
			queueType: "string", timesType: "hash", tokenType: "list"}, kinds.Fenced, []string{
			"redisson_lock_queue:{n} is a string, not a list",
			"redisson_lock_timeout:{n} is a hash, not a sorted set",
			"redisson_lock_token:{n} is a list, not a string",
			"Redis also holds keys of a fair lock under this name",
		}},
		{"bad token", Facts{KeyType: "none", tokenType: "string", token: "x"}, kinds.Fenced, []string{
			`fencing token "x" is not a non-negative integer`,
		}},
		{"odd mode", Facts{KeyType: "hash", Fields: map[string]string{"mode": "both", "u:1": "-3"}, tokenType: "string", token: "1"},
			kinds.ReadWrite, []string{
				`field "u:1": hold count -3 is not positive`,
				`mode "both" is neither "read" nor "write"`,
				"Redis also holds keys of a fenced lock under this name",
			}},
		{"write mode, no writer", Facts{KeyType: "hash", Fields: map[string]string{"mode": "write"}}, kinds.ReadWrite, []string{
			`mode is "write" but no field names a writer ("<client id>:<owner id>:write")`,
		}},
		{"read mode, two writers", Facts{KeyType: "hash", Fields: map[string]string{"mode": "read", "a:1:write": "1", "b:2:write": "1"}},
			kinds.ReadWrite, []string{
				`mode is "read" but a field names a writer`,
				"2 fields name a writer; a read/write lock has one",
			}},
		{"many read holds", Facts{KeyType: "hash", Fields: map[string]string{"mode": "read", "u:1": "5000"}}, kinds.ReadWrite, []string{
			"reader u:1: 5000 read holds; the timeout keys of holds past the first 1000 were not read",
		}},
		{"reply errors", Facts{KeyType: "hash", replyErrors: []string{"HGETALL n: WRONGTYPE"}}, kinds.Reentrant, []string{
			"Redis replied with an error (did the lock change meanwhile?): HGETALL n: WRONGTYPE",
		}},
		{"nothing at all", Facts{}, kinds.Unknown, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.f.Name = "n"
			r := Decode(&tc.f, "")
			assert.Equal(t, tc.kind, r.Kind)
			assert.Equal(t, tc.want, r.Notes)
			require.NoError(t, writeTable(&bytes.Buffer{}, []Report{r}))
		})
	}
}

// FuzzDecode feeds decode and both output formats arbitrary lock state.
func FuzzDecode(f *testing.F) {
	f.Add("u:1", "2", "read", "u:2", 1795995449072.0, "5", int64(29000))
	f.Add("mode", "x", "", ":", math.Inf(1), "-1", int64(-2))
	f.Add("a:b:write", "99999999999999999999", "write", "", -1e300, "", int64(-1))
	f.Fuzz(func(t *testing.T, field, value, mode, waiterOwner string, deadline float64, token string, ttl int64) {
		fields := map[string]string{field: value}
		if mode != "" {
			fields["mode"] = mode
		}
		fc := &Facts{
			Name: "n", now: time.UnixMilli(1795995449072), KeyType: "hash", pttl: ttl, Fields: fields,
			queueType: "list", queue: []string{waiterOwner}, queueLen: 1, timesType: "zset", timesLen: 1,
			deadlines: map[string]float64{waiterOwner: deadline}, tokenType: "string", token: token,
		}
		fc.holdTTLs = map[string]int64{}
		for _, rk := range holdKeys(fc) {
			for _, k := range rk.keys {
				fc.holdTTLs[k] = ttl
			}
		}
		r := Decode(fc, "")
		if err := writeTable(&bytes.Buffer{}, []Report{r}); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := writeJSON(&buf, []Report{r}); err != nil {
			t.Fatal(err)
		}
		if !json.Valid(buf.Bytes()) {
			t.Fatalf("invalid JSON: %s", buf.String())
		}
	})
}
