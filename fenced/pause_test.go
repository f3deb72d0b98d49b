//go:build linux

package fenced_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fenced"
)

// The fencing test of reliability-hazards.md H7/T11: a holder process is
// paused (SIGSTOP) past its lease; another holder takes the lock and
// writes; the first one resumes and writes with its old token. Through a
// RedisFence that write must be refused, every time; written without the
// fence (the canary), it must land, every time, which shows that the test
// can see a stale write when there is one.

const (
	modeHolder  = "holder"
	envAddr     = "INTERLOCK_FENCED_ADDR"
	envWatchdog = "INTERLOCK_FENCED_WATCHDOG"

	// pauseWatchdog is the paused holder's watchdog timeout, its lease: the
	// pause outlasts it, and each run takes about that long.
	pauseWatchdog = 50 * time.Millisecond
	// pauseRuns is how many pauses each mode goes through (pauseRunsShort
	// with -short).
	pauseRuns      = 200
	pauseRunsShort = 20
	// workerReply bounds how long the test waits for a line from the
	// worker, and the worker for its guard to end.
	workerReply = 10 * time.Second
)

func init() { runWorker = pauseWorker }

func pauseWorker(mode string) int {
	if mode != modeHolder {
		fmt.Fprintf(os.Stderr, "unknown worker mode %q\n", mode)
		return 2
	}
	if err := holder(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "holder (pid %d): %v\n", os.Getpid(), err)
		return 1
	}
	return 0
}

// holder is the worker that gets paused. It reads commands, one a line:
//
//	lock NAME                                -> locked TOKEN
//	write guarded|plain FENCE DATA VALUE     -> wrote ACCEPTED guard lost|alive|other knew BOOL unlock notheld|ok|error
//
// lock takes NAME with the watchdog as owner 1. write writes VALUE to DATA
// with the token of the last lock, through a RedisFence on FENCE (guarded)
// or with a plain SET (plain), without looking at its guard first: a
// holder that checked its guard, was paused, and resumed mid-write. It then
// waits for the guard to end, reports its cause and whether it had already
// ended when the write was sent (knew), and unlocks.
func holder(stdin io.Reader, stdout io.Writer) error {
	watchdog, err := time.ParseDuration(os.Getenv(envWatchdog))
	if err != nil {
		return err
	}
	// One connection, dialled by NewClient. With several, rueidis dials
	// the others on first use, and a caller that finds a dial in flight
	// gets that dial's result: a renewal tick, whose context ends after a
	// third of this short watchdog, could then fail the holder's own
	// command with "context deadline exceeded" on a loaded machine.
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{os.Getenv(envAddr)}, PipelineMultiplex: -1})
	if err != nil {
		return err
	}
	defer rc.Close()
	c, err := interlock.New(rc, interlock.WithWatchdogTimeout(watchdog))
	if err != nil {
		return err
	}
	defer c.Close()
	ctx := interlock.WithOwner(context.Background(), 1)

	var (
		m     *fenced.Mutex
		token uint64
		guard context.Context
	)
	in := bufio.NewScanner(stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		switch {
		case len(f) == 2 && f[0] == "lock":
			m = fenced.New(c, f[1])
			if token, err = m.LockToken(ctx); err != nil {
				return fmt.Errorf("%s: %w", in.Text(), err)
			}
			guard = m.Guard(ctx)
			fmt.Fprintf(stdout, "locked %d\n", token)
		case len(f) == 5 && f[0] == "write" && m != nil:
			knew := guard.Err() != nil
			accepted := true
			if f[1] == "guarded" {
				err = fenced.NewRedisFence(rc, f[2]).Set(ctx, token, f[3], f[4])
				if errors.Is(err, fenced.ErrStale) {
					accepted, err = false, nil
				}
			} else {
				err = rc.Do(ctx, rc.B().Set().Key(f[3]).Value(f[4]).Build()).Error()
			}
			if err != nil {
				return fmt.Errorf("%s: %w", in.Text(), err)
			}
			select {
			case <-guard.Done():
			case <-time.After(workerReply):
			}
			cause := "alive"
			switch {
			case errors.Is(context.Cause(guard), interlock.ErrLockLost):
				cause = "lost"
			case guard.Err() != nil:
				cause = "other"
			}
			unlock := "ok"
			switch err := m.Unlock(ctx); {
			case errors.Is(err, interlock.ErrNotHeld):
				unlock = "notheld"
			case err != nil:
				unlock = "error"
			}
			fmt.Fprintf(stdout, "wrote %t guard %s knew %t unlock %s\n", accepted, cause, knew, unlock)
		default:
			return fmt.Errorf("bad command %q", in.Text())
		}
	}
	return in.Err()
}

// pausable is the holder process, seen from the test.
type pausable struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	exited chan struct{}
	stderr strings.Builder // written by exec's copier until exited closes
}

func startHolder(t *testing.T) *pausable {
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envWorker+"="+modeHolder, envAddr+"="+addr, envWatchdog+"="+pauseWatchdog.String())
	p := &pausable{t: t, cmd: cmd, lines: make(chan string, 16), exited: make(chan struct{})}
	cmd.Stderr = &p.stderr
	p.stdin, err = cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	go func() {
		defer close(p.exited)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		p.stdin.Close() // the worker exits at EOF
		select {
		case <-p.exited:
		case <-time.After(workerReply):
			_ = cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

func (p *pausable) send(format string, args ...any) {
	p.t.Helper()
	_, err := fmt.Fprintf(p.stdin, format+"\n", args...)
	require.NoError(p.t, err)
}

func (p *pausable) line() string {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			<-p.exited
			p.t.Fatalf("the holder exited: %v; stderr:\n%s", p.cmd.ProcessState, p.stderr.String())
		}
		return l
	case <-time.After(workerReply):
		p.t.Fatalf("no line from the holder within %v", workerReply)
	}
	return ""
}

// stop sends SIGSTOP and waits until every thread of the process is
// stopped, so that nothing of it runs (its watchdog included) until cont.
func (p *pausable) stop() {
	p.t.Helper()
	require.NoError(p.t, p.cmd.Process.Signal(syscall.SIGSTOP))
	tasks := filepath.Join("/proc", strconv.Itoa(p.cmd.Process.Pid), "task")
	deadline := time.Now().Add(workerReply)
	for {
		stat, err := filepath.Glob(filepath.Join(tasks, "*", "stat"))
		require.NoError(p.t, err)
		stopped := len(stat) > 0
		for _, s := range stat {
			b, err := os.ReadFile(s)
			// The state follows the command name in parentheses.
			if i := strings.LastIndexByte(string(b), ')'); err == nil && i >= 0 && i+2 < len(b) {
				if st := b[i+2]; st != 'T' && st != 't' {
					stopped = false
				}
			}
		}
		if stopped {
			return
		}
		require.True(p.t, time.Now().Before(deadline), "the holder did not stop")
		time.Sleep(200 * time.Microsecond)
	}
}

func (p *pausable) cont() {
	p.t.Helper()
	require.NoError(p.t, p.cmd.Process.Signal(syscall.SIGCONT))
}

// TestPausedHolder runs the pause many times: "fenced" writes through a
// RedisFence and must never let a stale write through; "canary" writes
// with a plain SET and must see every stale write land.
func TestPausedHolder(t *testing.T) {
	runs := pauseRuns
	if testing.Short() {
		runs = pauseRunsShort
	}
	t.Run("fenced", func(t *testing.T) { pauseRunsOf(t, runs, true) })
	t.Run("canary", func(t *testing.T) { pauseRunsOf(t, runs, false) })
}

func pauseRunsOf(t *testing.T, runs int, guarded bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, rc := newClient(t)
	name := lockName(t)
	fenceKey, dataKey := "{"+name+"}:fence", "{"+name+"}:data"
	t.Cleanup(func() { rc.Do(context.Background(), rc.B().Del().Key(fenceKey, dataKey).Build()) })
	m := fenced.New(c, name)
	fence := fenced.NewRedisFence(rc, fenceKey)
	b := interlock.WithOwner(ctx, interlock.NewOwnerID())
	h := startHolder(t)
	mode := map[bool]string{true: "guarded", false: "plain"}[guarded]
	get := func() string {
		t.Helper()
		s, err := rc.Do(ctx, rc.B().Get().Key(dataKey).Build()).ToString()
		require.NoError(t, err)
		return s
	}

	var (
		stale, lost, knew int
		held              int
		handover, report  []time.Duration
		last              uint64
	)
	start := time.Now()
	for i := range runs {
		// A takes the lock in the holder process, and is paused.
		h.send("lock %s", name)
		var ta uint64
		_, err := fmt.Sscanf(h.line(), "locked %d", &ta)
		require.NoError(t, err)
		require.Greater(t, ta, last, "run %d: tokens went backwards", i)
		h.stop()
		paused := time.Now()
		n, err := rc.Do(ctx, rc.B().Exists().Key(name).Build()).AsInt64()
		require.NoError(t, err)
		if n == 1 {
			held++ // A really held the lock when it was paused
		}

		// B takes it once A's lease has run out, and writes.
		tb, ok, err := m.TryLockToken(b, 5*time.Second, 0)
		require.NoError(t, err)
		require.True(t, ok, "run %d: B did not get the lock of a paused holder", i)
		handover = append(handover, time.Since(paused))
		require.Greater(t, tb, ta, "run %d", i)
		last = tb
		bValue := fmt.Sprintf("B-%d", i)
		require.NoError(t, fence.Set(ctx, tb, dataKey, bValue), "run %d: B's write", i)

		// A resumes in the middle of its write, with its old token.
		aValue := fmt.Sprintf("A-%d", i)
		h.send("write %s %s %s %s", mode, fenceKey, dataKey, aValue)
		h.cont()
		resumed := time.Now()
		var (
			accepted, aKnew bool
			cause, unlock   string
		)
		l := h.line()
		report = append(report, time.Since(resumed))
		_, err = fmt.Sscanf(l, "wrote %t guard %s knew %t unlock %s", &accepted, &cause, &aKnew, &unlock)
		require.NoError(t, err, "run %d: holder wrote %q", i, l)
		assert.Equal(t, "lost", cause, "run %d: A's guard after it resumed", i)
		assert.Equal(t, "notheld", unlock, "run %d: A's unlock", i)
		if cause == "lost" {
			lost++
		}
		if aKnew {
			knew++
		}

		switch got := get(); {
		case got == aValue:
			stale++
			assert.Equal(t, !guarded, accepted, "run %d: the data has A's value", i)
		case guarded:
			assert.Equal(t, bValue, got, "run %d", i)
			assert.False(t, accepted, "run %d: A's stale write was admitted", i)
		}
		// B's writes still land after A's attempt, and B releases.
		require.NoError(t, fence.Set(ctx, tb, dataKey, bValue+"-again"), "run %d: B's second write", i)
		require.NoError(t, m.Unlock(b))
		if t.Failed() {
			break
		}
	}
	elapsed := time.Since(start)
	highest, err := fence.Highest(ctx)
	require.NoError(t, err)
	assert.Equal(t, last, highest)

	slices.Sort(handover)
	slices.Sort(report)
	pct := func(d []time.Duration, p int) time.Duration { return d[(len(d)-1)*p/100].Round(100 * time.Microsecond) }
	t.Logf("%s, %d runs in %v (lease %v): stale writes that landed %d; A held the lock when paused %d/%d; A's guard lost %d/%d (already lost when A wrote: %d); "+
		"pause to B's lock p50 %v p99 %v max %v; resume to A's report p50 %v p99 %v",
		mode, runs, elapsed.Round(time.Millisecond), pauseWatchdog, stale, held, runs, lost, runs, knew,
		pct(handover, 50), pct(handover, 99), handover[len(handover)-1].Round(100*time.Microsecond),
		pct(report, 50), pct(report, 99))
	// A loaded machine may starve A's renewals before the pause now and
	// then; most runs must still pause a real holder.
	assert.GreaterOrEqual(t, held, runs*9/10, "runs in which A held the lock when it was paused")
	if guarded {
		assert.Zero(t, stale, "stale writes admitted by the fence")
	} else {
		assert.Equal(t, runs, stale, "the canary did not see every stale write land")
	}
}
