package fairlock_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
)

// The fairness test runs its contenders in two operating-system processes:
// the test binary re-executes itself with envWorker set, and TestMain then
// runs runWorker instead of the tests. A worker talks to the parent in
// lines on stdin and stdout, and reports failures on stderr with exit
// status 1 (the pattern of compat_test/workers_test.go).
const (
	envWorker     = "INTERLOCK_FAIRLOCK_WORKER" // set (to "fairness") in a worker
	envAddr       = "INTERLOCK_FAIRLOCK_ADDR"
	envName       = "INTERLOCK_FAIRLOCK_NAME"
	envGoroutines = "INTERLOCK_FAIRLOCK_GOROUTINES"
	envIterations = "INTERLOCK_FAIRLOCK_ITERATIONS"

	fairProcs      = 2
	fairGoroutines = 8
	fairIterations = 125 // 2 x 8 x 125 = 2,000 acquisitions
	fairHold       = time.Millisecond
	workerTimeout  = 3 * time.Minute
)

// gaugeKey is the key the workers' critical sections count themselves in.
func gaugeKey(name string) string { return keys.Prefix("fairlock_gauge", name) }

func runWorker() int {
	if err := fairnessWorker(); err != nil {
		fmt.Fprintf(os.Stderr, "fairness worker (pid %d): %v\n", os.Getpid(), err)
		return 1
	}
	return 0
}

// fairnessWorker: "ready" → (go) → every goroutine locks, checks the
// gauge, holds fairHold, unlocks, iterations times → "done <acquisitions>
// <violations> <hub channels>" → (exit) → close.
func fairnessWorker() error {
	goroutines, err1 := strconv.Atoi(os.Getenv(envGoroutines))
	iterations, err2 := strconv.Atoi(os.Getenv(envIterations))
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	name := os.Getenv(envName)
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{os.Getenv(envAddr)}})
	if err != nil {
		return err
	}
	defer rc.Close()
	c, err := interlock.New(rc)
	if err != nil {
		return err
	}
	defer c.Close()
	stdin := bufio.NewReader(os.Stdin)
	fmt.Println("ready")
	if err := expectLine(stdin, "go"); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), workerTimeout)
	defer cancel()
	var (
		wg         sync.WaitGroup
		acquired   atomic.Int64
		violations atomic.Int64
		errMu      sync.Mutex
		errs       []error
	)
	fail := func(err error) {
		errMu.Lock()
		errs = append(errs, err)
		errMu.Unlock()
		cancel()
	}
	gauge := gaugeKey(name)
	for range goroutines {
		wg.Go(func() {
			m := fairlock.New(c, name)
			for range iterations {
				if err := m.Lock(ctx); err != nil {
					fail(err)
					return
				}
				if n, err := rc.Do(ctx, rc.B().Incr().Key(gauge).Build()).AsInt64(); err != nil || n != 1 {
					violations.Add(1)
				}
				time.Sleep(fairHold)
				if n, err := rc.Do(ctx, rc.B().Decr().Key(gauge).Build()).AsInt64(); err != nil || n != 0 {
					violations.Add(1)
				}
				if err := m.Unlock(ctx); err != nil {
					fail(err)
					return
				}
				acquired.Add(1)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Printf("done %d %d %d\n", acquired.Load(), violations.Load(), c.Stats().Channels)
	return expectLine(stdin, "exit")
}

func expectLine(r *bufio.Reader, want string) error {
	line, err := r.ReadString('\n')
	if err != nil {
		return fmt.Errorf("waiting for %q from the parent: %w", want, err)
	}
	if got := strings.TrimSpace(line); got != want {
		return fmt.Errorf("parent sent %q, want %q", got, want)
	}
	return nil
}

// TestFairnessAcrossProcesses: 16 goroutines in two processes take one
// fair lock 2,000 times in all. A MONITOR connection records, in the
// server's own order and clock, every RPUSH onto the queue (an enqueue),
// every HSET of the lock (an acquisition) and every DEL of it (a release).
// Every waiter must acquire in the order it was enqueued; none may wait
// longer than its position in the queue times the longest hold, plus a
// second; and the gauge counted inside the critical section never exceeds 1.
func TestFairnessAcrossProcesses(t *testing.T) {
	name := lockName(t) + ":" + strconv.Itoa(os.Getpid())
	rc := redistest.NewClient(t, addr)
	t.Cleanup(func() { rc.Do(context.Background(), rc.B().Del().Key(gaugeKey(name)).Build()) })

	env := []string{
		envWorker + "=fairness",
		envAddr + "=" + addr,
		envName + "=" + name,
		envGoroutines + "=" + strconv.Itoa(fairGoroutines),
		envIterations + "=" + strconv.Itoa(fairIterations),
	}
	workers := make([]*worker, fairProcs)
	for i := range workers {
		workers[i] = startWorker(t, env)
	}
	for _, w := range workers {
		require.Equal(t, "ready", w.line(t, time.Minute))
	}
	mon := startMonitor(t, addr)

	start := time.Now()
	for _, w := range workers {
		w.send(t, "go")
	}
	total := 0
	for i, w := range workers {
		var n, violations, channels int
		l := w.line(t, workerTimeout)
		_, err := fmt.Sscanf(l, "done %d %d %d", &n, &violations, &channels)
		require.NoError(t, err, "worker %d wrote %q", i, l)
		assert.Equal(t, fairGoroutines*fairIterations, n, "worker %d acquisitions", i)
		assert.Zero(t, violations, "worker %d: the gauge went above 1", i)
		assert.Zero(t, channels, "worker %d: subscriptions left in its hub", i)
		total += n
	}
	elapsed := time.Since(start)
	lines := mon.stop(t)
	for i, w := range workers {
		w.send(t, "exit")
		require.NoError(t, w.wait(30*time.Second), "worker %d", i)
	}

	// Replay the queue from what the scripts did.
	q, N := queueOf(name), name
	type enqueue struct {
		seq, pos int
		at       time.Time
	}
	var (
		queued    []string
		pending   = map[string]enqueue{}
		nextSeq   int
		order     []int // enqueue numbers, in acquisition order
		waits     []time.Duration
		slowest   time.Duration
		slowestAt enqueue
		direct    int // acquisitions without queueing
		holdStart time.Time
		maxHold   time.Duration
		holds     int
		purged    int
	)
	type waited struct {
		e    enqueue
		wait time.Duration
	}
	var all []waited
	for _, l := range lines {
		switch {
		case l.is("rpush", q):
			o := l.args[2]
			if _, ok := pending[o]; ok {
				purged++ // dropped from the queue earlier, and queued again
			}
			queued = append(queued, o)
			pending[o] = enqueue{nextSeq, len(queued), l.at}
			nextSeq++
		case l.is("lpop", q):
			if len(queued) > 0 {
				queued = queued[1:]
			}
		case l.is("lrem", q):
			purged++
			queued = slices.DeleteFunc(queued, func(s string) bool { return s == l.args[3] })
		case l.is("hset", N):
			o := l.args[2]
			holdStart = l.at
			if e, ok := pending[o]; ok {
				delete(pending, o)
				order = append(order, e.seq)
				all = append(all, waited{e, l.at.Sub(e.at)})
				waits = append(waits, l.at.Sub(e.at))
			} else {
				direct++
			}
		case l.is("del", N):
			holds++
			maxHold = max(maxHold, l.at.Sub(holdStart))
		}
	}
	require.Equal(t, total, len(order)+direct, "acquisitions seen by MONITOR")
	require.Equal(t, total, holds, "releases seen by MONITOR")
	assert.Zero(t, purged, "waiters left the queue before their turn")
	assert.Empty(t, pending, "enqueued waiters that never acquired")
	inOrder := true
	for i, seq := range order {
		if seq != i {
			inOrder = false
			assert.Fail(t, "out of order", "acquisition %d went to the waiter enqueued %d-th", i, seq)
			break
		}
	}
	assert.True(t, inOrder, "acquisition order differs from enqueue order")
	bound := func(pos int) time.Duration { return time.Duration(pos)*maxHold + time.Second }
	for _, w := range all {
		if w.wait > slowest {
			slowest, slowestAt = w.wait, w.e
		}
		assert.LessOrEqual(t, w.wait, bound(w.e.pos), "waiter enqueued %d-th at position %d", w.e.seq, w.e.pos)
	}
	slices.Sort(waits)
	p := func(f float64) time.Duration { return waits[int(f*float64(len(waits)-1))] }
	t.Logf("%d acquisitions by %d goroutines in %d processes in %v (%.0f/s): %d through the queue, in enqueue order: %v; %d without queueing",
		total, fairProcs*fairGoroutines, fairProcs, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds(),
		len(order), inOrder, direct)
	t.Logf("queue wait: p50 %v, p99 %v, max %v (position %d, bound %v); longest hold %v",
		p(0.5).Round(time.Microsecond), p(0.99).Round(time.Microsecond), slowest.Round(time.Microsecond),
		slowestAt.pos, bound(slowestAt.pos).Round(time.Millisecond), maxHold.Round(time.Microsecond))

	redistest.Eventually(t, 3*time.Second, func() bool {
		ks := leftOver(t, rc, name)
		return len(ks) == 1 && ks[0] == gaugeKey(name)
	}, "lock keys left behind")
	chans, err := rc.Do(context.Background(), rc.B().PubsubChannels().Pattern("*"+name+"*").Build()).AsStrSlice()
	require.NoError(t, err)
	assert.Empty(t, chans)
}

// monLine is one MONITOR line of a script's command.
type monLine struct {
	at   time.Time
	args []string
}

func (l monLine) is(cmd, key string) bool {
	return len(l.args) >= 2 && l.args[0] == cmd && l.args[1] == key
}

// monitor is a MONITOR connection that records the commands scripts run.
type monitor struct {
	nc    net.Conn
	done  chan struct{}
	lines []monLine
	err   error
}

func startMonitor(t *testing.T, addr string) *monitor {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	r := bufio.NewReaderSize(nc, 1<<16)
	_, err = nc.Write([]byte("MONITOR\r\n"))
	require.NoError(t, err)
	ok, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "+OK\r\n", ok)
	m := &monitor{nc: nc, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			s, err := r.ReadString('\n')
			if err != nil {
				m.err = err
				return
			}
			if l, ok := parseMonitor(strings.TrimSuffix(s, "\r\n")); ok {
				m.lines = append(m.lines, l)
			}
			if strings.HasSuffix(s, `"fairlock-monitor-end"`+"\r\n") {
				return
			}
		}
	}()
	t.Cleanup(func() { nc.Close(); <-m.done })
	return m
}

// stop marks the end of the recording and returns what was recorded.
func (m *monitor) stop(t *testing.T) []monLine {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("ECHO fairlock-monitor-end\r\n"))
	require.NoError(t, err)
	select {
	case <-m.done:
	case <-time.After(30 * time.Second):
		t.Fatal("MONITOR did not see the end marker")
	}
	require.NoError(t, m.err)
	return m.lines
}

// parseMonitor parses a line such as
//
//	1795998984.145797 [0 lua] "rpush" "redisson_lock_queue:{x}" "owner"
//
// keeping only commands run by scripts. The test's names and owners have
// no quotes or backslashes, so arguments are split on `" "`.
func parseMonitor(s string) (monLine, bool) {
	ts, rest, ok := strings.Cut(s, " [")
	if !ok {
		return monLine{}, false
	}
	client, args, ok := strings.Cut(rest, "] ")
	if !ok || !strings.HasSuffix(client, " lua") || len(args) < 2 {
		return monLine{}, false
	}
	sec, frac, _ := strings.Cut(ts, ".")
	secs, err1 := strconv.ParseInt(sec, 10, 64)
	micros, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil {
		return monLine{}, false
	}
	return monLine{
		at:   time.Unix(secs, micros*1000),
		args: strings.Split(args[1:len(args)-1], `" "`),
	}, true
}

// worker is a running worker process, seen from the parent.
type worker struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *syncBuffer
	exited chan struct{}
	err    error // set before exited closes
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startWorker starts the test binary as a worker with env added; t.Cleanup
// kills it if it is still running.
func startWorker(t *testing.T, env []string) *worker {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), env...)
	w := &worker{cmd: cmd, lines: make(chan string, 16), stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = w.stderr
	w.stdin, err = cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	go func() {
		defer close(w.exited)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case w.lines <- sc.Text():
			default:
			}
		}
		close(w.lines)
		w.err = cmd.Wait()
	}()
	t.Cleanup(func() {
		select {
		case <-w.exited:
		default:
			_ = cmd.Process.Kill()
			<-w.exited
		}
		w.stdin.Close()
	})
	return w
}

func (w *worker) line(t *testing.T, timeout time.Duration) string {
	t.Helper()
	select {
	case l, ok := <-w.lines:
		if !ok {
			<-w.exited
			t.Fatalf("worker exited (%v) before writing a line; stderr:\n%s", w.err, w.stderr)
		}
		return l
	case <-time.After(timeout):
		t.Fatalf("no line from the worker within %v; stderr:\n%s", timeout, w.stderr)
	}
	return ""
}

func (w *worker) send(t *testing.T, line string) {
	t.Helper()
	_, err := io.WriteString(w.stdin, line+"\n")
	require.NoError(t, err)
}

func (w *worker) wait(timeout time.Duration) error {
	select {
	case <-w.exited:
		if w.err != nil {
			return fmt.Errorf("%w; stderr:\n%s", w.err, w.stderr)
		}
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("worker still running after %v; stderr:\n%s", timeout, w.stderr)
	}
}
