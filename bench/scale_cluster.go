package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/rueidis"
)

// scaleCluster is a 3-master Redis Cluster without replicas, made of
// redis-server processes started from PATH and formed with redis-cli. The
// main module's internal/redistest is not importable from this module, so
// the scale scenarios carry this small launcher of their own.
type scaleCluster struct {
	dir   string
	addrs []string
	procs []*exec.Cmd
	nodes []rueidis.Client // one single-node client per master, for INFO and CLIENT LIST
}

// startScaleCluster starts three cluster-enabled servers on free loopback
// ports, joins them with redis-cli --cluster create and waits until every
// node reports a healthy cluster.
func startScaleCluster(ctx context.Context) (*scaleCluster, error) {
	server, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, err
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "interlock-bench-cluster-")
	if err != nil {
		return nil, err
	}
	c := &scaleCluster{dir: dir}
	for range 3 {
		port, err := scaleFreePort()
		if err != nil {
			c.stop()
			return nil, err
		}
		p := strconv.Itoa(port)
		cmd := exec.Command(server,
			"--port", p, "--bind", "127.0.0.1", "--dir", dir,
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes-"+p+".conf",
			"--cluster-node-timeout", "5000",
			"--save", "", "--appendonly", "no", "--protected-mode", "no",
			"--logfile", filepath.Join(dir, "redis-"+p+".log"))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			c.stop()
			return nil, err
		}
		c.procs = append(c.procs, cmd)
		c.addrs = append(c.addrs, "127.0.0.1:"+p)
	}
	for _, a := range c.addrs {
		nc, err := scaleWaitNode(ctx, a)
		if err != nil {
			c.stop()
			return nil, err
		}
		c.nodes = append(c.nodes, nc)
	}
	args := append([]string{"--cluster", "create"}, c.addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		c.stop()
		return nil, fmt.Errorf("redis-cli %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := c.checkHealthy(ctx)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			c.stop()
			return nil, fmt.Errorf("cluster %v not healthy: %w", c.addrs, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return c, nil
}

// scaleWaitNode connects a single-node client to addr once the server answers.
func scaleWaitNode(ctx context.Context, addr string) (rueidis.Client, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		nc, err := rueidis.NewClient(rueidis.ClientOption{
			InitAddress: []string{addr}, ForceSingleClient: true, DisableCache: true,
		})
		if err == nil {
			if err = nc.Do(ctx, nc.B().Ping().Build()).Error(); err == nil {
				return nc, nil
			}
			nc.Close()
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("redis-server at %s did not start: %w", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkHealthy checks that every node sees three masters and all slots.
func (c *scaleCluster) checkHealthy(ctx context.Context) error {
	for i, nc := range c.nodes {
		info, err := nc.Do(ctx, nc.B().ClusterInfo().Build()).ToString()
		if err != nil {
			return err
		}
		for _, want := range []string{"cluster_state:ok", "cluster_slots_ok:16384", "cluster_known_nodes:3", "cluster_size:3"} {
			if !strings.Contains(info, want) {
				return fmt.Errorf("%s: no %s", c.addrs[i], want)
			}
		}
	}
	return nil
}

// client returns a rueidis cluster client seeded with every node.
func (c *scaleCluster) client() (rueidis.Client, error) {
	return rueidis.NewClient(rueidis.ClientOption{InitAddress: append([]string(nil), c.addrs...)})
}

// stop closes the node clients, kills the servers this launcher started
// (by pid) and removes their directory.
func (c *scaleCluster) stop() {
	for _, nc := range c.nodes {
		nc.Close()
	}
	for _, p := range c.procs {
		if p.Process != nil {
			_ = p.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, p := range c.procs {
		done := make(chan struct{})
		go func() { _ = p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = p.Process.Kill()
			<-done
		}
	}
	_ = os.RemoveAll(c.dir)
}

// commandStats returns, for one node, cmdstat_<name> → (calls, usec).
func (c *scaleCluster) commandStats(ctx context.Context, node int) (map[string][2]int64, error) {
	nc := c.nodes[node]
	info, err := nc.Do(ctx, nc.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		return nil, err
	}
	out := map[string][2]int64{}
	for line := range strings.SplitSeq(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		var calls, usec int64
		for f := range strings.SplitSeq(rest, ",") {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "calls":
				calls, _ = strconv.ParseInt(v, 10, 64)
			case "usec":
				usec, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		out[strings.TrimPrefix(name, "cmdstat_")] = [2]int64{calls, usec}
	}
	return out, nil
}

// evalStats is the EVAL and EVALSHA activity of every node at one moment.
type evalStats struct {
	evalsha, eval []int64 // calls per node
	usec          []int64 // server time in EVAL+EVALSHA per node
}

func (c *scaleCluster) evalStats(ctx context.Context) (evalStats, error) {
	var s evalStats
	for i := range c.nodes {
		st, err := c.commandStats(ctx, i)
		if err != nil {
			return s, err
		}
		s.evalsha = append(s.evalsha, st["evalsha"][0])
		s.eval = append(s.eval, st["eval"][0])
		s.usec = append(s.usec, st["evalsha"][1]+st["eval"][1])
	}
	return s, nil
}

// pubsubClients counts, on one node, the connections CLIENT LIST TYPE
// pubsub reports, and the connections with any (sharded or classic)
// subscription, whatever their type.
func (c *scaleCluster) pubsubClients(ctx context.Context, node int) (typed, subscribed int, err error) {
	nc := c.nodes[node]
	out, err := nc.Do(ctx, nc.B().ClientList().TypePubsub().Build()).ToString()
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.SplitSeq(strings.TrimSpace(strings.TrimPrefix(out, "txt:")), "\n") {
		if strings.TrimSpace(line) != "" {
			typed++
		}
	}
	all, err := nc.Do(ctx, nc.B().ClientList().Build()).ToString()
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.SplitSeq(strings.TrimSpace(strings.TrimPrefix(all, "txt:")), "\n") {
		for f := range strings.FieldsSeq(line) {
			k, v, _ := strings.Cut(f, "=")
			if (k == "sub" || k == "psub" || k == "ssub") && v != "0" {
				subscribed++
				break
			}
		}
	}
	return typed, subscribed, nil
}

func scaleFreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("not a TCP address")
	}
	return addr.Port, nil
}
