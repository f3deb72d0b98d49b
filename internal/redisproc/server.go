package redisproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"
)

const (
	// StartTimeout bounds how long a server may take to answer after it was
	// started (all port retries of one Start share it).
	StartTimeout = 10 * time.Second
	// stopTimeout is how long Stop waits for a graceful shutdown before it
	// kills the server.
	stopTimeout = 3 * time.Second
	// startAttempts is how many ports Start tries when the one it picked was
	// taken in the meantime.
	startAttempts = 5
	// restartRetry is the pause between two attempts of Restart to bind a
	// port that someone else holds.
	restartRetry = 100 * time.Millisecond
)

// ErrStopped is wrapped by the errors of operations on a stopped Server.
var ErrStopped = errors.New("redisproc: the server was stopped")

// Config describes the redis-server processes Start launches.
type Config struct {
	// Bin is the redis-server binary; "" looks "redis-server" up on PATH
	// (the error then wraps exec.ErrNotFound when it is missing).
	Bin string
	// Cluster starts the server with --cluster-enabled yes, on a port whose
	// cluster bus port is free too.
	Cluster bool
	// Args are appended to the command line, after the package's own
	// arguments, so they can override them, except --port, --bind and
	// --dir, which the package relies on.
	Args []string
	// DirPattern is the os.MkdirTemp pattern of the server's directory;
	// "" means "redis-".
	DirPattern string
	// ConfigFile, if set, is passed first on the command line, the only
	// place redis-server reads a config file from; every option after it
	// overrides it. A sentinel needs one (see Args: "--sentinel").
	ConfigFile string
}

// A Server is one redis-server that Start launched, in a temporary
// directory of its own that Stop removes. Its methods are safe for
// concurrent use.
type Server struct {
	// Fixed once Start returns.
	bin     string
	dir     string
	addr    string
	port    int
	cluster bool
	extra   []string
	config  string

	mu      sync.Mutex
	proc    *process // nil while not running
	stopped bool
}

// Start starts a redis-server on a free port of 127.0.0.1 and waits until
// it answers PING, retrying on another port when the chosen one was taken
// meanwhile. It gives up after StartTimeout or when ctx ends. The caller
// must call Stop.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	bin := cfg.Bin
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("redis-server"); err != nil {
			return nil, fmt.Errorf("redisproc: %w", err)
		}
	}
	pattern := cfg.DirPattern
	if pattern == "" {
		pattern = "redis-"
	}
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return nil, fmt.Errorf("redisproc: %w", err)
	}
	s := &Server{bin: bin, dir: dir, cluster: cfg.Cluster, extra: slices.Clone(cfg.Args), config: cfg.ConfigFile}
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	for range startAttempts {
		s.port, err = FreePort(cfg.Cluster)
		if err != nil {
			break
		}
		s.addr = "127.0.0.1:" + strconv.Itoa(s.port)
		if err = s.spawn(ctx); err == nil {
			return s, nil
		}
		if !errors.Is(err, ErrAddrInUse) {
			break
		}
	}
	_ = os.RemoveAll(dir)
	return nil, err
}

// args returns the command line for the server's current port.
func (s *Server) args() []string {
	port := strconv.Itoa(s.port)
	var args []string
	if s.config != "" {
		args = append(args, s.config)
	}
	args = append(args,
		"--bind", "127.0.0.1",
		"--port", port,
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--dir", s.dir,
	)
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

// PID returns the process id of the running server, 0 when it is not
// running.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil || s.proc.cmd.Process == nil {
		return 0
	}
	return s.proc.cmd.Process.Pid
}

// Addr returns the server's address, "127.0.0.1:port".
func (s *Server) Addr() string { return s.addr }

// Port returns the server's port.
func (s *Server) Port() int { return s.port }

// Dir returns the server's directory (removed by Stop).
func (s *Server) Dir() string { return s.dir }

// Log returns the last lines the server logged since it was started,
// formatted to be appended to a message, or "" if there are none.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logTail(0)
}

// Stop shuts the server down (SIGTERM, then SIGKILL if it has not exited
// after a few seconds), waits for it to exit and removes its directory. It
// is safe to call more than once, and on a nil Server. A stopped server
// cannot be restarted.
func (s *Server) Stop() {
	if s == nil {
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
			t := time.NewTimer(stopTimeout)
			select {
			case <-p.exited:
			case <-t.C:
			}
			t.Stop()
		}
		hardKill(p)
	}
	_ = os.RemoveAll(s.dir)
}

// Kill kills the server with SIGKILL, as a crash would, and waits for it to
// exit. Killing a server that is not running does nothing. Restart starts
// it again.
func (s *Server) Kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return fmt.Errorf("cannot kill %s: %w", s.addr, ErrStopped)
	}
	s.killLocked()
	return nil
}

// Pause stops the server with SIGSTOP: connections stay open but nothing is
// answered until Resume. Stop wakes a paused server up.
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
	if s.stopped {
		return fmt.Errorf("cannot restart %s: %w", s.addr, ErrStopped)
	}
	s.killLocked()
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	for {
		err := s.spawn(ctx)
		if !errors.Is(err, ErrAddrInUse) {
			return err
		}
		// Someone took the port while the server was down; it may be freed.
		t := time.NewTimer(restartRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// signal sends sig to the running server's process group.
func (s *Server) signal(op string, sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return fmt.Errorf("cannot %s %s: %w", op, s.addr, ErrStopped)
	}
	if s.proc == nil {
		return fmt.Errorf("redisproc: cannot %s %s: the server is not running", op, s.addr)
	}
	if err := signalGroup(s.proc.cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("redisproc: cannot %s %s: %w", op, s.addr, err)
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
