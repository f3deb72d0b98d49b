package demo

import (
	"context"
	"errors"
	"os/exec"
	"time"

	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
	"github.com/interlock-go/interlock/internal/redisproc"
)

// defaultRedisAddr is where the demo looks for a Redis before starting its
// own.
const defaultRedisAddr = "127.0.0.1:6379"

// defaultProbeTimeout bounds the check that a Redis answers on
// defaultRedisAddr.
const defaultProbeTimeout = 500 * time.Millisecond

// demoServer is the Redis the demo runs against.
type demoServer struct {
	urls []string
	// srv is the throwaway redis-server the demo started, or nil.
	srv *redisproc.Server
}

// stop removes the throwaway server, if the demo started one.
func (s *demoServer) stop() { s.srv.Stop() }

// demoRedis chooses the demo's Redis: the one named by --redis or
// INTERLOCK_REDIS; else the one on 127.0.0.1:6379 if it answers PING
// (without a password); else a throwaway redis-server from PATH.
func demoRedis(ctx context.Context, io cli.Stdio, redis *redisconn.Flag) (*demoServer, error) {
	if redis.Given || io.Getenv(redisconn.EnvVar) != "" {
		return &demoServer{urls: redis.URLs}, nil
	}
	pctx, cancel := context.WithTimeout(ctx, defaultProbeTimeout)
	pong, err := redisproc.CommandString(pctx, defaultRedisAddr, "PING")
	cancel()
	if err == nil && pong == "PONG" {
		return &demoServer{urls: []string{"redis://" + defaultRedisAddr}}, nil
	}
	srv, err := redisproc.Start(ctx, redisproc.Config{DirPattern: "interlock-demo-"})
	switch {
	case errors.Is(err, exec.ErrNotFound):
		return nil, exit.Errorf(exit.Unavailable, "demo: no Redis answers on %s and redis-server is not on PATH: install redis-server, or pass --redis URL", defaultRedisAddr)
	case err != nil:
		return nil, exit.Errorf(exit.Unavailable, "demo: no Redis answers on %s, and starting redis-server failed: %w", defaultRedisAddr, err)
	}
	return &demoServer{urls: []string{"redis://" + srv.Addr()}, srv: srv}, nil
}
