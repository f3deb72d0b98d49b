package fenced_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/script"
)

// addr is the package's shared redis-server.
var addr string

// envWorker, when set, makes the test binary a worker process (see
// pause_test.go) instead of running tests.
const envWorker = "INTERLOCK_FENCED_WORKER"

// runWorker runs the worker of the given mode and returns its exit status.
// It is set by the files that define workers.
var runWorker func(mode string) int

func TestMain(m *testing.M) {
	if mode := os.Getenv(envWorker); mode != "" {
		if runWorker == nil {
			fmt.Fprintf(os.Stderr, "no worker %q on this platform\n", mode)
			os.Exit(2)
		}
		os.Exit(runWorker(mode))
	}
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

// lockName returns a key unique to the test; its token counter is deleted
// when the test ends.
func lockName(t *testing.T) string {
	name := "fenced-test:" + strings.ReplaceAll(t.Name(), "/", ":")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
		if err != nil {
			return
		}
		defer rc.Close()
		rc.Do(ctx, rc.B().Del().Key(name, tokenKey(name)).Build())
	})
	return name
}

// tokenKey spells out the counter's name by hand (§1.5), rather than
// computing it the way the package does.
func tokenKey(name string) string {
	if strings.Contains(name, "{") {
		return "redisson_lock_token:" + name
	}
	return "redisson_lock_token:{" + name + "}"
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

// faulty wraps a rueidis client and lets a test tamper with replies.
type faulty struct {
	rueidis.Client
	do func(ctx context.Context, cmd rueidis.Completed, next func() rueidis.RedisResult) rueidis.RedisResult
}

func (f *faulty) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	next := func() rueidis.RedisResult { return f.Client.Do(ctx, cmd) }
	if f.do == nil {
		return next()
	}
	return f.do(ctx, cmd, next)
}

// runs reports whether cmd runs script.
func runs(cmd rueidis.Completed, script *script.Script) bool {
	args := cmd.Commands()
	return len(args) > 1 && args[0] == "EVALSHA" && args[1] == script.SHA1()
}
