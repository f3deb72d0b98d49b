package redisproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

const (
	// pollInterval is the pause between two readiness checks.
	pollInterval = 10 * time.Millisecond
	// readyProbeTimeout bounds one readiness check.
	readyProbeTimeout = 500 * time.Millisecond
	// LogName is the file, in the server's directory, that receives the
	// server's stdout and stderr.
	LogName = "redis.log"
	// logTailLines is how many log lines a startup error carries.
	logTailLines = 20
)

// ErrAddrInUse is wrapped by the error of a startup that failed because the
// port was taken.
var ErrAddrInUse = errors.New("address already in use")

// process is one run of redis-server.
type process struct {
	cmd       *exec.Cmd
	exited    chan struct{} // closed once cmd.Wait has returned
	logOffset int64         // size of the log file before this run
}

// spawn runs redis-server once on s.port and waits until it is ready. The
// caller holds s.mu (or is the only user of s).
func (s *Server) spawn(ctx context.Context) error {
	logPath := filepath.Join(s.dir, LogName)
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("redisproc: %w", err)
	}
	var offset int64
	if fi, err := logf.Stat(); err == nil {
		offset = fi.Size()
	}
	cmd := exec.Command(s.bin, s.args()...)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = logf, logf // an *os.File needs no copying goroutine
	cmd.SysProcAttr = SysProcAttr()
	err = cmd.Start()
	_ = logf.Close() // the child has its own copy
	if err != nil {
		return fmt.Errorf("redisproc: starting %s: %w", s.bin, err)
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
		t := time.NewTimer(pollInterval)
		select {
		case <-p.exited:
			t.Stop()
			return s.exitError(p)
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("redisproc: redis-server on %s not ready: %w (last probe: %v)%s",
				s.addr, ctx.Err(), err, s.logTail(p.logOffset))
		case <-t.C:
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
	c, err := Dial(ctx, s.addr)
	if err != nil {
		return err
	}
	defer c.Close()
	info, err := c.DoString("INFO", "server")
	if err != nil {
		return err
	}
	if got, _ := InfoField(info, "process_id"); got != strconv.Itoa(pid) {
		return fmt.Errorf("port served by process %q, not by ours (%d)", got, pid)
	}
	pong, err := c.DoString("PING")
	if err == nil && pong != "PONG" {
		err = fmt.Errorf("PING answered %q", pong)
	}
	return err
}

// exitError describes a process that exited during startup. It wraps
// ErrAddrInUse when the port was taken.
func (s *Server) exitError(p *process) error {
	tail := s.logTail(p.logOffset)
	cause := errors.New("exited")
	if strings.Contains(tail, "Address already in use") {
		cause = ErrAddrInUse
	}
	return fmt.Errorf("redisproc: redis-server on %s failed during startup (%v): %w%s",
		s.addr, p.cmd.ProcessState, cause, tail)
}

// logTail returns the last lines the server logged after offset, formatted to
// be appended to a message, or "" if there are none.
func (s *Server) logTail(offset int64) string {
	path := filepath.Join(s.dir, LogName)
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
