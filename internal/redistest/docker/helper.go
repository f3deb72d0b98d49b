package main

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
	"time"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tcexec "github.com/testcontainers/testcontainers-go/exec"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/interlock-go/interlock/internal/dockerwire"
)

const (
	// poll is the poll interval of the wait strategies and of the state
	// checks; 10 ms halves start-to-ready against the default 100 ms.
	poll = 10 * time.Millisecond
	// readyDeadline bounds the wait strategies of one start.
	readyDeadline = 30 * time.Second

	// The labels that let OpReady find the containers of a test process
	// that died: the creating process and its host.
	labelPID  = "org.interlock-go.redistest.pid"
	labelHost = "org.interlock-go.redistest.host"
)

// helper serves the Requests of one test process.
type helper struct {
	registerErr error

	mu   sync.Mutex
	ctrs map[string]testcontainers.Container // by container id; removed ones are deleted
}

// failure is an error with a dockerwire code.
type failure struct {
	code string
	err  error
}

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// serve runs one Request.
func (h *helper) serve(ctx context.Context, req dockerwire.Request) dockerwire.Reply {
	var rep dockerwire.Reply
	var err error
	switch req.Op {
	case dockerwire.OpReady:
		err = h.ready(ctx, req.PID)
	case dockerwire.OpImage:
		err = h.image(ctx, req.Image)
	case dockerwire.OpRun:
		rep.Ctr, err = h.run(ctx, req)
	default:
		var ctr testcontainers.Container
		if ctr, err = h.lookup(req.Ctr); err == nil {
			err = h.act(ctx, ctr, req, &rep)
		}
	}
	if err != nil {
		rep.Err = err.Error()
		var f *failure
		switch {
		case errors.As(err, &f):
			rep.Code = f.code
		case isTransient(err):
			rep.Code = dockerwire.Transient
		}
	}
	return rep
}

// act runs the Requests on one container.
func (h *helper) act(ctx context.Context, ctr testcontainers.Container, req dockerwire.Request, rep *dockerwire.Reply) error {
	switch req.Op {
	case dockerwire.OpState:
		st, err := ctr.State(ctx)
		if err != nil {
			return err
		}
		rep.Running, rep.Paused, rep.Status, rep.ExitCode = st.Running, st.Paused, string(st.Status), st.ExitCode
		return nil
	case dockerwire.OpKill:
		return kill(ctx, ctr)
	case dockerwire.OpPause:
		return pause(ctx, ctr, req.Pause)
	case dockerwire.OpStart:
		return retryDocker(ctx, "starting "+short(ctr)+" again", isRunning(ctr, true), func(dc *testcontainers.DockerClient) error {
			_, err := dc.ContainerStart(ctx, ctr.GetContainerID(), client.ContainerStartOptions{})
			return err
		})
	case dockerwire.OpRemove:
		h.mu.Lock()
		delete(h.ctrs, ctr.GetContainerID())
		h.mu.Unlock()
		return remove(ctx, ctr)
	case dockerwire.OpExec:
		code, r, err := ctr.Exec(ctx, req.Cmd, tcexec.Multiplexed())
		if err != nil {
			return err
		}
		out, err := io.ReadAll(r)
		rep.Out, rep.ExitCode = string(out), code
		return err
	case dockerwire.OpLogs:
		r, err := ctr.Logs(ctx)
		if err != nil {
			return err
		}
		defer r.Close()
		out, err := io.ReadAll(r)
		rep.Out = string(out)
		return err
	}
	return fmt.Errorf("no operation %q", req.Op)
}

// lookup returns the container with id, started by this helper.
func (h *helper) lookup(id string) (testcontainers.Container, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ctr, ok := h.ctrs[id]; ok {
		return ctr, nil
	}
	return nil, fmt.Errorf("no container %q started by this helper (removed already?)", id)
}

// ready checks that a Docker engine answers and sweeps the containers of
// dead test processes.
func (h *helper) ready(ctx context.Context, pid int) error {
	if h.registerErr != nil {
		return fmt.Errorf("registering the %q runtime provider: %w", hostNetProvider, h.registerErr)
	}
	err := withDocker(ctx, func(dc *testcontainers.DockerClient) error {
		if _, err := dc.Ping(ctx, client.PingOptions{}); err != nil {
			return err
		}
		sweepStale(ctx, dc, pid)
		return nil
	})
	if err != nil {
		// "rootless Docker not found" means that no engine was found at all.
		return &failure{dockerwire.Unavailable, fmt.Errorf("no Docker engine answers (%v)", err)}
	}
	return nil
}

// image checks that ref exists locally: testcontainers-go would pull a
// missing image.
func (h *helper) image(ctx context.Context, ref string) error {
	err := withDocker(ctx, func(dc *testcontainers.DockerClient) error {
		_, err := dc.ImageInspect(ctx, ref)
		return err
	})
	if errdefs.IsNotFound(err) {
		return &failure{dockerwire.NotFound, fmt.Errorf("image %s is not built", ref)}
	}
	return err
}

// run creates and starts one container, checks that it follows the
// networking rule, and records it for the other operations and for
// removeAll. A container that failed to start is removed.
func (h *helper) run(ctx context.Context, req dockerwire.Request) (string, error) {
	host, _ := os.Hostname()
	p := strconv.Itoa(req.Port) + "/tcp"
	var files []testcontainers.ContainerFile
	for _, f := range req.Files {
		files = append(files, testcontainers.ContainerFile{
			Reader: strings.NewReader(f.Content), ContainerFilePath: f.Path, FileMode: f.Mode,
		})
	}
	ctr, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:      req.Image,
			Entrypoint: req.Entrypoint,
			Cmd:        req.Args,
			Files:      files,
			Labels:     map[string]string{labelPID: strconv.Itoa(req.PID), labelHost: host},
			HostConfigModifier: func(hc *container.HostConfig) {
				hc.NetworkMode = "host"
			},
			WaitingFor: wait.ForAll(
				wait.ForLog(req.ReadyLine).WithPollInterval(poll),
				// The internal check runs sh in the container, which the
				// scratch images lack; on the host network it would read
				// the host's sockets anyway.
				wait.ForListeningPort(p).SkipInternalCheck().WithPollInterval(poll),
			).WithDeadline(readyDeadline),
		},
		Started: true,
		Logger:  tclog.NewNoopLogger(),
	})
	if err != nil {
		if ctr == nil {
			return "", fmt.Errorf("starting a container of %s: %w", req.Image, err)
		}
		tail := logTail(ctr)
		_ = remove(context.WithoutCancel(ctx), ctr)
		if strings.Contains(tail, "Address already in use") {
			return "", &failure{dockerwire.AddrInUse, fmt.Errorf("%s: port %d", req.Image, req.Port)}
		}
		return "", fmt.Errorf("starting a container of %s on port %d: %w%s", req.Image, req.Port, err, tail)
	}
	if err := checkNetwork(ctx, ctr); err != nil {
		err = fmt.Errorf("%s: %w%s", short(ctr), err, logTail(ctr))
		_ = remove(context.WithoutCancel(ctx), ctr)
		return "", err
	}
	h.mu.Lock()
	h.ctrs[ctr.GetContainerID()] = ctr
	h.mu.Unlock()
	return ctr.GetContainerID(), nil
}

// removeAll removes every container still recorded.
func (h *helper) removeAll() {
	h.mu.Lock()
	ctrs := h.ctrs
	h.ctrs = nil
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, ctr := range ctrs {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), defaultTimeout)
			defer cancel()
			if err := remove(ctx, ctr); err != nil {
				fmt.Fprintf(os.Stderr, "redistest docker helper: removing %s: %v\n", short(ctr), err)
			}
		})
	}
	wg.Wait()
}

// checkNetwork checks that ctr is on the host network only, as the
// testcontainers-go provider should have made it.
func checkNetwork(ctx context.Context, ctr testcontainers.Container) error {
	host, err := ctr.Host(ctx)
	if err != nil {
		return err
	}
	if host != "127.0.0.1" {
		return fmt.Errorf("testcontainers-go reports host %q, not 127.0.0.1: is the %q provider selected?", host, hostNetProvider)
	}
	info, err := ctr.Inspect(ctx)
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
	return nil
}

// kill kills the server with SIGKILL and waits until the container has
// exited; it does nothing if the container is not running.
func kill(ctx context.Context, ctr testcontainers.Container) error {
	st, err := ctr.State(ctx)
	if err != nil {
		return err
	}
	if !st.Running {
		return nil
	}
	if st.Paused {
		// A frozen process takes the signal only once thawed.
		if err := pause(ctx, ctr, false); err != nil {
			return err
		}
	}
	err = retryDocker(ctx, "killing "+short(ctr), isRunning(ctr, false), func(dc *testcontainers.DockerClient) error {
		_, err := dc.ContainerKill(ctx, ctr.GetContainerID(), client.ContainerKillOptions{Signal: "KILL"})
		return err
	})
	if err != nil {
		return err
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		st, err := ctr.State(ctx)
		if err == nil && !st.Running {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("container %s did not exit after SIGKILL: %w (last state: %v, %v)", short(ctr), ctx.Err(), st, err)
		case <-t.C:
		}
	}
}

// pause freezes the container (the cgroup freezer) or thaws it.
func pause(ctx context.Context, ctr testcontainers.Container, freeze bool) error {
	op := "thawing "
	if freeze {
		op = "freezing "
	}
	return retryDocker(ctx, op+short(ctr), isPaused(ctr, freeze), func(dc *testcontainers.DockerClient) error {
		var err error
		if freeze {
			_, err = dc.ContainerPause(ctx, ctr.GetContainerID(), client.ContainerPauseOptions{})
		} else {
			_, err = dc.ContainerUnpause(ctx, ctr.GetContainerID(), client.ContainerUnpauseOptions{})
		}
		return err
	})
}

// remove removes the container, thawing it first if paused.
func remove(ctx context.Context, ctr testcontainers.Container) error {
	if st, err := ctr.State(ctx); err == nil && st.Paused {
		_ = pause(ctx, ctr, false)
	}
	// Nothing is persisted, so there is no graceful shutdown to wait for.
	return testcontainers.TerminateContainer(ctr, testcontainers.StopContext(ctx), testcontainers.StopTimeout(0))
}

// isPaused returns a check for retryDocker: whether the container's paused
// state is now want.
func isPaused(ctr testcontainers.Container, want bool) func(context.Context) bool {
	return func(ctx context.Context) bool {
		st, err := ctr.State(ctx)
		return err == nil && st.Paused == want
	}
}

// isRunning returns a check for retryDocker: whether the container's
// running state is now want.
func isRunning(ctr testcontainers.Container, want bool) func(context.Context) bool {
	return func(ctx context.Context) bool {
		st, err := ctr.State(ctx)
		return err == nil && st.Running == want
	}
}

// logTail returns the container's last log lines, formatted to be appended
// to an error message, or "" if there are none.
func logTail(ctr testcontainers.Container) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := ctr.Logs(ctx)
	if err != nil {
		return ""
	}
	defer r.Close()
	b, _ := io.ReadAll(r)
	logs := strings.TrimRight(string(b), "\n")
	if strings.TrimSpace(logs) == "" {
		return ""
	}
	lines := strings.Split(logs, "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return fmt.Sprintf("\n--- last lines of the log of container %s ---\n%s", short(ctr), strings.Join(lines, "\n"))
}

// short returns the container's id as docker ps shows it.
func short(ctr testcontainers.Container) string {
	id := ctr.GetContainerID()
	if len(id) > 12 {
		id = id[:12]
	}
	return id
}

// withDocker calls f with a Docker client that it closes afterwards.
func withDocker(ctx context.Context, f func(*testcontainers.DockerClient) error) error {
	dc, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return err
	}
	defer dc.Close()
	return f(dc)
}

// sweepStale removes the containers that test processes of this host, other
// than pid, left behind when they no longer run (their helper was killed
// before it could remove them). Errors are ignored: a container left over does no harm but
// hold a port.
func sweepStale(ctx context.Context, dc *testcontainers.DockerClient, self int) {
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
		if err != nil || pid == self || processAlive(pid) {
			continue
		}
		_, _ = dc.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true})
	}
}
