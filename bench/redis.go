package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/rueidis"
)

// benchRedis is the one redis-server of a run: either given with -redis or
// started here from PATH on a free loopback port (no persistence) and
// stopped at the end. The main module's internal launchers are not
// importable from this module, hence this small one.
type benchRedis struct {
	addr  string
	cmd   *exec.Cmd
	admin rueidis.Client // for INFO; not counted in any library's commands
}

func startBenchRedis(ctx context.Context, addr string) (*benchRedis, error) {
	r := &benchRedis{addr: addr}
	if addr == "" {
		bin, err := exec.LookPath("redis-server")
		if err != nil {
			return nil, fmt.Errorf("no -redis given and no redis-server in PATH: %w", err)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		r.addr = "127.0.0.1:" + strconv.Itoa(port)
		r.cmd = exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--protected-mode", "no", "--dir", os.TempDir(),
			"--logfile", "")
		r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := r.cmd.Start(); err != nil {
			return nil, err
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{r.addr}, DisableCache: true})
		if err == nil {
			if err = rc.Do(ctx, rc.B().Ping().Build()).Error(); err == nil {
				r.admin = rc
				return r, nil
			}
			rc.Close()
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			r.stop()
			return nil, fmt.Errorf("redis at %s not answering: %w", r.addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *benchRedis) stop() {
	if r.admin != nil {
		r.admin.Close()
	}
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
	}
}

// version is the server's redis_version.
func (r *benchRedis) version(ctx context.Context) string {
	s, _ := r.admin.Do(ctx, r.admin.B().Info().Section("server").Build()).ToString()
	for line := range strings.Lines(s) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v
		}
	}
	return "?"
}

// commandCalls is INFO commandstats as command name → calls. Redis counts
// a command run by a script (redis.call) under its own name as well, so
// "hincrby" includes the HINCRBYs inside lock scripts.
func (r *benchRedis) commandCalls(ctx context.Context) (map[string]int64, error) {
	s, err := r.admin.Do(ctx, r.admin.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for line := range strings.Lines(s) {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		for f := range strings.SplitSeq(rest, ",") {
			if v, ok := strings.CutPrefix(f, "calls="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				out[strings.TrimPrefix(name, "cmdstat_")] = n
			}
		}
	}
	return out, nil
}

// scriptCommands are the commands that run a script. Each is sent by a
// client at top level (Redis forbids calling them from a script).
var scriptCommands = []string{"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"}

// serverCounts summarises a commandstats delta: script runs, and every
// command executed (top level and inside scripts) except the harness's
// INFO and the clients' connection housekeeping.
func serverCounts(before, after map[string]int64) (scripts, executed int64) {
	for name, n := range after {
		d := n - before[name]
		if d <= 0 {
			continue
		}
		switch {
		case name == "info", name == "hello", strings.HasPrefix(name, "client"):
			continue
		}
		executed += d
		for _, s := range scriptCommands {
			if name == s {
				scripts += d
			}
		}
	}
	return scripts, executed
}
