package rlock_test

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

// newClient returns an interlock Client on the shared server, and the
// rueidis client under it, both closed when t ends.
func newClient(t *testing.T, opts ...interlock.Option) (*interlock.Client, rueidis.Client) {
	t.Helper()
	rc := redistest.NewClient(t, addr)
	return wrap(t, rc, opts...), rc
}

func wrap(t *testing.T, rc rueidis.Client, opts ...interlock.Option) *interlock.Client {
	t.Helper()
	c, err := interlock.New(rc, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// lockName returns a key unique to the test.
func lockName(t *testing.T) string {
	return "rlock-test:" + strings.ReplaceAll(t.Name(), "/", ":")
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// eventually asserts that cond holds within d, polling.
func eventually(t *testing.T, d time.Duration, cond func() bool, msg string) {
	t.Helper()
	require.Eventually(t, cond, d, 5*time.Millisecond, msg)
}
