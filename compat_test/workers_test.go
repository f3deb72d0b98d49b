package compat_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/rlock"
)

// Worker processes. The tests that need more than one process re-execute
// the test binary with envWorker set; TestMain then calls runWorker instead
// of running tests. A worker talks to the parent through lines on stdin and
// stdout and reports failures on stderr with exit status 1.

const (
	envWorker     = "INTERLOCK_COMPAT_WORKER"     // the worker's mode: modeExclusion or modeHold
	envAddrs      = "INTERLOCK_COMPAT_ADDRS"      // comma-separated Redis addresses
	envNames      = "INTERLOCK_COMPAT_NAMES"      // comma-separated lock names
	envGoroutines = "INTERLOCK_COMPAT_GOROUTINES" // exclusion: goroutines per process
	envIterations = "INTERLOCK_COMPAT_ITERATIONS" // exclusion: acquisitions per goroutine
	envWatchdog   = "INTERLOCK_COMPAT_WATCHDOG"   // hold: the Client's watchdog timeout (a time.ParseDuration string)

	modeExclusion = "exclusion"
	modeHold      = "hold"

	// workerTimeout bounds a worker's whole run, so that a wedged worker
	// cannot outlive the test by much.
	workerTimeout = 5 * time.Minute
)

// Derived keys the exclusion workers use; each shares the lock's hash tag,
// so that on a cluster it lives on the lock's node.
func gaugeKey(name string) string      { return keys.Prefix("compat_gauge", name) }
func violationsKey(name string) string { return keys.Prefix("compat_violations", name) }
func countKey(name string) string      { return keys.Prefix("compat_count", name) }

func runWorker(mode string) int {
	run := work
	if mode == modeTorture {
		run = func(string) error { return tortureWorker() }
	}
	if err := run(mode); err != nil {
		fmt.Fprintf(os.Stderr, "worker %s (pid %d): %v\n", mode, os.Getpid(), err)
		return 1
	}
	return 0
}

func work(mode string) error {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: strings.Split(os.Getenv(envAddrs), ",")})
	if err != nil {
		return err
	}
	defer rc.Close()
	names := strings.Split(os.Getenv(envNames), ",")
	stdin := bufio.NewReader(os.Stdin)
	switch mode {
	case modeExclusion:
		goroutines, err1 := strconv.Atoi(os.Getenv(envGoroutines))
		iterations, err2 := strconv.Atoi(os.Getenv(envIterations))
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		return exclusionWorker(rc, stdin, names, goroutines, iterations)
	case modeHold:
		watchdog, err := time.ParseDuration(os.Getenv(envWatchdog))
		if err != nil {
			return err
		}
		return holdWorker(rc, stdin, names[0], watchdog)
	}
	return fmt.Errorf("unknown mode %q", mode)
}

// expectLine reads one line from the parent and checks it.
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

// exclusionWorker: "ready" → (go) → every goroutine takes and releases
// random locks of names iterations times → "done <acquisitions>
// <hub channels>" → (exit) → close.
//
// Inside each hold, INCR of the lock's gauge must return 1 and DECR must
// return 0; anything else is counted in the lock's violations key.
func exclusionWorker(rc rueidis.Client, stdin *bufio.Reader, names []string, goroutines, iterations int) error {
	c, err := interlock.New(rc)
	if err != nil {
		return err
	}
	defer c.Close()
	fmt.Println("ready")
	if err := expectLine(stdin, "go"); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), workerTimeout)
	defer cancel()
	var (
		wg       sync.WaitGroup
		acquired atomic.Int64
		errMu    sync.Mutex
		errs     []error
	)
	for g := range goroutines {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(g)))
			for range iterations {
				name := names[rnd.IntN(len(names))]
				if err := holdOnce(ctx, c, rc, name); err != nil {
					errMu.Lock()
					errs = append(errs, fmt.Errorf("goroutine %d: %w", g, err))
					errMu.Unlock()
					cancel()
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
	fmt.Printf("done %d %d\n", acquired.Load(), c.Stats().Channels)
	return expectLine(stdin, "exit")
}

// holdOnce takes name, checks exclusion with its gauge, and releases it.
func holdOnce(ctx context.Context, c *interlock.Client, rc rueidis.Client, name string) error {
	m := rlock.New(c, name)
	if err := m.Lock(ctx); err != nil {
		return fmt.Errorf("lock %s: %w", name, err)
	}
	gauge := gaugeKey(name)
	inside, err := rc.Do(ctx, rc.B().Incr().Key(gauge).Build()).AsInt64()
	if err != nil {
		return fmt.Errorf("INCR %s: %w", gauge, err)
	}
	violated := inside != 1
	time.Sleep(50 * time.Microsecond) // the critical section's "work"
	res := rc.DoMulti(ctx, rc.B().Decr().Key(gauge).Build(), rc.B().Incr().Key(countKey(name)).Build())
	left, err := res[0].AsInt64()
	if err := errors.Join(err, res[1].Error()); err != nil {
		return fmt.Errorf("DECR %s: %w", gauge, err)
	}
	if violated || left != 0 {
		if err := rc.Do(ctx, rc.B().Incr().Key(violationsKey(name)).Build()).Error(); err != nil {
			return err
		}
	}
	if err := m.Unlock(ctx); err != nil {
		return fmt.Errorf("unlock %s: %w", name, err)
	}
	return nil
}

// holdWorker takes name with the given watchdog timeout as owner 1, prints
// "ready <owner>", and keeps it until stdin closes (or the process is
// killed, which is the point).
func holdWorker(rc rueidis.Client, stdin *bufio.Reader, name string, watchdog time.Duration) error {
	c, err := interlock.New(rc, interlock.WithWatchdogTimeout(watchdog))
	if err != nil {
		return err
	}
	defer c.Close()
	ctx := interlock.WithOwner(context.Background(), 1)
	owner, err := c.Owner(ctx)
	if err != nil {
		return err
	}
	if err := rlock.New(c, name).Lock(ctx); err != nil {
		return err
	}
	fmt.Println("ready", owner)
	_, err = io.Copy(io.Discard, stdin)
	return err
}

// worker is a running worker process, seen from the parent.
type worker struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // stdout, closed at EOF
	stderr *syncBuffer
	exited chan struct{}
	err    error // the exit error; set before exited closes
}

// syncBuffer is a bytes.Buffer safe for the exec package's copying
// goroutine and the test reading it.
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

// startWorker starts the test binary as a worker in mode with env added.
// The returned cleanup kills it if it is still running and waits for it.
func startWorker(mode string, env map[string]string) (*worker, func(), error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envWorker+"="+mode)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	w := &worker{cmd: cmd, lines: make(chan string, 64), stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = w.stderr
	if w.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	go func() {
		defer close(w.exited)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case w.lines <- sc.Text():
			default: // nobody listens for more than a few lines
			}
		}
		close(w.lines)
		w.err = cmd.Wait()
	}()
	cleanup := func() {
		select {
		case <-w.exited:
		default:
			_ = cmd.Process.Kill()
			<-w.exited
		}
		w.stdin.Close()
	}
	return w, cleanup, nil
}

// line waits up to timeout for the worker's next stdout line.
func (w *worker) line(timeout time.Duration) (string, error) {
	select {
	case l, ok := <-w.lines:
		if !ok {
			<-w.exited
			return "", fmt.Errorf("worker exited (%v) before writing a line; stderr:\n%s", w.err, w.stderr)
		}
		return l, nil
	case <-time.After(timeout):
		return "", fmt.Errorf("no line from the worker within %v; stderr:\n%s", timeout, w.stderr)
	}
}

// send writes one line to the worker.
func (w *worker) send(line string) error {
	_, err := io.WriteString(w.stdin, line+"\n")
	return err
}

// wait waits up to timeout for the worker to exit and returns its exit
// error.
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
