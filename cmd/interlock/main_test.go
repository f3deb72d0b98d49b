//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
	"github.com/interlock-go/interlock/internal/redistest"
)

var (
	// srv is the Redis all tests of the package share; keys are unique per
	// test.
	srv *redistest.Server
	// bin is the interlock binary, built once by TestMain (with -race when
	// the tests run with it).
	bin string
)

func TestMain(m *testing.M) {
	redistest.Main(m, func() (func(), error) {
		dir, err := os.MkdirTemp("", "interlock-test-")
		if err != nil {
			return nil, err
		}
		teardown := func() { _ = os.RemoveAll(dir) }
		bin = filepath.Join(dir, "interlock")
		if err := buildBinary(bin); err != nil {
			return teardown, err
		}
		srv, err = redistest.Start()
		if err != nil {
			return teardown, err
		}
		return func() { srv.Stop(); teardown() }, nil
	})
}

// buildBinary builds this package into path.
func buildBinary(path string) error {
	args := []string{"build", "-o", path}
	if raceEnabled {
		args = append(args, "-race")
	}
	// go test puts its own go command first on PATH (Go 1.19+).
	cmd := exec.Command("go", append(args, ".")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// redisURL is the --redis value of the shared server.
func redisURL() string { return "redis://" + srv.Addr() }

// lockName returns a lock name unique to the test.
func lockName(t *testing.T) string {
	return fmt.Sprintf("interlock-cli-test:%s:%d", t.Name(), time.Now().UnixNano())
}

// result is how a run of the binary ended.
type result struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// interlockCmd returns an exec.Cmd for the interlock binary, in a session of its
// own: with no controlling terminal, run always gives CMD its own process
// group, whatever terminal the tests run in.
func interlockCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// A -race binary sleeps a second at exit unless told otherwise.
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	cmd.Env = append(os.Environ(), redisconn.EnvVar+"=", "GORACE="+gorace)
	return cmd
}

// runBinary runs the interlock binary with args and stdin and returns how
// it ended. The test fails if it runs longer than a minute.
func runBinary(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	cmd := interlockCmd(args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	require.NoError(t, cmd.Start())
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	timer := time.NewTimer(time.Minute)
	defer timer.Stop()
	select {
	case <-waited:
	case <-timer.C:
		_ = cmd.Process.Kill()
		<-waited
		t.Fatalf("interlock %v did not exit within a minute; stderr:\n%s", args, stderr.String())
	}
	return result{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
}

// runInProcess runs interlock's main logic in this process and returns
// how it ended. Only commands that neither catch signals nor start
// processes may be run this way.
func runInProcess(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := runMain(t.Context(), cli.Stdio{Out: &stdout, Err: &stderr, Getenv: func(string) string { return "" }}, args)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
}

// newLockClient returns an interlock client on the shared server, closed
// with the test.
func newLockClient(t *testing.T, opts ...interlock.Option) (*interlock.Client, rueidis.Client) {
	t.Helper()
	rc := redistest.NewClient(t, srv.Addr())
	c, err := interlock.New(rc, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c, rc
}

// exists reports whether key exists on the shared server.
func exists(t *testing.T, rc rueidis.Client, key string) bool {
	t.Helper()
	n, err := rc.Do(context.Background(), rc.B().Exists().Key(key).Build()).AsInt64()
	require.NoError(t, err)
	return n == 1
}

// syncBuffer is a bytes.Buffer that a process may write while the test
// reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
