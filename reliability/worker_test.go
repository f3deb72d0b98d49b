package reliability

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Worker processes.
//
// A test that needs a process it can kill, stop or resume re-executes its
// own binary: startWorker runs os.Args[0] with -test.run=^$ and the
// environment variable INTERLOCK_RELIABILITY_WORKER set to a worker name,
// and TestMain (main_test.go) runs the worker registered under that name
// instead of the tests:
//
//	var _ = register("holder", holderWorker) // a func() error
//
// The worker's configuration travels as JSON in INTERLOCK_RELIABILITY_CONFIG
// (workerConfig decodes it). Parent and worker then talk in lines: the
// parent writes commands to the worker's stdin (workerProc.Send, read in
// the worker with workerCommands), the worker writes messages to stdout
// (workerSay), each "<verb> <json>" with an optional JSON payload:
//
//	ready
//	acquired {"name":"t11-3","token":17,"t":81234567890}
//	result {"cycles":1000,...}
//
// A worker's stderr is copied, line by line, to the test log. A worker
// that returns an error exits with status 1 after printing it on stderr.
// The parent's cleanup kills whatever is still running (SIGKILL, which also
// ends a stopped process) and waits for it, so no process and no goroutine
// outlives the test.

// envConfig carries a worker's JSON configuration.
const envConfig = "INTERLOCK_RELIABILITY_CONFIG"

// workerMsg is one line a worker wrote on stdout.
type workerMsg struct {
	// Verb is the line's first word.
	Verb string
	// Payload is the rest of the line, JSON or empty.
	Payload string
}

// Decode unmarshals the message's JSON payload into v.
func (m workerMsg) Decode(v any) error {
	if m.Payload == "" {
		return fmt.Errorf("worker message %q has no payload", m.Verb)
	}
	if err := json.Unmarshal([]byte(m.Payload), v); err != nil {
		return fmt.Errorf("worker message %q: %w", m.Verb, err)
	}
	return nil
}

func (m workerMsg) String() string {
	if m.Payload == "" {
		return m.Verb
	}
	return m.Verb + " " + m.Payload
}

// parseWorkerLine splits a protocol line into verb and payload.
func parseWorkerLine(line string) workerMsg {
	verb, payload, _ := strings.Cut(strings.TrimSpace(line), " ")
	return workerMsg{Verb: verb, Payload: strings.TrimSpace(payload)}
}

// workerProc is a running worker process, seen from the test. Its methods
// are safe for concurrent use.
type workerProc struct {
	name string
	cmd  *exec.Cmd

	stdinMu sync.Mutex
	stdin   io.WriteCloser

	msgs   chan workerMsg // stdout lines; closed at EOF
	exited chan struct{}  // closed once the process was waited for
	err    error          // the exit error; set before exited closes
	joined sync.WaitGroup // the stdout and stderr readers and the waiter
}

// startWorker starts the test binary as the worker registered under name,
// with cfg (any value encoding/json accepts, or nil) as its configuration.
// The worker's stderr goes to tb's log. tb.Cleanup kills the worker if it
// still runs and waits for it and for every goroutine startWorker started.
func startWorker(tb testing.TB, name string, cfg any) *workerProc {
	tb.Helper()
	w, err := spawnWorker(tb, name, cfg)
	if err != nil {
		tb.Fatalf("starting worker %s: %v", name, err)
	}
	tb.Cleanup(w.cleanup)
	return w
}

// spawnWorker is startWorker without the cleanup, which the caller must
// arrange (w.cleanup).
func spawnWorker(tb testing.TB, name string, cfg any) (*workerProc, error) {
	if _, ok := workers[name]; !ok {
		return nil, fmt.Errorf("no worker registered as %q", name)
	}
	env := append(os.Environ(), envWorker+"="+name)
	if cfg != nil {
		b, err := json.Marshal(cfg)
		if err != nil {
			return nil, fmt.Errorf("encoding the configuration: %w", err)
		}
		env = append(env, envConfig+"="+string(b))
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = env
	w := &workerProc{name: name, cmd: cmd, msgs: make(chan workerMsg, 1024), exited: make(chan struct{})}
	var err error
	if w.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	prefix := fmt.Sprintf("worker %s[%d]: ", name, cmd.Process.Pid)
	var readers sync.WaitGroup
	readers.Add(2)
	w.joined.Add(3)
	go func() { // stdout: protocol lines
		defer w.joined.Done()
		defer readers.Done()
		defer close(w.msgs)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			w.msgs <- parseWorkerLine(sc.Text())
		}
	}()
	go func() { // stderr: the test log
		defer w.joined.Done()
		defer readers.Done()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			tb.Log(prefix + sc.Text())
		}
	}()
	go func() { // the waiter: Wait only after the pipes are drained
		defer w.joined.Done()
		readers.Wait()
		w.err = cmd.Wait()
		close(w.exited)
	}()
	return w, nil
}

// Pid returns the worker's process id.
func (w *workerProc) Pid() int { return w.cmd.Process.Pid }

// String names the worker and its pid, for messages.
func (w *workerProc) String() string { return fmt.Sprintf("%s[%d]", w.name, w.Pid()) }

// Send writes one command line to the worker's stdin.
func (w *workerProc) Send(line string) error {
	w.stdinMu.Lock()
	defer w.stdinMu.Unlock()
	_, err := io.WriteString(w.stdin, line+"\n")
	if err != nil {
		return fmt.Errorf("worker %v: %w", w, err)
	}
	return nil
}

// SendJSON writes "<verb> <json of v>" to the worker's stdin.
func (w *workerProc) SendJSON(verb string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return w.Send(verb + " " + string(b))
}

// CloseStdin closes the worker's stdin; workerCommands then ends.
func (w *workerProc) CloseStdin() error {
	w.stdinMu.Lock()
	defer w.stdinMu.Unlock()
	return w.stdin.Close()
}

// Next returns the worker's next stdout message. It fails when ctx ends
// first, or when the worker closed stdout (exited) before writing one.
func (w *workerProc) Next(ctx context.Context) (workerMsg, error) {
	select {
	case m, ok := <-w.msgs:
		if !ok {
			return workerMsg{}, fmt.Errorf("worker %v ended (%v) before its next message", w, w.exitErr(ctx))
		}
		return m, nil
	case <-ctx.Done():
		return workerMsg{}, fmt.Errorf("worker %v: no message: %w", w, context.Cause(ctx))
	}
}

// Expect returns the next message with the given verb, skipping others
// (which progress lines may be). A message with the verb "error" fails
// it at once.
func (w *workerProc) Expect(ctx context.Context, verb string) (workerMsg, error) {
	for {
		m, err := w.Next(ctx)
		if err != nil {
			return m, fmt.Errorf("waiting for %q: %w", verb, err)
		}
		if m.Verb == verb {
			return m, nil
		}
		if m.Verb == "error" && verb != "error" {
			return m, fmt.Errorf("worker %v, waiting for %q: %s", w, verb, m.Payload)
		}
	}
}

// ExpectJSON is Expect followed by decoding the payload into v.
func (w *workerProc) ExpectJSON(ctx context.Context, verb string, v any) error {
	m, err := w.Expect(ctx, verb)
	if err != nil {
		return err
	}
	return m.Decode(v)
}

// exitErr waits briefly for the exit status after stdout closed.
func (w *workerProc) exitErr(ctx context.Context) error {
	select {
	case <-w.exited:
		return w.exitError()
	case <-ctx.Done():
		return errors.New("exit status unknown")
	}
}

func (w *workerProc) exitError() error {
	if w.err == nil {
		return errors.New("exit status 0")
	}
	return w.err
}

// signal sends sig to the worker.
func (w *workerProc) signal(sig syscall.Signal) error {
	if err := w.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("worker %v: %v: %w", w, sig, err)
	}
	return nil
}

// Kill kills the worker with SIGKILL, as a crash would. It does not wait
// for the exit (Wait does).
func (w *workerProc) Kill() error { return w.signal(syscall.SIGKILL) }

// Stop freezes the worker with SIGSTOP, as a long GC or VM pause would.
func (w *workerProc) Stop() error { return w.signal(syscall.SIGSTOP) }

// Cont resumes a stopped worker with SIGCONT.
func (w *workerProc) Cont() error { return w.signal(syscall.SIGCONT) }

// Wait waits until the worker exited and returns nil for exit status 0,
// else its exit error; or ctx's error if ctx ends first. Messages the
// worker wrote and nobody read are dropped.
func (w *workerProc) Wait(ctx context.Context) error {
	for {
		select {
		case _, ok := <-w.msgs:
			if ok {
				continue
			}
			select {
			case <-w.exited:
				return w.err
			case <-ctx.Done():
				return fmt.Errorf("worker %v: %w", w, context.Cause(ctx))
			}
		case <-ctx.Done():
			return fmt.Errorf("worker %v: %w", w, context.Cause(ctx))
		}
	}
}

// Exited is closed once the worker has exited and was waited for.
func (w *workerProc) Exited() <-chan struct{} { return w.exited }

// cleanup kills the worker unless it exited, and joins its goroutines.
func (w *workerProc) cleanup() {
	select {
	case <-w.exited:
	default:
		_ = w.cmd.Process.Signal(syscall.SIGKILL)
	}
	_ = w.CloseStdin()
	// Unread messages would block the stdout reader: drop them until it
	// sees EOF, which the exit brings.
	for range w.msgs {
	}
	w.joined.Wait()
}

// ---- the worker's side ----

// workerConfig decodes the worker's JSON configuration into v.
func workerConfig(v any) error {
	raw := os.Getenv(envConfig)
	if raw == "" {
		return errors.New("no configuration in " + envConfig)
	}
	if err := json.Unmarshal([]byte(raw), v); err != nil {
		return fmt.Errorf("decoding %s: %w", envConfig, err)
	}
	return nil
}

// sayMu keeps lines whole when goroutines of a worker write at once.
var sayMu sync.Mutex

// workerSay writes one protocol line to stdout: the verb, then v as JSON
// unless v is nil.
func workerSay(verb string, v any) {
	line := verb
	if v != nil {
		b, err := json.Marshal(v)
		if err != nil {
			b, _ = json.Marshal(err.Error())
			line = "error"
		}
		line += " " + string(b)
	}
	sayMu.Lock()
	defer sayMu.Unlock()
	fmt.Fprintln(os.Stdout, line)
}

// workerCommands reads the parent's command lines from stdin until it
// closes, and sends them on the returned channel, which is closed at EOF.
// The reading goroutine ends at EOF, which the parent causes by closing
// stdin or by exiting; a worker process exits without waiting for it.
func workerCommands() <-chan workerMsg {
	ch := make(chan workerMsg)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			ch <- parseWorkerLine(sc.Text())
		}
	}()
	return ch
}

// awaitCommand returns the next command from cmds, failing when stdin
// closed or after timeout.
func awaitCommand(cmds <-chan workerMsg, timeout time.Duration) (workerMsg, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case m, ok := <-cmds:
		if !ok {
			return workerMsg{}, errors.New("stdin closed")
		}
		return m, nil
	case <-t.C:
		return workerMsg{}, fmt.Errorf("no command from the parent within %v", timeout)
	}
}
