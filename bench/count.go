package main

import (
	"context"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// countingClient is a rueidis.Client that counts every command sent through
// it, including those of the dedicated connections it hands out (interlock
// subscribes on one). Client-side caching calls (rueidislock) count as sent.
type countingClient struct {
	rueidis.Client
	n *atomic.Int64
}

func newCountingClient(rc rueidis.Client) *countingClient {
	return &countingClient{Client: rc, n: new(atomic.Int64)}
}

func (c *countingClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.n.Add(1)
	return c.Client.Do(ctx, cmd)
}

func (c *countingClient) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	c.n.Add(int64(len(cmds)))
	return c.Client.DoMulti(ctx, cmds...)
}

func (c *countingClient) DoCache(ctx context.Context, cmd rueidis.Cacheable, ttl time.Duration) rueidis.RedisResult {
	c.n.Add(1)
	return c.Client.DoCache(ctx, cmd, ttl)
}

func (c *countingClient) DoMultiCache(ctx context.Context, multi ...rueidis.CacheableTTL) []rueidis.RedisResult {
	c.n.Add(int64(len(multi)))
	return c.Client.DoMultiCache(ctx, multi...)
}

func (c *countingClient) Receive(ctx context.Context, subscribe rueidis.Completed, fn func(msg rueidis.PubSubMessage)) error {
	c.n.Add(1)
	return c.Client.Receive(ctx, subscribe, fn)
}

func (c *countingClient) Dedicated(fn func(rueidis.DedicatedClient) error) error {
	return c.Client.Dedicated(func(dc rueidis.DedicatedClient) error {
		return fn(&countingDedicated{DedicatedClient: dc, n: c.n})
	})
}

func (c *countingClient) Dedicate() (rueidis.DedicatedClient, func()) {
	dc, cancel := c.Client.Dedicate()
	return &countingDedicated{DedicatedClient: dc, n: c.n}, cancel
}

// Nodes returns the client's nodes, each counting into c, so that the
// connections dedicated from a node's pool (interlock's renewal rounds and
// latch sweeps on a cluster) are counted too.
func (c *countingClient) Nodes() map[string]rueidis.Client {
	nodes := c.Client.Nodes()
	for addr, n := range nodes {
		nodes[addr] = &countingClient{Client: n, n: c.n}
	}
	return nodes
}

type countingDedicated struct {
	rueidis.DedicatedClient
	n *atomic.Int64
}

func (c *countingDedicated) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.n.Add(1)
	return c.DedicatedClient.Do(ctx, cmd)
}

func (c *countingDedicated) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	c.n.Add(int64(len(cmds)))
	return c.DedicatedClient.DoMulti(ctx, cmds...)
}

func (c *countingDedicated) Receive(ctx context.Context, subscribe rueidis.Completed, fn func(msg rueidis.PubSubMessage)) error {
	c.n.Add(1)
	return c.DedicatedClient.Receive(ctx, subscribe, fn)
}

// countingHook is a go-redis hook that counts every command processed,
// alone or in a pipeline (a script's EVALSHA and its NOSCRIPT fallback EVAL
// are two commands).
type countingHook struct{ n atomic.Int64 }

func (h *countingHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h *countingHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h *countingHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// newGoRedis opens a go-redis v9 client with its default pool and a
// counting hook: a Client, or with clusterMode a ClusterClient seeded with
// addr (default options, a default pool per node), whose hook sees each
// command once.
func newGoRedis(addr string) (goredis.UniversalClient, *countingHook) {
	var c goredis.UniversalClient
	if clusterMode {
		c = goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{addr}})
	} else {
		c = goredis.NewClient(&goredis.Options{Addr: addr})
	}
	h := &countingHook{}
	c.AddHook(h)
	return c, h
}
