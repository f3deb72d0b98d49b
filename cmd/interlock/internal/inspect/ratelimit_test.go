//go:build unix

package inspect

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/cmd/interlock/internal/clitest"
	"github.com/interlock-go/interlock/cmd/interlock/internal/kinds"
	"github.com/interlock-go/interlock/ratelimit"
)

// rateKeys returns every key of the rate limiter name that clients may
// have written, for cleanup.
func rateKeys(name string, clients ...string) []string {
	out := []string{name, rateValueKey(name, ""), ratePermitsKey(name, "")}
	for _, c := range clients {
		out = append(out, rateValueKey(name, c), ratePermitsKey(name, c))
	}
	return out
}

// A rate limiter written by Go, overall and per client: inspect shows its
// config, and each window's free permits and the permits taken in it.
func TestInspectRateLimiter(t *testing.T) {
	t.Parallel()
	c1, rc := clitest.NewLockClient(t)
	c2, _ := clitest.NewLockClient(t)
	base := clitest.LockName(t)
	overall, perClient := base+":overall", base+":pc"
	clitest.CleanupKeys(t, rc, append(rateKeys(overall), rateKeys(perClient, c1.ID(), c2.ID())...)...)
	ctx := t.Context()

	o := ratelimit.New(c1, overall)
	require.NoError(t, o.SetRate(ctx, ratelimit.Config{Rate: 10, Interval: time.Minute, KeepAlive: 2 * time.Minute}))
	require.NoError(t, o.Acquire(ctx, 3))
	require.NoError(t, ratelimit.New(c2, overall).Acquire(ctx, 4))
	p1, p2 := ratelimit.New(c1, perClient), ratelimit.New(c2, perClient)
	require.NoError(t, p1.SetRate(ctx, ratelimit.Config{Type: ratelimit.PerClient, Rate: 5, Interval: time.Minute}))
	require.NoError(t, p1.Acquire(ctx, 2))
	require.NoError(t, p2.Acquire(ctx, 1))
	require.NoError(t, p2.Acquire(ctx, 1))

	reports := inspectJSON(t, overall, perClient)
	r := reports[0]
	assert.Equal(t, kinds.RateLimit, r.Kind)
	assert.Empty(t, r.Notes)
	assert.InDelta(t, 120000, r.TTLms, float64(clitest.Slack.Milliseconds()))
	require.NotNil(t, r.RateLimit)
	rl := r.RateLimit
	assert.Equal(t, RateOverall, rl.Type)
	assert.EqualValues(t, 10, rl.Rate)
	assert.EqualValues(t, 60000, rl.IntervalMs)
	assert.EqualValues(t, 120000, rl.KeepAliveMs)
	require.NotNil(t, rl.Overall)
	assert.EqualValues(t, 3, rl.Overall.Free)
	assert.EqualValues(t, 7, rl.Overall.Taken)
	assert.EqualValues(t, 2, rl.Overall.Acquisitions)
	assert.InDelta(t, 60000, rl.Overall.NextFreeMs, float64(clitest.Slack.Milliseconds()))
	assert.InDelta(t, 120000, rl.Overall.ValueTTLms, float64(clitest.Slack.Milliseconds()))
	assert.Empty(t, rl.Clients)

	r = reports[1]
	assert.Equal(t, kinds.RateLimit, r.Kind)
	assert.Empty(t, r.Notes)
	assert.EqualValues(t, -1, r.TTLms)
	rl = r.RateLimit
	assert.Equal(t, RatePerClient, rl.Type)
	assert.Nil(t, rl.Overall)
	byID := map[string]RateWindow{}
	for _, w := range rl.Clients {
		byID[w.ClientID] = w
	}
	require.Len(t, byID, 2, "%+v", rl.Clients)
	assert.EqualValues(t, 3, byID[c1.ID()].Free)
	assert.EqualValues(t, 2, byID[c1.ID()].Taken)
	assert.EqualValues(t, 3, byID[c2.ID()].Free)
	assert.EqualValues(t, 2, byID[c2.ID()].Taken)
	assert.EqualValues(t, 2, byID[c2.ID()].Acquisitions)
	assert.EqualValues(t, -1, byID[c2.ID()].PermitsTTLms)

	table := inspectTable(t, overall, perClient)
	assert.Contains(t, table, "OVERALL 10 per 1m0s, keep-alive 2m0s: 3 free now, 7 taken in the window (2 acquisitions, the oldest frees in ")
	assert.Contains(t, table, "PER_CLIENT 5 per 1m0s each: 2 clients\n")
	assert.Regexp(t, `\n`+perClient+` +ratelimit +no expiry +client +`+c1.ID()+` +- +- +3 free now, 2 taken in the window \(1 acquisition, `, table)

	// Permits that left the window count as free, as an acquisition
	// would find them, but inspect changes nothing.
	short := base + ":short"
	clitest.CleanupKeys(t, rc, rateKeys(short)...)
	s := ratelimit.New(c1, short)
	require.NoError(t, s.SetRate(ctx, ratelimit.Config{Rate: 4, Interval: 50 * time.Millisecond}))
	require.NoError(t, s.Acquire(ctx, 4))
	time.Sleep(80 * time.Millisecond)
	w := inspectJSON(t, short)[0].RateLimit.Overall
	assert.EqualValues(t, 4, w.Free)
	assert.EqualValues(t, 0, *w.Stored)
	assert.EqualValues(t, 0, w.Taken)
}

// A config or window that is no rate limiter's is shown as far as it
// goes, with notes; nothing panics, and the rate limiter commands are
// refused.
func TestInspectGarbledRateLimiter(t *testing.T) {
	t.Parallel()
	_, rc := clitest.NewLockClient(t)
	base := clitest.LockName(t)
	badType, badRate, badWindow := base+":type", base+":rate", base+":window"
	clitest.CleanupKeys(t, rc, append(append(rateKeys(badType), rateKeys(badRate)...), rateKeys(badWindow)...)...)
	clitest.Do(t, rc, []string{
		"HSET " + badType + " rate 5 interval 1000 type 7",
		"HSET " + badRate + " rate many interval 1000 type 0",
		"HSET " + badWindow + " rate 5 interval 60000 type 0 keepAliveTime 0",
		"SET " + rateValueKey(badWindow, "") + " lots",
		"ZADD " + ratePermitsKey(badWindow, "") + " 1 x 2 \x02ab\x01\x00\x00\x00",
	})
	reports := inspectJSON(t, badType, badRate, badWindow)
	for _, r := range reports {
		assert.Equal(t, kinds.RateLimit, r.Kind, r.Name)
		require.NotNil(t, r.RateLimit, r.Name)
	}
	assert.Equal(t, []string{"config field type = 7 is neither 0 (OVERALL) nor 1 (PER_CLIENT)"}, reports[0].Notes)
	assert.Equal(t, "", reports[0].RateLimit.Type)
	assert.Equal(t, []string{`config field rate = "many" is no count`}, reports[1].Notes)
	assert.Contains(t, reports[2].Notes, "the limiter: "+rateValueKey(badWindow, "")+` holds "lots", no count of free permits: every acquisition fails`)
	assert.Contains(t, reports[2].Notes, "the limiter: 1 members of "+ratePermitsKey(badWindow, "")+
		" are no taken permits (a length byte, that many bytes, 4 bytes of permits)")
	assert.Contains(t, inspectTable(t, badType), "not set")
	res := clitest.Run(t, Command, "--redis", clitest.RedisURL(), "--kind", "latch", badWindow)
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Contains(t, res.Stdout, "note: "+badWindow+": --kind latch does not apply: this is a rate limiter\n")

	for _, name := range []string{badType, badRate} {
		f, err := ProbeShape(t.Context(), rc, name)
		require.NoError(t, err)
		assert.ErrorContains(t, Fits(f, kinds.RateLimit), "is no rate limiter: its config does not parse")
		assert.ErrorContains(t, Fits(f, kinds.Reentrant), "it holds a rate limiter's config")
		assert.ErrorContains(t, Fits(f, kinds.Semaphore), "it holds a rate limiter's config")
	}
	f, err := ProbeShape(t.Context(), rc, badWindow)
	require.NoError(t, err)
	assert.EqualError(t, Fits(f, kinds.RateLimit), `"`+badWindow+`" is no rate limiter: `+rateValueKey(badWindow, "")+
		` holds the string "lots", not a rate limiter's count of free permits`)
}

// A member of the taken permits' sorted set is decoded, or refused, by
// its length.
func TestEntryPermits(t *testing.T) {
	t.Parallel()
	for m, want := range map[string]int64{"\x00\x07\x00\x00\x00": 7, "\x02ab\x01\x01\x00\x00": 257} {
		n, ok := entryPermits(m)
		assert.True(t, ok, "%q", m)
		assert.Equal(t, want, n, "%q", m)
	}
	for _, m := range []string{"", "\x05ab\x01\x00\x00\x00", "\x00\x01\x00\x00", "\xffxyz"} {
		_, ok := entryPermits(m)
		assert.False(t, ok, "%q", m)
	}
}
