package redistest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tcexec "github.com/testcontainers/testcontainers-go/exec"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/interlock-go/interlock/internal/redisproc"
)

// The container backend runs each server in a Docker container through
// testcontainers-go, from an image built locally by scripts/build-images.
// A Server it starts is an ordinary *Server whose Kill, Pause, Resume,
// Restart and Stop act on the container, so ClusterServers and ReplicaSet
// work on containers as they do on processes.
//
// The networking rule: every container uses the host network, and its server
// binds 127.0.0.1 on a free port. No Docker network is ever created, and
// nothing is ever pulled. Two settings of testcontainers-go make that hold:
//
//   - The runtime provider "hostnet" (registered below, selected by
//     TESTCONTAINERS_PROVIDER) makes "host" the default network and 127.0.0.1
//     the published host. Without it testcontainers-go creates a bridge
//     network (reaper_default) on a daemon that has none, and, believing it
//     runs in a container (this machine has /.dockerenv), dials the
//     default-route gateway instead of 127.0.0.1.
//   - TESTCONTAINERS_RYUK_DISABLED=true, in exactly that spelling: the Ryuk
//     reaper is an image that would be pulled. Containers are terminated by
//     Stop (tb.Cleanup), and those of a test binary that died are removed by
//     the next one (see sweepStale).
//
// Both variables are set in init, before testcontainers-go reads its
// configuration, which it does once per process.

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

// Images returns the server matrix, oldest first: Redis7, Redis8, Valkey8.
func Images() []Image { return []Image{Redis7, Redis8, Valkey8} }

// Name returns a name for subtests, such as "redis-8.0.2".
func (i Image) Name() string { return i.Server + "-" + i.Version }

// String returns Ref.
func (i Image) String() string { return i.Ref }

// cli returns the path of the image's command-line client.
func (i Image) cli() string { return "/usr/bin/" + i.Server + "-cli" }

const (
	// hostNetProvider names the runtime provider registered by init.
	hostNetProvider = "hostnet"
	// containerStartTimeout bounds one container's start until its server is
	// ready (all port retries share it).
	containerStartTimeout = 60 * time.Second
	// containerOpTimeout bounds one Docker call sequence of Kill, Pause,
	// Resume, Restart and Stop.
	containerOpTimeout = 30 * time.Second
	// containerPoll is the poll interval of the wait strategies and of the
	// state checks; 10 ms halves start-to-ready against the default 100 ms.
	containerPoll = 10 * time.Millisecond
	// readyLine is the log line with which Redis 7, Redis 8 and Valkey 8
	// say they listen.
	readyLine = "Ready to accept connections"

	// The labels that let sweepStale find the containers of a test binary
	// that died: the creating process and its host.
	labelPID  = "org.interlock-go.redistest.pid"
	labelHost = "org.interlock-go.redistest.host"
)

// registerErr is what registering the provider returned.
var registerErr error

func init() {
	registerErr = testcontainers.RegisterProvider(hostNetProvider, func() testcontainers.RuntimeProvider {
		return hostNet{}
	})
	// Forced, not defaulted: the networking rule is not the caller's choice.
	os.Setenv("TESTCONTAINERS_PROVIDER", hostNetProvider)
	os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
}

// hostNet is the runtime provider of the container backend: the default
// Docker discovery, with "host" as the default network and 127.0.0.1 as the
// address of every container.
type hostNet struct{}

func (hostNet) Initialize(context.Context) (testcontainers.RuntimeConfig, error) {
	return testcontainers.RuntimeConfig{DefaultBridgeNetwork: "host", PublishedHost: "127.0.0.1"}, nil
}

var (
	dockerOnce sync.Once
	dockerErr  error
	// imagesSeen holds the Refs found by checkImage.
	imagesSeen sync.Map
)

// dockerReady checks once per process that a Docker engine answers, and
// removes the containers that dead test binaries of this host left behind.
// Without an engine the error wraps ErrUnavailable.
func dockerReady() error {
	dockerOnce.Do(func() {
		if registerErr != nil {
			dockerErr = fmt.Errorf("redistest: registering the %q runtime provider: %w", hostNetProvider, registerErr)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := withDocker(ctx, func(dc *testcontainers.DockerClient) error {
			if _, err := dc.Ping(ctx, client.PingOptions{}); err != nil {
				return err
			}
			sweepStale(ctx, dc)
			return nil
		})
		if err != nil {
			// "rootless Docker not found" means that no engine was found at all.
			dockerErr = fmt.Errorf("%w: no Docker engine answers (%v); start one with scripts/ensure-docker, then build the images with scripts/build-images", ErrUnavailable, err)
		}
	})
	return dockerErr
}

// withDocker calls f with a Docker client that it closes afterwards, so that
// no idle connection (and no goroutine of its) outlives the call.
func withDocker(ctx context.Context, f func(*testcontainers.DockerClient) error) error {
	dc, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return err
	}
	defer dc.Close()
	return f(dc)
}

// sweepStale removes the containers that this package started on this host
// from test binaries that no longer run (killed before their cleanup ran:
// without Ryuk nothing else removes them). Errors are ignored: a container
// left over does no harm but hold a port.
func sweepStale(ctx context.Context, dc *testcontainers.DockerClient) {
	host, _ := os.Hostname()
	res, err := dc.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", labelPID).Add("label", labelHost+"="+host),
	})
	if err != nil {
		return
	}
	for _, c := range res.Items {
		pid, err := strconv.Atoi(c.Labels[labelPID])
		if err != nil || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		_, _ = dc.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true})
	}
}

// checkImage checks that img exists locally. testcontainers-go would pull a
// missing image; this fails at once instead, with an error wrapping
// ErrUnavailable.
func checkImage(ctx context.Context, img Image) error {
	if _, ok := imagesSeen.Load(img.Ref); ok {
		return nil
	}
	err := withDocker(ctx, func(dc *testcontainers.DockerClient) error {
		_, err := dc.ImageInspect(ctx, img.Ref)
		return err
	})
	switch {
	case err == nil:
		imagesSeen.Store(img.Ref, true)
		return nil
	case errdefs.IsNotFound(err):
		return fmt.Errorf("%w: image %s is not built; run scripts/build-images (images are never pulled)", ErrUnavailable, img.Ref)
	default:
		return fmt.Errorf("redistest: inspecting image %s: %w", img.Ref, err)
	}
}

// A Container is the Docker container of a Server started by the container
// backend (Server.Container). Its methods are safe for concurrent use.
type Container struct {
	image   Image
	ctr     testcontainers.Container
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
func (c *Container) ID() string { return c.ctr.GetContainerID() }

// Version returns the server version that INFO reported when the container
// started (redis_version, or valkey_version for Valkey).
func (c *Container) Version() string { return c.version }

// String describes the container for logs, for example
// "redis 8.0.2 on 127.0.0.1:41234 (interlock-test/redis:8.0.2, container 0123456789ab)".
func (c *Container) String() string {
	id := c.ID()
	if len(id) > 12 {
		id = id[:12]
	}
	return fmt.Sprintf("%s %s on %s (%s, container %s)", c.image.Server, c.version, c.addr, c.image.Ref, id)
}

// Exec runs cmd in the container (no shell; the images from scratch have
// none) and returns its output, stdout then stderr. A non-zero exit status
// is an error that includes the output.
func (c *Container) Exec(ctx context.Context, cmd ...string) (string, error) {
	code, r, err := c.ctr.Exec(ctx, cmd, tcexec.Multiplexed())
	if err != nil {
		return "", fmt.Errorf("redistest: exec %q in %s: %w", cmd, c, err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return string(out), fmt.Errorf("redistest: exec %q in %s: reading its output: %w", cmd, c, err)
	}
	if code != 0 {
		return string(out), fmt.Errorf("redistest: exec %q in %s: exit status %d\n%s", cmd, c, code, out)
	}
	return string(out), nil
}

// Logs returns what the server has logged since the container was created.
func (c *Container) Logs(ctx context.Context) (string, error) {
	r, err := c.ctr.Logs(ctx)
	if err != nil {
		return "", err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	return string(b), err
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
func (c *Container) state(ctx context.Context) (*container.State, error) {
	st, err := c.ctr.State(ctx)
	if err != nil {
		return nil, fmt.Errorf("redistest: state of %s: %w", c, err)
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
	st, err := c.state(ctx)
	if err != nil {
		return err
	}
	if !st.Running {
		return nil
	}
	if st.Paused {
		// A frozen process takes the signal only once thawed.
		err := retryDocker(ctx, "thawing "+c.String()+" to kill it", c.isPaused(false), func(dc *testcontainers.DockerClient) error {
			_, err := dc.ContainerUnpause(ctx, c.ID(), client.ContainerUnpauseOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("redistest: %w", err)
		}
	}
	err = retryDocker(ctx, "killing "+c.String(), c.isRunning(false), func(dc *testcontainers.DockerClient) error {
		_, err := dc.ContainerKill(ctx, c.ID(), client.ContainerKillOptions{Signal: "KILL"})
		return err
	})
	if err != nil {
		return fmt.Errorf("redistest: %w", err)
	}
	return waitUntil(ctx, containerPoll, "container "+c.String()+" did not exit after SIGKILL", func(ctx context.Context) error {
		st, err := c.state(ctx)
		if err == nil && st.Running {
			err = errors.New("still running")
		}
		return err
	})
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
	err = retryDocker(ctx, op+" "+c.String(), c.isPaused(pause), func(dc *testcontainers.DockerClient) error {
		var err error
		if pause {
			_, err = dc.ContainerPause(ctx, c.ID(), client.ContainerPauseOptions{})
		} else {
			_, err = dc.ContainerUnpause(ctx, c.ID(), client.ContainerUnpauseOptions{})
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("redistest: %w", err)
	}
	return nil
}

// isPaused returns a check for retryDocker: whether the container's paused
// state is now want.
func (c *Container) isPaused(want bool) func(context.Context) bool {
	return func(ctx context.Context) bool {
		st, err := c.ctr.State(ctx)
		return err == nil && st.Paused == want
	}
}

// isRunning returns a check for retryDocker: whether the container's
// running state is now want.
func (c *Container) isRunning(want bool) func(context.Context) bool {
	return func(ctx context.Context) bool {
		st, err := c.ctr.State(ctx)
		return err == nil && st.Running == want
	}
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
	err := retryDocker(ctx, "starting "+c.String()+" again", c.isRunning(true), func(dc *testcontainers.DockerClient) error {
		_, err := dc.ContainerStart(ctx, c.ID(), client.ContainerStartOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("redistest: %w", err)
	}
	err = waitUntil(ctx, containerPoll, c.String()+" did not answer after its restart", func(ctx context.Context) error {
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
	if st, err := c.ctr.State(ctx); err == nil && st.Paused {
		_ = retryDocker(ctx, "thawing "+c.String()+" to remove it", c.isPaused(false), func(dc *testcontainers.DockerClient) error {
			_, err := dc.ContainerUnpause(ctx, c.ID(), client.ContainerUnpauseOptions{})
			return err
		})
	}
	// Nothing is persisted, so there is no graceful shutdown to wait for.
	if err := testcontainers.TerminateContainer(c.ctr, testcontainers.StopContext(ctx), testcontainers.StopTimeout(0)); err != nil {
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

// errAddrInUse marks a start that failed because the port was taken between
// FreePort and the server's bind.
var errAddrInUse = errors.New("address already in use")

// startContainer starts a server from img on a free port, retrying on
// another one when the port was taken meanwhile, and waits until it is
// ready. With cluster, it is a cluster node whose bus port is free too.
func startContainer(img Image, extra []string, cluster bool) (*Server, error) {
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
		s, err = runContainer(ctx, img, port, extra, cluster)
		if err == nil {
			return s, nil
		}
		// A port taken meanwhile, or a runtime failure that passes (the
		// failed container is removed either way): another try.
		if !errors.Is(err, errAddrInUse) && !isTransientDocker(err) {
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

// runContainer creates and starts one container, checks that it follows the
// networking rule and reads the server's version.
func runContainer(ctx context.Context, img Image, port int, extra []string, cluster bool) (*Server, error) {
	p := strconv.Itoa(port) + "/tcp"
	host, _ := os.Hostname()
	ctr, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:  img.Ref,
			Cmd:    containerArgs(port, extra, cluster),
			Labels: map[string]string{labelPID: strconv.Itoa(os.Getpid()), labelHost: host},
			HostConfigModifier: func(hc *container.HostConfig) {
				hc.NetworkMode = "host"
			},
			WaitingFor: wait.ForAll(
				wait.ForLog(readyLine).WithPollInterval(containerPoll),
				// The internal check runs sh in the container, which the
				// scratch image lacks; on the host network it would read
				// the host's sockets anyway.
				wait.ForListeningPort(p).SkipInternalCheck().WithPollInterval(containerPoll),
			).WithDeadline(30 * time.Second),
		},
		Started: true,
		Logger:  tclog.NewNoopLogger(),
	})
	c := &Container{image: img, ctr: ctr, addr: "127.0.0.1:" + strconv.Itoa(port)}
	if err != nil {
		if ctr == nil {
			return nil, fmt.Errorf("redistest: starting a container of %s: %w", img.Ref, err)
		}
		tail := c.logTail()
		c.stop()
		if strings.Contains(tail, "Address already in use") {
			return nil, fmt.Errorf("redistest: %s: port %d: %w", img.Ref, port, errAddrInUse)
		}
		return nil, fmt.Errorf("redistest: starting a container of %s on port %d: %w%s", img.Ref, port, err, tail)
	}
	if err := c.check(ctx); err != nil {
		err = fmt.Errorf("redistest: %s: %w%s", c, err, c.logTail())
		c.stop()
		return nil, err
	}
	return &Server{addr: c.addr, port: port, ctr: c}, nil
}

// check checks that the container is on the host network only, with its
// server on 127.0.0.1, and records the server's version, which must be the
// one img is tagged with.
func (c *Container) check(ctx context.Context) error {
	host, err := c.ctr.Host(ctx)
	if err != nil {
		return err
	}
	if host != "127.0.0.1" {
		return fmt.Errorf("testcontainers-go reports host %q, not 127.0.0.1: is the %q provider selected?", host, hostNetProvider)
	}
	info, err := c.ctr.Inspect(ctx)
	if err != nil {
		return err
	}
	if mode := info.HostConfig.NetworkMode; mode != "host" {
		return fmt.Errorf("network mode %q, not host", mode)
	}
	var nets []string
	if info.NetworkSettings != nil {
		for name := range info.NetworkSettings.Networks {
			nets = append(nets, name)
		}
	}
	if !slices.Equal(nets, []string{"host"}) {
		return fmt.Errorf("attached to networks %v, want only host", nets)
	}
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
