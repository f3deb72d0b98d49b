package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/rueidis"
)

// clusterMode is -cluster: the run is on a Redis Cluster, and the address
// every Library.Open gets is one of its masters, a seed. rueidis finds the
// cluster by itself; go-redis and the Redisson peer are told.
var clusterMode bool

// benchRedis is the Redis of a run: either given with -redis or started
// here from PATH on free loopback ports (no persistence) and stopped at the
// end; one redis-server, or with clusterMode a 3-master cluster
// (scale_cluster.go). The main module's internal launchers are not
// importable from this module, hence this small one.
type benchRedis struct {
	addr    string // what the libraries open: the server, or a seed of the cluster
	cmd     *exec.Cmd
	cluster *scaleCluster  // the cluster started here, if any
	admin   rueidis.Client // for INFO and the semaphores' SETs; not counted in any library's commands
	// On a cluster, its masters and one single-node client each, for INFO.
	masters []string
	nodes   []rueidis.Client
}

func startBenchRedis(ctx context.Context, addr string) (*benchRedis, error) {
	r := &benchRedis{addr: addr}
	if addr == "" && clusterMode {
		cl, err := startScaleCluster(ctx)
		if err != nil {
			return nil, fmt.Errorf("starting the 3-master cluster: %w", err)
		}
		r.cluster, r.addr = cl, cl.addrs[0]
	} else if addr == "" {
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
				break
			}
			rc.Close()
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			r.stop()
			return nil, fmt.Errorf("redis at %s not answering: %w", r.addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !clusterMode && r.admin.Mode() == rueidis.ClientModeCluster {
		r.stop()
		return nil, fmt.Errorf("%s is a node of a Redis Cluster: add -cluster", r.addr)
	}
	if !clusterMode {
		return r, nil
	}
	if err := r.connectMasters(ctx); err != nil {
		r.stop()
		return nil, err
	}
	return r, nil
}

// connectMasters finds the cluster's masters (CLUSTER NODES) and opens a
// single-node client on each.
func (r *benchRedis) connectMasters(ctx context.Context) error {
	if r.admin.Mode() != rueidis.ClientModeCluster {
		return fmt.Errorf("-cluster: %s is not a node of a Redis Cluster", r.addr)
	}
	s, err := r.admin.Do(ctx, r.admin.B().ClusterNodes().Build()).ToString()
	if err != nil {
		return err
	}
	for line := range strings.Lines(s) {
		// <id> <ip:port@cport[,hostname]> <flags> ...
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		flags := strings.Split(f[2], ",")
		if !slices.Contains(flags, "master") || slices.Contains(flags, "fail") || slices.Contains(flags, "noaddr") {
			continue
		}
		a, _, _ := strings.Cut(f[1], "@")
		r.masters = append(r.masters, a)
	}
	if len(r.masters) == 0 {
		return fmt.Errorf("-cluster: no master in CLUSTER NODES of %s", r.addr)
	}
	slices.Sort(r.masters)
	for _, a := range r.masters {
		nc, err := scaleWaitNode(ctx, a)
		if err != nil {
			return err
		}
		r.nodes = append(r.nodes, nc)
	}
	return nil
}

// infoNodes are the clients INFO is read from: the server's, or one per
// master of the cluster.
func (r *benchRedis) infoNodes() []rueidis.Client {
	if r.nodes != nil {
		return r.nodes
	}
	return []rueidis.Client{r.admin}
}

func (r *benchRedis) stop() {
	for _, nc := range r.nodes {
		nc.Close()
	}
	if r.admin != nil {
		r.admin.Close()
	}
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
	}
	if r.cluster != nil {
		r.cluster.stop()
	}
}

// version is the server's redis_version (on a cluster, its first master's).
func (r *benchRedis) version(ctx context.Context) string {
	nc := r.infoNodes()[0]
	s, _ := nc.Do(ctx, nc.B().Info().Section("server").Build()).ToString()
	for line := range strings.Lines(s) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v
		}
	}
	return "?"
}

// commandCalls is INFO commandstats as command name → calls, summed over
// the masters on a cluster. Redis counts a command run by a script
// (redis.call) under its own name as well, so "hincrby" includes the
// HINCRBYs inside lock scripts.
func (r *benchRedis) commandCalls(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	for _, nc := range r.infoNodes() {
		s, err := nc.Do(ctx, nc.B().Info().Section("commandstats").Build()).ToString()
		if err != nil {
			return nil, err
		}
		for line := range strings.Lines(s) {
			name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
			if !ok || !strings.HasPrefix(name, "cmdstat_") {
				continue
			}
			for f := range strings.SplitSeq(rest, ",") {
				if v, ok := strings.CutPrefix(f, "calls="); ok {
					n, _ := strconv.ParseInt(v, 10, 64)
					out[strings.TrimPrefix(name, "cmdstat_")] += n
				}
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
// INFO and the clients' connection and cluster-topology housekeeping
// (HELLO, CLIENT, CLUSTER).
func serverCounts(before, after map[string]int64) (scripts, executed int64) {
	for name, n := range after {
		d := n - before[name]
		if d <= 0 {
			continue
		}
		switch {
		case name == "info", name == "hello", strings.HasPrefix(name, "client"), strings.HasPrefix(name, "cluster"):
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
