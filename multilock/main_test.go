package multilock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
)

// addr is the package's shared redis-server.
var addr string

func TestMain(m *testing.M) {
	redistest.Main(m, func() (func(), error) {
		s, err := redistest.Start()
		if err != nil {
			return nil, err
		}
		addr = s.Addr()
		return s.Stop, nil
	})
}

// newClient returns an interlock Client on the server at a, and the
// rueidis client under it, both closed when t ends.
func newClient(t *testing.T, a string, opts ...interlock.Option) (*interlock.Client, rueidis.Client) {
	t.Helper()
	rc := redistest.NewClient(t, a)
	c, err := interlock.New(rc, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c, rc
}

// names returns n lock names unique to the test.
func names(t *testing.T, n int) []string {
	base := "multilock-test:" + strings.ReplaceAll(t.Name(), "/", ":")
	out := make([]string, n)
	for i := range out {
		out[i] = base + ":" + string(rune('a'+i))
	}
	return out
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func must[T any](t *testing.T) func(v T, err error) T {
	return func(v T, err error) T {
		t.Helper()
		require.NoError(t, err)
		return v
	}
}

// pttl returns key's PTTL in ms (-2: no key).
func pttl(t *testing.T, rc rueidis.Client, key string) int64 {
	t.Helper()
	n, err := rc.Do(context.Background(), rc.B().Pttl().Key(key).Build()).AsInt64()
	require.NoError(t, err)
	return n
}
