package redistest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
)

// StartContainerCluster is ContainerClusterWith without a testing.TB: the
// caller must call Stop. Without a Docker engine, or when img is not built,
// the error wraps ErrUnavailable.
func StartContainerCluster(img Image, opts ...Option) (*ClusterServers, error) {
	o := buildOptions(opts)
	if o.replicas < 0 {
		return nil, fmt.Errorf("redistest: StartContainerCluster: negative number of replicas per master %d", o.replicas)
	}
	if err := dockerReady(); err != nil {
		return nil, err
	}
	args := o.args
	if o.replicas > 0 {
		// See StartCluster.
		args = slices.Concat(replicaArgs, []string{"--repl-ping-replica-period", "1"}, o.args)
	}
	nodes := make([]*Server, clusterMasters*(1+o.replicas))
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() { nodes[i], errs[i] = startContainer(img, args, true) })
	}
	wg.Wait()
	c := &ClusterServers{replicas: o.replicas}
	for _, n := range nodes {
		if n != nil {
			c.nodes = append(c.nodes, n)
		}
	}
	if err := errors.Join(errs...); err != nil {
		c.Stop()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	// The image's own cli, run in the first node's container, which is on
	// the host network like the others.
	cmd := append([]string{img.cli(), "--cluster", "create"}, c.Addrs()...)
	cmd = append(cmd, "--cluster-replicas", strconv.Itoa(o.replicas), "--cluster-yes")
	if _, err := c.nodes[0].ctr.Exec(ctx, cmd...); err != nil {
		c.Stop()
		return nil, err
	}
	if err := c.waitStable(ctx, nil); err != nil {
		err = fmt.Errorf("%w%s", err, logTails(c.nodes...))
		c.Stop()
		return nil, err
	}
	return c, nil
}

// ContainerCluster starts a cluster of three masters from img for the test
// tb, every node a container on the host network, and stops it with
// tb.Cleanup; extraArgs are appended to every node's command line. It
// returns once every node reports cluster_state:ok and all agree on CLUSTER
// SLOTS, as Cluster does, and logs the nodes' server version. It skips or
// fails tb as StartContainer does. ContainerClusterWith does the same with
// Options, for example WithReplicas(1).
func ContainerCluster(tb testing.TB, img Image, extraArgs ...string) *ClusterServers {
	tb.Helper()
	return ContainerClusterWith(tb, img, WithArgs(extraArgs...))
}

// ContainerClusterWith is ContainerCluster with Options.
func ContainerClusterWith(tb testing.TB, img Image, opts ...Option) *ClusterServers {
	tb.Helper()
	c, err := StartContainerCluster(img, opts...)
	SkipOrFail(tb, err)
	tb.Cleanup(func() {
		for _, n := range slices.Backward(c.nodes) {
			n.cleanup(tb)
		}
	})
	n := c.nodes[0].ctr
	tb.Logf("redistest: cluster of %d nodes (%d masters): %s %s (%s) on %v",
		len(c.nodes), clusterMasters, img.Server, n.version, img.Ref, c.Addrs())
	return c
}

// StartContainerReplicas is ContainerReplicas without a testing.TB: the
// caller must call Stop. Without a Docker engine, or when img is not built,
// the error wraps ErrUnavailable.
func StartContainerReplicas(img Image, n int, opts ...Option) (*ReplicaSet, error) {
	if n < 1 {
		return nil, fmt.Errorf("redistest: StartContainerReplicas needs at least one replica, not %d", n)
	}
	o := buildOptions(opts)
	if err := dockerReady(); err != nil {
		return nil, err
	}
	master, err := startContainer(img, slices.Concat(replicaArgs, o.args), false)
	if err != nil {
		return nil, err
	}
	r := &ReplicaSet{master: master, replicas: make([]*Server, n)}
	replicaof := []string{"--replicaof", "127.0.0.1", strconv.Itoa(master.port)}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r.replicas[i], errs[i] = startContainer(img, slices.Concat(replicaArgs, replicaof, o.args), false)
		})
	}
	wg.Wait()
	r.replicas = slices.DeleteFunc(r.replicas, func(s *Server) bool { return s == nil })
	if err := errors.Join(errs...); err != nil {
		r.Stop()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), replicaTimeout)
	defer cancel()
	if err := r.WaitSynced(ctx); err != nil {
		err = fmt.Errorf("redistest: %w%s", err, logTails(r.all()...))
		r.Stop()
		return nil, err
	}
	return r, nil
}

// ContainerReplicas starts a master and n replicas of it from img for the
// test tb, each in a container on the host network, and stops them with
// tb.Cleanup (replicas first). It returns once the replicas are in sync, as
// Replicas does, and logs the server version. It skips or fails tb as
// StartContainer does. PauseReplication, Promote and the Servers' Kill,
// Pause and Restart work as on processes.
func ContainerReplicas(tb testing.TB, img Image, n int, opts ...Option) *ReplicaSet {
	tb.Helper()
	r, err := StartContainerReplicas(img, n, opts...)
	SkipOrFail(tb, err)
	tb.Cleanup(func() { r.cleanup(tb) })
	tb.Logf("redistest: master %s with %d replicas", r.master.ctr, len(r.replicas))
	return r
}

// ContainerReplicated is ContainerReplicas with one replica, returned with
// its master; extraArgs are appended to both command lines.
func ContainerReplicated(tb testing.TB, img Image, extraArgs ...string) (master, replica *Server) {
	tb.Helper()
	r := ContainerReplicas(tb, img, 1, WithArgs(extraArgs...))
	return r.master, r.replicas[0]
}
