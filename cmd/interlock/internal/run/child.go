package run

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/cmd/interlock/internal/proc"
)

// envLock names the variable that tells CMD which lock it runs under.
const envLock = "INTERLOCK_LOCK"

// child is CMD, running.
type child struct {
	cmd *exec.Cmd
	// ownGroup: CMD leads a process group of its own, and signals go to
	// the whole group. Otherwise CMD shares interlock's group (interlock
	// runs in the foreground of a terminal) and signals go to CMD alone.
	ownGroup bool
	done     chan struct{} // closed once cmd.Wait returned
	err      error         // cmd.Wait's error, set before done is closed
}

// startChild starts CMD with interlock's stdio and environment plus
// INTERLOCK_LOCK and env (the lock kind's own variables).
func startChild(io cli.Stdio, cfg *runConfig, env []string) (*child, error) {
	cmd := exec.Command(cfg.argv[0], cfg.argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = io.In, io.Out, io.Err
	cmd.Env = append(append(os.Environ(), envLock+"="+cfg.lock), env...)
	ownGroup := !proc.InTerminalForeground()
	cmd.SysProcAttr = proc.Attr(ownGroup, syscall.SIGTERM)
	if err := cmd.Start(); err != nil {
		code := exit.CannotExec
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			code = exit.NotFound
		}
		return nil, exit.Errorf(code, "cannot run %s: %w", cfg.argv[0], err)
	}
	c := &child{cmd: cmd, ownGroup: ownGroup, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// signal sends sig to CMD's process group, or to CMD alone when it shares
// interlock's group. A CMD that is gone already is not an error.
func (c *child) signal(sig syscall.Signal) {
	pid := c.cmd.Process.Pid
	if c.ownGroup {
		pid = -pid
	}
	_ = proc.Kill(pid, sig)
}

// forward passes a signal that interlock received on to CMD. When CMD
// shares interlock's process group only SIGTERM is passed on: the other
// forwarded signals come from the terminal, which sent them to CMD too.
func (c *child) forward(sig os.Signal) {
	s, ok := sig.(syscall.Signal)
	if !ok || (!c.ownGroup && s != syscall.SIGTERM) {
		return
	}
	c.signal(s)
}

// status returns CMD's exit as interlock's: its exit code, or 128+N for
// death by signal N, as shells report it.
func (c *child) status() error {
	if c.err != nil && c.cmd.ProcessState == nil {
		return exit.Errorf(exit.Failure, "waiting for %s: %w", c.cmd.Path, c.err)
	}
	ps := c.cmd.ProcessState
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exit.Status(exit.SignalBase + int(ws.Signal()))
	}
	return exit.Status(ps.ExitCode())
}

// supervise runs CMD under the lock: it passes signals from sigs on to
// CMD, and if the lock is lost it terminates CMD (SIGTERM, then SIGKILL
// after cfg.grace). It returns once CMD exited, with CMD's status, or
// with lost set and exit.Lost when the lock was lost.
func supervise(ctx context.Context, io cli.Stdio, l locker, cfg *runConfig, sigs <-chan os.Signal) (lost bool, status error) {
	guard := l.guard(ctx)
	c, err := startChild(io, cfg, l.env())
	if err != nil {
		return false, err
	}
	guardDone := guard.Done()
	var grace <-chan time.Time
	for {
		select {
		case sig := <-sigs:
			c.forward(sig)
		case <-guardDone:
			guardDone, lost = nil, true
			fmt.Fprintf(io.Err, "interlock: %s lost while CMD ran (%v); sending SIGTERM to CMD\n", cfg.describeLock(), context.Cause(guard))
			c.signal(syscall.SIGTERM)
			t := time.NewTimer(cfg.grace)
			defer t.Stop()
			grace = t.C
		case <-grace:
			grace = nil
			fmt.Fprintf(io.Err, "interlock: CMD still running %v after SIGTERM; sending SIGKILL\n", cfg.grace)
			c.signal(syscall.SIGKILL)
		case <-c.done:
			if !lost {
				return false, c.status()
			}
			// What is left of CMD's group runs unprotected: end it.
			if c.ownGroup {
				c.signal(syscall.SIGKILL)
			}
			return true, exit.Errorf(exit.Lost, "%s was lost while CMD ran; CMD was terminated (%v)", cfg.describeLock(), c.describeExit())
		}
	}
}

// describeExit says how CMD ended, for messages.
func (c *child) describeExit() string {
	if c.cmd.ProcessState == nil {
		return "status unknown"
	}
	return c.cmd.ProcessState.String()
}
