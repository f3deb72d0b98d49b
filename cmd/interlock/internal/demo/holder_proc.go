package demo

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/interlock-go/interlock/cmd/interlock/internal/proc"
)

const (
	// holderReplyTimeout bounds the wait for a holder's next line.
	holderReplyTimeout = 5 * time.Second
	// holderStopTimeout is how long a holder may take to exit once its
	// stdin is closed before it is killed.
	holderStopTimeout = 3 * time.Second
)

// holderProc is the demo's side of a holder process (worker C).
type holderProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string // closed when the holder's stdout ends
	done  bool        // stopped and waited for
	token uint64      // the fencing token of a holder of the fenced lock
}

// startHolder starts "interlock demo-holder" on lock and waits until it
// holds the lock. With a fence key, the holder takes the fenced lock and
// writes through that fence; h.token is then its fencing token.
func (d *demo) startHolder(ctx context.Context, lock, ledger, fence string) (*holderProc, error) {
	args := []string{holderCmdName,
		"--redis", strings.Join(d.urls, ","),
		"--watchdog-timeout", demoWatchdog.String(),
		"--ledger", ledger}
	if fence != "" {
		args = append(args, "--fence", fence)
	}
	cmd := exec.Command(d.exe, append(args, lock)...)
	cmd.Stderr = d.stderr
	cmd.SysProcAttr = proc.Attr(true, syscall.SIGKILL)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting a holder process: %w", err)
	}
	h := &holderProc{cmd: cmd, stdin: stdin, lines: make(chan string, 16)}
	d.holders = append(d.holders, h)
	go h.read(stdout)
	line, err := h.expect(ctx, holderLocked)
	if err != nil {
		return nil, err
	}
	if fence != "" {
		if h.token, err = lineToken(line); err != nil {
			return nil, fmt.Errorf("holder process %d: %w", h.pid(), err)
		}
	}
	return h, nil
}

// lineToken returns the token that ends a holder's line, such as
// "locked 5" or "rejected 6".
func lineToken(line string) (uint64, error) {
	_, word, _ := strings.Cut(line, " ")
	t, err := strconv.ParseUint(word, 10, 64)
	if err != nil || t == 0 {
		return 0, fmt.Errorf("no fencing token in %q", line)
	}
	return t, nil
}

// read passes the holder's lines to h.lines until its stdout ends.
func (h *holderProc) read(stdout io.Reader) {
	defer close(h.lines)
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		h.lines <- sc.Text()
	}
}

// pid returns the holder's process id.
func (h *holderProc) pid() int { return h.cmd.Process.Pid }

// expect waits for the holder's next line and checks that it starts with
// one of the words in want.
func (h *holderProc) expect(ctx context.Context, want ...string) (string, error) {
	t := time.NewTimer(holderReplyTimeout)
	defer t.Stop()
	select {
	case line, ok := <-h.lines:
		if !ok {
			return "", fmt.Errorf("holder process %d exited instead of saying %q", h.pid(), strings.Join(want, " or "))
		}
		for _, w := range want {
			if line == w || strings.HasPrefix(line, w+" ") {
				return line, nil
			}
		}
		return "", fmt.Errorf("holder process %d said %q, want %q", h.pid(), line, strings.Join(want, " or "))
	case <-t.C:
		return "", fmt.Errorf("holder process %d said nothing for %v, want %q", h.pid(), holderReplyTimeout, strings.Join(want, " or "))
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// poll returns the holder's next line if one arrives within d, or "".
func (h *holderProc) poll(ctx context.Context, d time.Duration) (string, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case line, ok := <-h.lines:
		if !ok {
			return "", fmt.Errorf("holder process %d exited", h.pid())
		}
		return line, nil
	case <-t.C:
		return "", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// send writes one line to the holder.
func (h *holderProc) send(line string) error {
	_, err := io.WriteString(h.stdin, line+"\n")
	return err
}

// signal sends sig to the holder.
func (h *holderProc) signal(sig syscall.Signal) error {
	return proc.Kill(h.pid(), sig)
}

// stop ends the holder and waits for it: it closes its stdin, which makes
// it unlock and exit, or, with kill or after holderStopTimeout, kills it.
// It is safe to call more than once.
func (h *holderProc) stop(kill bool) {
	if h.done {
		return
	}
	h.done = true
	if kill {
		// Before stdin is closed: a holder that saw the end of its stdin
		// could unlock, and be killed before it deleted its unlock latch.
		_ = h.signal(syscall.SIGKILL)
	}
	_ = h.stdin.Close()
	t := time.NewTimer(holderStopTimeout)
	defer t.Stop()
	for open := true; open; {
		select {
		case _, open = <-h.lines:
		case <-t.C:
			_ = h.signal(syscall.SIGKILL) // works on a stopped process too
		}
	}
	// Wait only after the reader saw the end of stdout (see exec.Cmd). A
	// killed holder's status is of no interest.
	_ = h.cmd.Wait()
}
