package redistest

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/redisproc"
)

// An Option configures the servers that the Start functions launch.
type Option func(*options)

// options is what the Options given to a Start function set.
type options struct {
	args []string
	// replicas is set by WithReplicas; replicasSet tells it from the
	// constructor's default.
	replicas    int
	replicasSet bool
}

// WithArgs appends command-line arguments to every redis-server started, for
// example WithArgs("--maxmemory", "10mb"). They come after the harness's own
// arguments, so they can override them, except --port, --bind and --dir,
// which the harness relies on.
func WithArgs(args ...string) Option {
	return func(o *options) { o.args = append(o.args, args...) }
}

// buildOptions applies opts to the defaults.
func buildOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// A Server is one redis-server process started by this package, a server in
// a container started by its container backend (container.go), or an
// external server named by REDIS_ADDR. Its methods are safe for concurrent
// use.
type Server struct {
	addr string
	port int               // 0 for an external server
	proc *redisproc.Server // nil for an external server or a container
	ctr  *Container        // nil unless started by the container backend
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
	if img, ok, err := envImage(); ok {
		if err != nil {
			return nil, err
		}
		s, err := StartContainerServer(img, opts...)
		if err == nil {
			announce("standalone", s)
		}
		return s, err
	}
	return startProcess(o.args, false)
}

// startExternal returns the server at addr after checking that it answers.
func startExternal(addr string) (*Server, error) {
	ctx, cancel := context.WithTimeout(context.Background(), redisproc.ProbeTimeout)
	defer cancel()
	pong, err := redisproc.CommandString(ctx, addr, "PING")
	if err == nil && pong != "PONG" {
		err = fmt.Errorf("unexpected reply %q", pong)
	}
	if err != nil {
		return nil, fmt.Errorf("redistest: %s=%s does not answer PING: %w", EnvAddr, addr, err)
	}
	return &Server{addr: addr}, nil
}

// startProcess starts a redis-server with extra arguments, in cluster mode if
// cluster is set (see redisproc.Start).
func startProcess(extra []string, cluster bool) (*Server, error) {
	bin, err := lookBinary("redis-server")
	if err != nil {
		return nil, err
	}
	p, err := redisproc.Start(context.Background(), redisproc.Config{
		Bin: bin, Cluster: cluster, Args: extra, DirPattern: "redistest-",
	})
	if err != nil {
		return nil, err
	}
	return &Server{addr: p.Addr(), port: p.Port(), proc: p}, nil
}

// cleanup is the tb.Cleanup of the testing.TB helpers: it logs the server's
// output if the test failed, then stops the server.
func (s *Server) cleanup(tb testing.TB) {
	if tb.Failed() && s.ctr != nil {
		if tail := s.ctr.logTail(); tail != "" {
			tb.Logf("redis-server %s:%s", s.addr, tail)
		}
	}
	if tb.Failed() && s.proc != nil {
		if tail := s.proc.Log(); tail != "" {
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
	if s != nil && s.ctr != nil {
		s.ctr.stop()
		return
	}
	if s == nil || s.proc == nil {
		return
	}
	s.proc.Stop()
}

// Kill kills the server with SIGKILL, as a crash would, and waits for it to
// exit. Killing a server that is not running does nothing. Restart starts it
// again. For an external server Kill returns an error wrapping ErrExternal.
func (s *Server) Kill() error {
	if s.ctr != nil {
		return s.ctr.kill()
	}
	if err := s.checkProcess("kill"); err != nil {
		return err
	}
	return s.proc.Kill()
}

// Pause stops the server with SIGSTOP: connections stay open but nothing is
// answered until Resume. Pair it with t.Cleanup calling Resume so that a
// failing test does not leave the server frozen (Stop wakes it up anyway).
func (s *Server) Pause() error {
	if s.ctr != nil {
		return s.ctr.pause()
	}
	if err := s.checkProcess("pause"); err != nil {
		return err
	}
	return s.proc.Pause()
}

// Resume continues a paused server with SIGCONT.
func (s *Server) Resume() error {
	if s.ctr != nil {
		return s.ctr.resume()
	}
	if err := s.checkProcess("resume"); err != nil {
		return err
	}
	return s.proc.Resume()
}

// Restart starts the server again on the same port, killing it first if it
// is still running, and waits until it answers or ctx is done. The new
// process has the same command line and, as nothing is persisted, an empty
// data set; a cluster node keeps its node id and slots, which are stored in
// its nodes-<port>.conf.
func (s *Server) Restart(ctx context.Context) error {
	if s.ctr != nil {
		return s.ctr.restart(ctx)
	}
	if err := s.checkProcess("restart"); err != nil {
		return err
	}
	return s.proc.Restart(ctx)
}

// checkProcess returns an error if s is not a process this package can
// control.
func (s *Server) checkProcess(op string) error {
	if s.proc == nil {
		return fmt.Errorf("%w: cannot %s %s; call RequireProcess(t) first", ErrExternal, op, s.addr)
	}
	return nil
}
