package redistest

import (
	"bytes"
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
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

const (
	// startTimeout bounds how long a server may take to answer after it was
	// started (all port retries of one Start share it).
	startTimeout = 10 * time.Second
	// pollInterval is the pause between two readiness checks.
	pollInterval = 10 * time.Millisecond
	// readyProbeTimeout bounds one readiness check.
	readyProbeTimeout = 500 * time.Millisecond
	// stopTimeout is how long Stop waits for a graceful shutdown before it
	// kills the server.
	stopTimeout = 3 * time.Second
	// startAttempts is how many ports Start tries when the one it picked was
	// taken in the meantime.
	startAttempts = 5
	// logName is the file, in the server's directory, that receives the
	// server's stdout and stderr.
	logName = "redis.log"
	// logTailLines is how many log lines a startup error carries.
	logTailLines = 20
)

// errAddrInUse marks a startup that failed because the port was taken.
var errAddrInUse = errors.New("address already in use")

// An Option configures the servers that Start, StartCluster and
// StartReplicated launch.
type Option func(*options)

type options struct {
	args []string
}

// WithArgs appends command-line arguments to every redis-server started, for
// example WithArgs("--maxmemory", "10mb"). They come after the harness's own
// arguments, so they can override them, except --port, --bind and --dir,
// which the harness relies on.
func WithArgs(args ...string) Option {
	return func(o *options) { o.args = append(o.args, args...) }
}

func buildOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// A Server is one redis-server process started by this package, or an
// external server named by REDIS_ADDR. Its methods are safe for concurrent
// use.
type Server struct {
	addr     string
	external bool

	// Fixed for a process server once Start returns.
	bin     string
	dir     string
	port    int
	cluster bool
	extra   []string

	mu      sync.Mutex
	proc    *process // nil while not running
	stopped bool
}

// process is one run of redis-server.
type process struct {
	cmd       *exec.Cmd
	exited    chan struct{} // closed once cmd.Wait has returned
	logOffset int64         // size of the log file before this run
}

// Standalone starts a redis-server for the test tb and stops it with
// tb.Cleanup; extraArgs are appended to its command line. When REDIS_ADDR is
// set it returns that server instead (and skips tb if extraArgs is not
// empty). It skips or fails tb as SkipOrFail does when no server can be had.
func Standalone(tb testing.TB, extraArgs ...string) *Server {
	tb.Helper()
	s, err := Start(WithArgs(extraArgs...))
	SkipOrFail(tb, err)
	tb.Cleanup(func() { s.cleanup(tb) })
	return s
}

// Start starts a redis-server on a free port of 127.0.0.1 and waits until it
// answers PING. The caller must call Stop. When REDIS_ADDR is set, Start only
// checks that the server there answers and returns it; it then returns an
// error wrapping ErrExternal if options ask for extra arguments. If
// redis-server is not on PATH, the error wraps ErrUnavailable.
func Start(opts ...Option) (*Server, error) {
	o := buildOptions(opts)
	if addr := externalAddr(); addr != "" {
		if len(o.args) > 0 {
			return nil, fmt.Errorf("%w (%s=%s cannot take the arguments %q)", ErrExternal, EnvAddr, addr, o.args)
		}
		return startExternal(addr)
	}
	return startProcess(o.args, false)
}

// startExternal returns the server at addr after checking that it answers.
func startExternal(addr string) (*Server, error) {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	pong, err := commandString(ctx, addr, "PING")
	if err == nil && pong != "PONG" {
		err = fmt.Errorf("unexpected reply %q", pong)
	}
	if err != nil {
		return nil, fmt.Errorf("redistest: %s=%s does not answer PING: %w", EnvAddr, addr, err)
	}
	return &Server{addr: addr, external: true}, nil
}

// startProcess starts a redis-server with extra arguments, in cluster mode if
// cluster is set, retrying on another port when the chosen one was taken.
func startProcess(extra []string, cluster bool) (*Server, error) {
	bin, err := lookBinary("redis-server")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	s := &Server{bin: bin, dir: dir, cluster: cluster, extra: slices.Clone(extra)}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	for range startAttempts {
		s.port, err = freePort(cluster)
		if err != nil {
			break
		}
		s.addr = "127.0.0.1:" + strconv.Itoa(s.port)
		if err = s.spawn(ctx); err == nil {
			return s, nil
		}
		if !errors.Is(err, errAddrInUse) {
			break
		}
	}
	_ = os.RemoveAll(dir)
	return nil, err
}

// args returns the command line for the server's current port.
func (s *Server) args() []string {
	port := strconv.Itoa(s.port)
	args := []string{
		"--bind", "127.0.0.1",
		"--port", port,
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--dir", s.dir,
	}
	if s.cluster {
		args = append(args,
			"--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(s.dir, "nodes-"+port+".conf"),
			"--cluster-node-timeout", "5000",
			// Make CLUSTER SLOTS report the address the clients dial.
			"--cluster-announce-ip", "127.0.0.1",
		)
	}
	return append(args, s.extra...)
}

// spawn runs redis-server once on s.port and waits until it is ready. The
// caller holds s.mu (or is the only user of s).
func (s *Server) spawn(ctx context.Context) error {
	logPath := filepath.Join(s.dir, logName)
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("redistest: %w", err)
	}
	var offset int64
	if fi, err := logf.Stat(); err == nil {
		offset = fi.Size()
	}
	cmd := exec.Command(s.bin, s.args()...)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = logf, logf // an *os.File needs no copying goroutine
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	_ = logf.Close() // the child has its own copy
	if err != nil {
		return fmt.Errorf("redistest: starting %s: %w", s.bin, err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{}), logOffset: offset}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	s.proc = p
	if err := s.waitReady(ctx, p); err != nil {
		s.killLocked()
		return err
	}
	return nil
}

// waitReady polls until the process p answers on s.addr, p exits, or ctx is
// done.
func (s *Server) waitReady(ctx context.Context, p *process) error {
	for {
		err := s.probe(ctx, p.cmd.Process.Pid)
		if err == nil {
			return nil
		}
		// Report an exit (with its log) rather than a timeout when both
		// happened.
		select {
		case <-p.exited:
			return s.exitError(p)
		default:
		}
		select {
		case <-p.exited:
			return s.exitError(p)
		case <-ctx.Done():
			return fmt.Errorf("redistest: redis-server on %s not ready: %w (last probe: %v)%s",
				s.addr, ctx.Err(), err, s.logTail(p.logOffset))
		case <-time.After(pollInterval):
		}
	}
}

// probe checks that the server on s.addr is the process pid (and not another
// one that took the port first) and answers PING.
func (s *Server) probe(ctx context.Context, pid int) error {
	// Something else listening on the port may accept and never answer; give
	// up soon so that waitReady notices when our process exits.
	ctx, cancel := context.WithTimeout(ctx, readyProbeTimeout)
	defer cancel()
	c, err := dialResp(ctx, s.addr)
	if err != nil {
		return err
	}
	defer c.Close()
	info, err := c.doString("INFO", "server")
	if err != nil {
		return err
	}
	if got, _ := infoField(info, "process_id"); got != strconv.Itoa(pid) {
		return fmt.Errorf("port served by process %q, not by ours (%d)", got, pid)
	}
	pong, err := c.doString("PING")
	if err == nil && pong != "PONG" {
		err = fmt.Errorf("PING answered %q", pong)
	}
	return err
}

// exitError describes a process that exited during startup. It wraps
// errAddrInUse when the port was taken.
func (s *Server) exitError(p *process) error {
	tail := s.logTail(p.logOffset)
	cause := errors.New("exited")
	if strings.Contains(tail, "Address already in use") {
		cause = errAddrInUse
	}
	return fmt.Errorf("redistest: redis-server on %s failed during startup (%v): %w%s",
		s.addr, p.cmd.ProcessState, cause, tail)
}

// logTail returns the last lines the server logged after offset, formatted to
// be appended to a message, or "" if there are none.
func (s *Server) logTail(offset int64) string {
	path := filepath.Join(s.dir, logName)
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return ""
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return ""
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	if len(lines) == 1 && len(lines[0]) == 0 {
		return ""
	}
	return fmt.Sprintf("\nlast lines of %s:\n%s", path, bytes.Join(lines, []byte("\n")))
}

// cleanup is the tb.Cleanup of the testing.TB helpers: it logs the server's
// output if the test failed, then stops the server.
func (s *Server) cleanup(tb testing.TB) {
	if tb.Failed() && !s.external {
		s.mu.Lock()
		tail := s.logTail(0)
		s.mu.Unlock()
		if tail != "" {
			tb.Logf("redis-server %s:%s", s.addr, tail)
		}
	}
	s.Stop()
}

// Addr returns the server's address, "127.0.0.1:port" for a server started
// by this package.
func (s *Server) Addr() string { return s.addr }

// Client returns a rueidis client connected to this server only, closed by
// tb.Cleanup. It never follows the cluster topology: on a cluster node it
// sees that node's keys and gets MOVED for the others (use
// ClusterServers.Client for a routing client).
func (s *Server) Client(tb testing.TB) rueidis.Client {
	tb.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.addr}, ForceSingleClient: true})
	if err != nil {
		tb.Fatalf("redistest: connecting to %s: %v", s.addr, err)
	}
	tb.Cleanup(c.Close)
	return c
}

// Stop shuts the server down (SIGTERM, then SIGKILL if it has not exited
// after a few seconds), waits for it to exit and removes its directory. It is
// safe to call more than once, and it does nothing for an external server or
// a nil Server. A stopped server cannot be restarted.
func (s *Server) Stop() {
	if s == nil || s.external {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.stopped = true
	if p := s.proc; p != nil {
		s.proc = nil
		if err := p.cmd.Process.Signal(sigTerm); err == nil {
			_ = signalGroup(p.cmd.Process.Pid, sigCont) // a paused server must wake up to exit
			select {
			case <-p.exited:
			case <-time.After(stopTimeout):
			}
		}
		hardKill(p)
	}
	_ = os.RemoveAll(s.dir)
}

// Kill kills the server with SIGKILL, as a crash would, and waits for it to
// exit. Killing a server that is not running does nothing. Restart starts it
// again. For an external server Kill returns an error wrapping ErrExternal.
func (s *Server) Kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkProcess("kill"); err != nil {
		return err
	}
	s.killLocked()
	return nil
}

// Pause stops the server with SIGSTOP: connections stay open but nothing is
// answered until Resume. Pair it with t.Cleanup calling Resume so that a
// failing test does not leave the server frozen (Stop wakes it up anyway).
func (s *Server) Pause() error { return s.signal("pause", sigStop) }

// Resume continues a paused server with SIGCONT.
func (s *Server) Resume() error { return s.signal("resume", sigCont) }

// Restart starts the server again on the same port, killing it first if it
// is still running, and waits until it answers or ctx is done. The new
// process has the same command line and, as nothing is persisted, an empty
// data set; a cluster node keeps its node id and slots, which are stored in
// its nodes-<port>.conf.
func (s *Server) Restart(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkProcess("restart"); err != nil {
		return err
	}
	s.killLocked()
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	for {
		err := s.spawn(ctx)
		if !errors.Is(err, errAddrInUse) {
			return err
		}
		// Someone took the port while the server was down; it may be freed.
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// checkProcess returns an error if s is not a process this package can
// control. The caller holds s.mu.
func (s *Server) checkProcess(op string) error {
	if s.external {
		return fmt.Errorf("%w: cannot %s %s; call RequireProcess(t) first", ErrExternal, op, s.addr)
	}
	if s.stopped {
		return fmt.Errorf("redistest: cannot %s %s: the server was stopped", op, s.addr)
	}
	return nil
}

// signal sends sig to the running server.
func (s *Server) signal(op string, sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkProcess(op); err != nil {
		return err
	}
	if s.proc == nil {
		return fmt.Errorf("redistest: cannot %s %s: the server is not running", op, s.addr)
	}
	if err := signalGroup(s.proc.cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("redistest: cannot %s %s: %w", op, s.addr, err)
	}
	return nil
}

// killLocked kills the running process, if any, and waits for it to exit.
// The caller holds s.mu.
func (s *Server) killLocked() {
	if p := s.proc; p != nil {
		s.proc = nil
		hardKill(p)
	}
}

// hardKill kills p's process group with SIGKILL unless p has already exited,
// and waits for p to exit.
func hardKill(p *process) {
	select {
	case <-p.exited:
		return
	default:
	}
	if err := signalGroup(p.cmd.Process.Pid, sigKill); err != nil {
		_ = p.cmd.Process.Kill()
	}
	<-p.exited
}
