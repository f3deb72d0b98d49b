package redistest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/redistest"
)

// TestName: the name is the prefix and the test's name, colons for
// slashes; with addresses, its keys go when the test ends, and only its.
func TestName(t *testing.T) {
	t.Parallel()
	rc := shared.Client(t)
	ctx := t.Context()
	var name string
	t.Run("sub", func(t *testing.T) {
		name = redistest.Name(t, "redistest:", shared.Addr())
		assert.Equal(t, "redistest:TestName:sub", name)
		redistest.Do(t, rc, "SET", name+":a", "1")
		redistest.Do(t, rc, "SET", "{"+name+"}", "1")
		assert.True(t, redistest.Exists(t, rc, name+":a"))
	})
	require.NoError(t, rc.Do(ctx, rc.B().Set().Key("redistest:other").Value("1").Build()).Error())
	assert.False(t, redistest.Exists(t, rc, name+":a"), "deleted when the test ended")
	assert.False(t, redistest.Exists(t, rc, "{"+name+"}"))
	assert.True(t, redistest.Exists(t, rc, "redistest:other"), "another test's key")
	assert.Equal(t, int64(-1), redistest.PTTL(t, rc, "redistest:other"))
}

// closer is a client of a library under test, for Clients.
type closer struct {
	rc     rueidis.Client
	closed bool
}

func (c *closer) Close() error { c.closed = true; return nil }

func open(rc rueidis.Client, fail ...bool) (*closer, error) {
	if len(fail) > 0 && fail[0] {
		return nil, errors.New("refused")
	}
	return &closer{rc: rc}, nil
}

// TestClients: both ways open on the shared server, and close what they
// opened when the test ends.
func TestClients(t *testing.T) {
	t.Parallel()
	addr := shared.Addr()
	newClient, wrap := redistest.Clients(&addr, open)
	var opened []*closer
	t.Run("open", func(t *testing.T) {
		c, rc := newClient(t)
		assert.Same(t, rc, c.rc)
		require.NoError(t, rc.Do(t.Context(), rc.B().Ping().Build()).Error())
		opened = append(opened, c, wrap(t, rc))
		assert.False(t, c.closed)
	})
	for _, c := range opened {
		assert.True(t, c.closed, "closed when the test ended")
	}
}

// TestHooked: every command is counted, and the hook sees each Do.
func TestHooked(t *testing.T) {
	t.Parallel()
	h := &redistest.Hooked{Client: shared.Client(t)}
	ctx := t.Context()
	require.NoError(t, h.Do(ctx, h.B().Ping().Build()).Error())
	var seen []string
	h.Set(func(ctx context.Context, cmd rueidis.Completed, next func() rueidis.RedisResult) rueidis.RedisResult {
		seen = append(seen, cmd.Commands()[0])
		return rueidis.NewErrorResult(errors.New("lost"))
	})
	assert.ErrorContains(t, h.Do(ctx, h.B().Ping().Build()).Error(), "lost")
	for _, r := range h.DoMulti(ctx, h.B().Ping().Build(), h.B().Ping().Build()) {
		assert.NoError(t, r.Error(), "DoMulti passes the hook")
	}
	assert.Equal(t, []string{"PING"}, seen)
	assert.Equal(t, int64(4), h.Sent())
	assert.Equal(t, 3, redistest.Must[int](t)(3, nil))
}
