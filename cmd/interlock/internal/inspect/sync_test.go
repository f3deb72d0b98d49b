//go:build unix

package inspect

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/cmd/interlock/internal/clitest"
	"github.com/interlock-go/interlock/cmd/interlock/internal/kinds"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/latch"
	"github.com/interlock-go/interlock/semaphore"
)

// permitsKey is an expirable semaphore's sorted set of acquired permits.
func permitsKey(name string) string { return keys.Suffix(name, keys.PermitsSuffix) }

// Semaphores and latches as Java Redisson writes them (the reference's
// vectors, §11), decoded without changing them.
func TestInspectJavaWrittenSynchronizers(t *testing.T) {
	t.Parallel()
	_, rc := clitest.NewLockClient(t)
	base := clitest.LockName(t)
	sem, semTTL, pes, lat := base+":sem", base+":semttl", base+":pes", base+":lat"
	timeout := permitsKey(pes)
	clitest.CleanupKeys(t, rc, sem, semTTL, pes, timeout, lat)
	// Permit A leased for 10s, B with no lease, C whose lease ended 1.5s
	// ago, not reclaimed yet.
	a, _ := hex.DecodeString("f931c493916289a8b33eefa41cfb0ce3")
	b, _ := hex.DecodeString("0123456789abcdef0123456789abcdef")
	cc, _ := hex.DecodeString("fedcba9876543210fedcba9876543210")
	now := time.Now().UnixMilli()
	clitest.Do(t, rc, []string{
		"SET " + sem + " 3",
		"SET " + semTTL + " 4 PX 60000",
		"SET " + pes + " 1",
		"SET " + lat + " 2",
	})
	require.NoError(t, rc.Do(t.Context(), rc.B().Zadd().Key(timeout).ScoreMember().
		ScoreMember(float64(now+10000), string(a)).ScoreMember(NeverExpires, string(b)).ScoreMember(float64(now-1500), string(cc)).
		Build()).Error())

	reports := inspectJSON(t, sem, semTTL, pes, lat)
	r := reports[0]
	assert.Equal(t, kinds.Counter, r.Kind, "a bare counter is a semaphore or a latch")
	require.NotNil(t, r.Permits)
	require.NotNil(t, r.Count)
	assert.Equal(t, int64(3), *r.Permits)
	assert.Equal(t, int64(3), *r.Count)
	assert.Equal(t, int64(-1), r.TTLms)
	assert.False(t, r.Locked)
	assert.Empty(t, r.Notes)

	assert.InDelta(t, 60000, reports[1].TTLms, float64(clitest.Slack.Milliseconds()))

	r = reports[2]
	assert.Equal(t, kinds.Expirable, r.Kind)
	require.NotNil(t, r.Permits)
	assert.Equal(t, int64(1), *r.Permits)
	assert.Nil(t, r.Count)
	require.Len(t, r.Acquired, 3)
	// Soonest expiry first: C (expired), A, then B (never).
	assert.Equal(t, Permit{ID: hex.EncodeToString(cc), ExpiryMs: now - 1500, Expired: true}, r.Acquired[0])
	assert.Equal(t, hex.EncodeToString(a), r.Acquired[1].ID)
	assert.Equal(t, now+10000, r.Acquired[1].ExpiryMs)
	assert.InDelta(t, 10000, r.Acquired[1].LeaseLeftMs, float64(clitest.Slack.Milliseconds()))
	assert.Equal(t, Permit{ID: hex.EncodeToString(b), LeaseLeftMs: -1}, r.Acquired[2])
	require.Len(t, r.Notes, 1)
	assert.Contains(t, r.Notes[0], "1 acquired permit expired but not given back yet")

	assert.Equal(t, kinds.Counter, reports[3].Kind)

	// inspect only reads: the expired permit is still there.
	assert.Equal(t, int64(1), clitest.Available(t, rc, pes))
	n, err := rc.Do(t.Context(), rc.B().Zcard().Key(timeout).Build()).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(3), n)

	// --kind says what a counter is, and does not override what is plain.
	res := clitest.Run(t, Command, "--redis", clitest.RedisURL(), "--json", "--kind", "latch", lat, pes, base+":nothing")
	require.Equal(t, 0, res.Code, res.Stderr)
	var hinted []Report
	for line := range strings.Lines(res.Stdout) {
		var r Report
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		hinted = append(hinted, r)
	}
	require.Len(t, hinted, 3)
	assert.Equal(t, kinds.Latch, hinted[0].Kind)
	require.NotNil(t, hinted[0].Count)
	assert.Equal(t, int64(2), *hinted[0].Count)
	assert.Nil(t, hinted[0].Permits)
	assert.Equal(t, kinds.Expirable, hinted[1].Kind)
	assert.Contains(t, hinted[1].Notes, "--kind latch does not apply: "+timeout+" exists, so this is an expirable semaphore")
	assert.Equal(t, kinds.Latch, hinted[2].Kind)
	assert.Equal(t, []string{"there is no key: the latch is open (or was never set)"}, hinted[2].Notes)
	r = inspectJSONKind(t, "semaphore", sem)
	assert.Equal(t, kinds.Semaphore, r.Kind)
	assert.Equal(t, int64(3), *r.Permits)
	assert.Nil(t, r.Count)

	table := inspectTable(t, sem, semTTL, pes, lat)
	for _, want := range []string{
		sem + " semaphore/latch no expiry - - - - 3: as a semaphore, 3 permits available; as a latch, count 3 (closed); --kind tells which",
		pes + " expirable-semaphore no expiry - - - - 1 permit available, 3 acquired",
		pes + " expirable-semaphore no expiry permit - - - id " + hex.EncodeToString(cc) + ", lease ended " +
			strings.Join(strings.Fields(time.UnixMilli(now-1500).Format(TableTime)), " ") + "; EXPIRED: given back by the next operation",
		pes + " expirable-semaphore no expiry permit - - - id " + hex.EncodeToString(b) + ", no expiry",
	} {
		assert.Contains(t, clitest.FieldLines(table), want)
	}
	assert.Contains(t, table, "permit  -          -         -      id "+hex.EncodeToString(a)+", lease left ")
	res = clitest.Run(t, Command, "--redis", clitest.RedisURL(), "--kind", "latch", lat)
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Contains(t, clitest.FieldLines(res.Stdout), lat+" latch no expiry - - - - count 2: closed")
}

// inspectJSONKind runs "inspect --json --kind kind" on one name.
func inspectJSONKind(t *testing.T, kind, name string) Report {
	t.Helper()
	res := clitest.Run(t, Command, "--redis", clitest.RedisURL(), "--json", "--kind", kind, name)
	require.Equal(t, 0, res.Code, res.Stderr)
	var r Report
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &r), res.Stdout)
	return r
}

// Semaphores and latches written by the Go packages, as inspect shows
// them.
func TestInspectGoWrittenSynchronizers(t *testing.T) {
	t.Parallel()
	c, rc := clitest.NewLockClient(t)
	base := clitest.LockName(t)
	pes, lat := base+":pes", base+":lat"
	clitest.CleanupKeys(t, rc, pes, permitsKey(pes), lat)
	e := semaphore.NewExpirable(c, pes)
	ok, err := e.TrySetPermits(t.Context(), 2)
	require.NoError(t, err)
	require.True(t, ok)
	ids, err := e.Acquire(t.Context(), 1, semaphore.NoExpiry)
	require.NoError(t, err)
	l := latch.New(c, lat)
	ok, err = l.TrySetCount(t.Context(), 1)
	require.NoError(t, err)
	require.True(t, ok)

	r := inspectJSON(t, pes)[0]
	assert.Equal(t, kinds.Expirable, r.Kind)
	assert.Equal(t, []Permit{{ID: ids[0].String(), LeaseLeftMs: -1}}, r.Acquired)
	r = inspectJSONKind(t, "latch", lat)
	assert.Equal(t, int64(1), *r.Count)

	require.NoError(t, e.Release(t.Context(), ids...))
	require.NoError(t, l.CountDown(t.Context()))
	r = inspectJSON(t, pes)[0]
	assert.Equal(t, kinds.Counter, r.Kind, "with no permit acquired, an expirable semaphore is a bare counter")
	assert.Equal(t, int64(2), *r.Permits)
	r = inspectJSONKind(t, "expirable-semaphore", pes)
	assert.Equal(t, kinds.Expirable, r.Kind)
	assert.Empty(t, r.Acquired)
	r = inspectJSON(t, lat)[0]
	assert.Equal(t, kinds.None, r.Kind, "an open latch has no key")
}

// Whatever Redis holds beside a counter, Decode explains it in notes.
func TestDecodeSyncShapes(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1795995449072)
	for _, tc := range []struct {
		name string
		f    Facts
		hint string
		kind string
		want []string
	}{
		{"odd permits", Facts{KeyType: "string", value: "0", PermitsType: "zset", permitsLen: 3, permits: []rueidis.ZScore{
			{Member: "short", Score: NeverExpires}, {Member: strings.Repeat("x", 16), Score: math.NaN()},
		}}, "", kinds.Expirable, []string{
			"permit 73686f7274 is 5 bytes long, not 16: no id Redisson makes",
			"permit 78787878787878787878787878787878 has score NaN: no expiry in epoch milliseconds",
			"3 permits are acquired; the 2 that expire first are shown",
		}},
		{"permits, no counter", Facts{KeyType: "none", pttl: -2, PermitsType: "zset"}, "", kinds.Expirable, []string{
			"there is no key counting the free permits: none is free until one is released",
		}},
		{"counter not a number", Facts{KeyType: "string", value: "many", pttl: -1, PermitsType: "zset"}, "", kinds.Expirable, []string{
			`the key holds "many", not an integer: no free permit can be counted`,
		}},
		{"counter a list", Facts{KeyType: "list", PermitsType: "zset"}, "", kinds.Expirable, []string{
			"the key is a list, not a string holding the count of free permits",
		}},
		{"timeout of another type", Facts{KeyType: "string", value: "4", PermitsType: "hash"}, "semaphore", kinds.Semaphore, []string{
			"{n}:timeout is a hash, not the sorted set of an expirable semaphore's permits",
		}},
		{"semaphore not set up", Facts{KeyType: "none", pttl: -2}, "semaphore", kinds.Semaphore, []string{
			"there is no key: the semaphore is not set up, and no permit is free",
		}},
		{"hint on a lock", Facts{KeyType: "hash", Fields: map[string]string{"u:1": "1"}}, "latch", kinds.Reentrant, []string{
			"--kind latch does not apply: this is no semaphore or latch",
		}},
		{"permits beside a lock", Facts{KeyType: "hash", Fields: map[string]string{"u:1": "1"}, PermitsType: "zset"}, "", kinds.Reentrant, []string{
			"Redis also holds acquired permits of an expirable semaphore under this name ({n}:timeout)",
		}},
		{"not a counter", Facts{KeyType: "string", value: "x"}, "latch", kinds.Unknown, []string{
			`the key is a string, not a hash, and holds "x", no integer: not a Redisson lock, semaphore or latch`,
			"--kind latch does not apply: this is no semaphore or latch",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.f.Name, tc.f.now = "n", now
			r := Decode(&tc.f, tc.hint)
			assert.Equal(t, tc.kind, r.Kind)
			assert.Equal(t, tc.want, r.Notes)
			var buf bytes.Buffer
			require.NoError(t, writeTable(&buf, []Report{r}))
			require.NoError(t, writeJSON(&buf, []Report{r}))
		})
	}
	// A negative count: an open latch, a semaphore short of permits.
	f := &Facts{Name: "n", now: now, KeyType: "string", value: "-2", pttl: 1500}
	r := Decode(f, "")
	assert.Equal(t, int64(1500), r.TTLms)
	var buf bytes.Buffer
	require.NoError(t, writeTable(&buf, []Report{r}))
	assert.Contains(t, clitest.FieldLines(buf.String()), "n semaphore/latch 1.5s - - - - -2: as a semaphore, -2 permits available; as a latch, count -2 (open); --kind tells which")
}
