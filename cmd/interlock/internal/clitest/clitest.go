//go:build unix

// Package clitest is what the tests of interlock's commands share: the
// Redis server of a test package, the interlock binary, and running a
// command in the test's process or the binary in a process of its own.
package clitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
	"github.com/interlock-go/interlock/internal/redistest"
)

// Client ids of two Java clients, as in the protocol's test vectors.
const (
	// JavaA is the first Java client's id.
	JavaA = "8743c9c0-0795-4907-87fd-6c719a6b4586"
	// JavaB is the second Java client's id.
	JavaB = "3f1d2c4e-9b7a-4c1e-8f5d-0a2b4c6d8e10"
)

// Slack is added to every expected duration: the tolerance for timings on
// a loaded two-core machine.
const Slack = 2 * time.Second

var (
	// srv is the Redis all tests of the package share; keys are unique per
	// test.
	srv *redistest.Server
	// bin is the interlock binary, built once by MainWithBinary (with
	// -race when the tests run with it).
	bin string
)

// Main is a complete TestMain for the tests of a command: it starts the
// Redis server they share (Addr), runs them and checks for leaked
// goroutines (redistest.Main).
func Main(m *testing.M) {
	redistest.Main(m, startServer)
}

// MainWithBinary is Main for tests that also run the interlock binary
// (RunBinary, Command): it builds it first.
func MainWithBinary(m *testing.M) {
	redistest.Main(m, func() (func(), error) {
		dir, err := os.MkdirTemp("", "interlock-test-")
		if err != nil {
			return nil, err
		}
		removeDir := func() { _ = os.RemoveAll(dir) }
		bin = filepath.Join(dir, "interlock")
		if err := buildBinary(bin); err != nil {
			return removeDir, err
		}
		stop, err := startServer()
		if err != nil {
			return removeDir, err
		}
		return func() { stop(); removeDir() }, nil
	})
}

// startServer starts the shared server.
func startServer() (func(), error) {
	var err error
	srv, err = redistest.Start()
	if err != nil {
		return nil, err
	}
	return srv.Stop, nil
}

// buildBinary builds the interlock command into path.
func buildBinary(path string) error {
	args := []string{"build", "-o", path}
	if raceEnabled {
		args = append(args, "-race")
	}
	// go test puts its own go command first on PATH (Go 1.19+).
	cmd := exec.Command("go", append(args, "github.com/interlock-go/interlock/cmd/interlock")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// Binary returns the path of the interlock binary MainWithBinary built.
func Binary() string { return bin }

// Addr returns the address of the shared server, "127.0.0.1:port".
func Addr() string { return srv.Addr() }

// RedisURL returns the --redis value of the shared server.
func RedisURL() string { return "redis://" + srv.Addr() }

// LockName returns a lock name unique to the test, short enough for the
// tables to show it whole (cli.MaxShown) with a suffix of a few bytes.
func LockName(t *testing.T) string {
	return fmt.Sprintf("it:%s:%s", t.Name(), strconv.FormatInt(time.Now().UnixNano(), 36))
}

// Result is how a run of a command or of the binary ended.
type Result struct {
	// Code is the exit code.
	Code int
	// Stdout and Stderr are what was printed.
	Stdout, Stderr string
	// Took is how long the run took.
	Took time.Duration
}

// Run runs cmd in this process with args and no environment, and returns
// how it ended, its error reported as interlock reports it. Only commands
// that neither catch signals nor start processes may be run this way.
func Run(t *testing.T, cmd cli.Command, args ...string) Result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	start := time.Now()
	err := cmd.Run(t.Context(), cli.Stdio{Out: &stdout, Err: &stderr, Getenv: func(string) string { return "" }}, args)
	code := exit.Report(&stderr, err)
	return Result{Code: code, Stdout: stdout.String(), Stderr: stderr.String(), Took: time.Since(start)}
}

// Command returns an exec.Cmd for the interlock binary, in a session of
// its own: with no controlling terminal, run always gives CMD its own
// process group, whatever terminal the tests run in.
func Command(args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// A -race binary sleeps a second at exit unless told otherwise.
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	cmd.Env = append(os.Environ(), redisconn.EnvVar+"=", "GORACE="+gorace)
	return cmd
}

// RunBinary runs the interlock binary with args and stdin and returns how
// it ended. The test fails if it runs longer than a minute.
func RunBinary(t *testing.T, stdin string, args ...string) Result {
	t.Helper()
	cmd := Command(args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	require.NoError(t, cmd.Start())
	code := Wait(t, cmd)
	return Result{Code: code, Stdout: stdout.String(), Stderr: stderr.String(), Took: time.Since(start)}
}

// Start starts cmd, and kills it when the test ends should it still run.
func Start(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
}

// Wait waits, a minute at most, for the started cmd to exit and returns
// its exit code. After a minute it kills cmd and fails the test, showing
// cmd's stderr when that is a fmt.Stringer (such as a SyncBuffer).
func Wait(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = cmd.Wait()
	}()
	timer := time.NewTimer(time.Minute)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		_ = cmd.Process.Kill()
		<-done
		var stderr string
		if s, ok := cmd.Stderr.(fmt.Stringer); ok {
			stderr = s.String()
		}
		t.Fatalf("interlock %v did not exit within a minute; stderr:\n%s", cmd.Args[1:], stderr)
	}
	return cmd.ProcessState.ExitCode()
}

// NewLockClient returns an interlock client on the shared server, closed
// with the test.
func NewLockClient(t *testing.T, opts ...interlock.Option) (*interlock.Client, rueidis.Client) {
	t.Helper()
	rc := redistest.NewClient(t, srv.Addr())
	c, err := interlock.New(rc, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c, rc
}

// Exists reports whether key exists.
func Exists(t *testing.T, rc rueidis.Client, key string) bool {
	t.Helper()
	n, err := rc.Do(context.Background(), rc.B().Exists().Key(key).Build()).AsInt64()
	require.NoError(t, err)
	return n == 1
}

// CleanupKeys deletes keys (of one slot) when the test ends.
func CleanupKeys(t *testing.T, rc rueidis.Client, keys ...string) {
	t.Helper()
	t.Cleanup(func() { rc.Do(context.Background(), rc.B().Del().Key(keys...).Build()) })
}

// Do runs each command (words separated by blanks) on rc, and deletes the
// keys given when the test ends.
func Do(t *testing.T, rc rueidis.Client, cmds []string, cleanup ...string) {
	t.Helper()
	CleanupKeys(t, rc, cleanup...)
	for _, c := range cmds {
		require.NoError(t, rc.Do(t.Context(), rc.B().Arbitrary(strings.Fields(c)...).Build()).Error(), c)
	}
}

// Available returns a semaphore's free permits as stored.
func Available(t *testing.T, rc rueidis.Client, name string) int64 {
	t.Helper()
	n, err := rc.Do(t.Context(), rc.B().Get().Key(name).Build()).AsInt64()
	require.NoError(t, err)
	return n
}

// JSONLines decodes out, one JSON object per line, into a T each.
func JSONLines[T any](t *testing.T, out string) []T {
	t.Helper()
	var values []T
	for line := range strings.Lines(out) {
		var v T
		require.NoError(t, json.Unmarshal([]byte(line), &v), line)
		values = append(values, v)
	}
	return values
}

// FieldLines returns the lines of a table with their cells joined by one
// blank each.
func FieldLines(table string) []string {
	var lines []string
	for line := range strings.Lines(table) {
		lines = append(lines, strings.Join(strings.Fields(line), " "))
	}
	return lines
}

// SyncBuffer is a bytes.Buffer that a process may write while the test
// reads it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Dead reports whether process pid has exited: it no longer exists, or it
// is a zombie waiting for its parent (init, for an orphan) to reap it.
func Dead(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false // no /proc: wait for the reaping
	}
	// "pid (comm) state ...": the state follows the last ')'.
	i := strings.LastIndexByte(string(stat), ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}
