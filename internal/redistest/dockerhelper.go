package redistest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/interlock-go/interlock/internal/dockerwire"
)

// EnvDockerHelper names the environment variable that gives the path of a
// built Docker helper (go build ./internal/redistest/docker). Without it
// the first container of a test process starts the helper with go run,
// which compiles it first.
const EnvDockerHelper = "REDISTEST_DOCKER"

var (
	// errAddrInUse marks a start that failed because the port was taken
	// between FreePort and the server's bind.
	errAddrInUse = errors.New("address already in use")
	// errTransient marks a Docker failure that passes (see the helper's
	// retry.go): a start that failed with it is tried again.
	errTransient = errors.New("transient Docker failure")
)

// dockerHelper is the helper process of this test process, started by the
// first call of docker and ended by the test process's exit: its stdin
// closes, and it removes whatever containers are left.
type dockerHelper struct {
	in io.WriteCloser

	mu      sync.Mutex // guards the fields below and writes to in
	next    uint64
	waiting map[uint64]chan dockerwire.Reply
	dead    error // why the helper cannot answer, once it cannot
}

var (
	helperOnce sync.Once
	helper     *dockerHelper
	helperErr  error
)

// docker sends req to the helper and waits for its reply, or for ctx. A
// failure that the reply codes is returned wrapping ErrUnavailable,
// errAddrInUse or errTransient.
func docker(ctx context.Context, req dockerwire.Request) (dockerwire.Reply, error) {
	helperOnce.Do(func() { helper, helperErr = startDockerHelper() })
	if helperErr != nil {
		return dockerwire.Reply{}, helperErr
	}
	if req.TimeoutMillis == 0 {
		req.TimeoutMillis = timeoutMillis(ctx)
	}
	rep, err := helper.call(ctx, req)
	if err != nil {
		return rep, err
	}
	if rep.Err == "" {
		return rep, nil
	}
	err = errors.New(rep.Err)
	switch rep.Code {
	case dockerwire.Unavailable, dockerwire.NotFound:
		err = fmt.Errorf("%w: %s", ErrUnavailable, rep.Err)
	case dockerwire.AddrInUse:
		err = fmt.Errorf("%s: %w", rep.Err, errAddrInUse)
	case dockerwire.Transient:
		err = fmt.Errorf("%s: %w", rep.Err, errTransient)
	}
	return rep, err
}

// timeoutMillis returns what is left of ctx's deadline, for the helper's
// own bound, or 0 for none.
func timeoutMillis(ctx context.Context) int64 {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d).Milliseconds(), 1)
	}
	return 0
}

// startDockerHelper starts the helper: the binary EnvDockerHelper names, or
// go run of its source beside this file.
func startDockerHelper() (*dockerHelper, error) {
	var cmd *exec.Cmd
	if bin := strings.TrimSpace(os.Getenv(EnvDockerHelper)); bin != "" {
		cmd = exec.Command(bin)
	} else {
		_, file, _, ok := runtime.Caller(0)
		if !ok {
			return nil, fmt.Errorf("%w: cannot find the Docker helper's source; set %s", ErrUnavailable, EnvDockerHelper)
		}
		gobin := os.Getenv("GO")
		if gobin == "" {
			gobin = "go"
		}
		cmd = exec.Command(gobin, "run", ".")
		cmd.Dir = filepath.Join(filepath.Dir(file), "docker")
	}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: starting the Docker helper %v: %v", ErrUnavailable, cmd.Args, err)
	}
	h := &dockerHelper{in: in, waiting: make(map[uint64]chan dockerwire.Reply)}
	go h.read(out)
	return h, nil
}

// read delivers the helper's replies until its stdout closes, then fails
// every call still waiting. It runs as long as the test process.
func (h *dockerHelper) read(out io.Reader) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var rep dockerwire.Reply
		if err := json.Unmarshal(sc.Bytes(), &rep); err != nil {
			fmt.Fprintf(os.Stderr, "redistest: a reply of the Docker helper that is not JSON: %q\n", sc.Bytes())
			continue
		}
		h.mu.Lock()
		ch := h.waiting[rep.ID]
		delete(h.waiting, rep.ID)
		h.mu.Unlock()
		if ch != nil {
			ch <- rep
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dead = fmt.Errorf("redistest: the Docker helper exited (%v); its stderr is in the test's output", sc.Err())
	for id, ch := range h.waiting {
		delete(h.waiting, id)
		close(ch)
	}
}

// call sends req and waits for its reply or for ctx.
func (h *dockerHelper) call(ctx context.Context, req dockerwire.Request) (dockerwire.Reply, error) {
	ch := make(chan dockerwire.Reply, 1)
	h.mu.Lock()
	if h.dead != nil {
		h.mu.Unlock()
		return dockerwire.Reply{}, h.dead
	}
	h.next++
	req.ID = h.next
	h.waiting[req.ID] = ch
	line, err := json.Marshal(req)
	if err == nil {
		_, err = h.in.Write(append(line, '\n'))
	}
	if err != nil {
		delete(h.waiting, req.ID)
		h.mu.Unlock()
		return dockerwire.Reply{}, fmt.Errorf("redistest: writing to the Docker helper: %w", err)
	}
	h.mu.Unlock()
	select {
	case rep, ok := <-ch:
		if !ok {
			h.mu.Lock()
			defer h.mu.Unlock()
			return rep, h.dead
		}
		return rep, nil
	case <-ctx.Done():
		// The helper's own bound ends the operation soon after; its reply
		// finds no one waiting and is dropped.
		h.mu.Lock()
		delete(h.waiting, req.ID)
		h.mu.Unlock()
		return dockerwire.Reply{}, fmt.Errorf("redistest: Docker helper, %s: %w", req.Op, ctx.Err())
	}
}
