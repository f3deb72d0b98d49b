//go:build unix

package inspect

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/cmd/interlock/internal/clitest"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/cmd/interlock/internal/kinds"
	"github.com/interlock-go/interlock/rlock"
)

// inspect decodes a lock written by rlock: client id, owner id, hold count
// and TTL, as JSON and as a table.
func TestInspectShowsAnRlockHolder(t *testing.T) {
	t.Parallel()
	lock, free := clitest.LockName(t), clitest.LockName(t)+":free"
	c, _ := clitest.NewLockClient(t)
	m := rlock.New(c, lock)
	ctx := interlock.WithOwner(t.Context(), 7)
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Lock(ctx)) // re-entered: hold count 2
	defer func() {
		require.NoError(t, m.Unlock(ctx))
		require.NoError(t, m.Unlock(ctx))
	}()

	res := clitest.Run(t, Command, "--redis", clitest.RedisURL(), "--json", lock, free)
	require.Equal(t, 0, res.Code, res.Stderr)
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	require.Len(t, lines, 2, "one JSON object per lock")
	var held, notHeld Report
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &held))
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &notHeld))

	assert.Equal(t, lock, held.Name)
	assert.Equal(t, kinds.Reentrant, held.Kind)
	assert.True(t, held.Locked)
	assert.Positive(t, held.TTLms)
	assert.LessOrEqual(t, held.TTLms, interlock.DefaultWatchdogTimeout.Milliseconds())
	require.Len(t, held.Holders, 1)
	assert.Equal(t, Holder{Field: c.ID() + ":7", ClientID: c.ID(), OwnerID: 7, Holds: 2}, held.Holders[0])
	assert.Empty(t, held.Notes)

	assert.Equal(t, Report{Name: free, Kind: kinds.None, Holders: []Holder{}}, notHeld)

	res = clitest.Run(t, Command, "--redis", clitest.RedisURL(), lock, free)
	require.Equal(t, 0, res.Code, res.Stderr)
	rows := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	require.Len(t, rows, 3, res.Stdout)
	assert.Equal(t, []string{"LOCK", "KIND", "TTL", "ROLE", "CLIENT", "ID", "OWNER", "ID", "HOLDS", "DETAIL"}, strings.Fields(rows[0]))
	fields := strings.Fields(rows[1])
	require.Len(t, fields, 7, rows[1])
	assert.Equal(t, []string{lock, kinds.Reentrant}, fields[:2])
	ttl, err := time.ParseDuration(fields[2])
	require.NoError(t, err)
	assert.Positive(t, ttl)
	assert.Equal(t, []string{roleHolder, c.ID(), "7", "2"}, fields[3:])
	assert.Equal(t, []string{free, kinds.None, "-", "-", "not", "locked"}, strings.Fields(rows[2]))
	for _, row := range rows {
		assert.Equal(t, strings.TrimRight(row, " "), row, "no trailing blanks")
	}
}

func TestInspectErrors(t *testing.T) {
	t.Parallel()
	res := clitest.Run(t, Command, "--redis", clitest.RedisURL(), "ok", "a{b")
	assert.Equal(t, exit.Usage, res.Code)
	assert.Contains(t, res.Stderr, `interlock: inspect: name "a{b"`)
	assert.Empty(t, res.Stdout, "nothing is inspected when a name is bad")

	res = clitest.Run(t, Command, "--redis", clitest.RedisURL())
	assert.Equal(t, exit.Usage, res.Code)

	res = clitest.Run(t, Command, "--redis", "redis://127.0.0.1:1", "x")
	assert.Equal(t, exit.Unavailable, res.Code)
}

func TestParseHolder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		field, value string
		want         Holder
		err          string
	}{
		{"u-u-i-d:1", "1", Holder{ClientID: "u-u-i-d", OwnerID: 1, Holds: 1}, ""},
		{"u:42:write", "3", Holder{ClientID: "u", OwnerID: 42, Write: true, Holds: 3}, ""},
		{"u:-5", "1", Holder{ClientID: "u", OwnerID: -5, Holds: 1}, ""},
		{"no-colon", "1", Holder{Holds: 1}, "not \"<client id>:<owner id>\""},
		{"u:x", "1", Holder{Holds: 1}, "owner id \"x\" is not an integer"},
		{"u:1", "lots", Holder{ClientID: "u", OwnerID: 1}, "hold count \"lots\" is not an integer"},
		{"u:1", "0", Holder{ClientID: "u", OwnerID: 1}, "hold count 0 is not positive"},
		{"a:b:c:9", "1", Holder{ClientID: "a:b:c", OwnerID: 9, Holds: 1}, ""},
	} {
		h, err := parseHolder(tc.field, tc.value)
		tc.want.Field = tc.field
		assert.Equal(t, tc.want, h, tc.field)
		if tc.err == "" {
			assert.NoError(t, err, tc.field)
		} else {
			assert.EqualError(t, err, tc.err, tc.field)
		}
	}
}

func TestDecodeKeepsUnparsedFields(t *testing.T) {
	t.Parallel()
	r := Decode(&Facts{Name: "n", KeyType: "hash", pttl: 1500, Fields: map[string]string{"junk": "x", "u:1": "1"}}, "")
	assert.Equal(t, kinds.Reentrant, r.Kind)
	assert.Equal(t, int64(1500), r.TTLms)
	require.Len(t, r.Holders, 2)
	assert.Equal(t, "junk", r.Holders[0].Field)
	assert.Equal(t, []string{`field "junk": not "<client id>:<owner id>"`}, r.Notes)

	// The key vanished between TYPE and PTTL.
	r = Decode(&Facts{Name: "n", KeyType: "hash", pttl: -2}, "")
	assert.Equal(t, int64(0), r.TTLms)
}
