package main

import (
	"context"
	"math"

	"github.com/go-redsync/redsync/v4"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredis "github.com/redis/go-redis/v9"
)

// redsync v4 on one go-redis v9 client (default pool) as its single pool,
// with redsync's defaults: expiry 8 s, drift factor 0.01, retry delay
// uniformly random in [50 ms, 250 ms), no extension (no watchdog). The one
// change: tries raised from 32 to MaxInt32, so that a waiting LockContext
// under contention waits until the cell's context ends instead of failing
// after 32 tries (~5 s). Acquire is a SET NX PX, release a Lua script
// (EVALSHA). Commands are counted with a go-redis hook.
type redsyncLib struct{}

func init() { Register(20, redsyncLib{}) }

func (redsyncLib) Name() string { return "redsync" }

func (redsyncLib) Open(_ context.Context, addr string) (Session, error) {
	c, h := newGoRedis(addr)
	return &redsyncSession{c: c, h: h, rs: redsync.New(redsyncgoredis.NewPool(c))}, nil
}

type redsyncSession struct {
	c  goredis.UniversalClient
	h  *countingHook
	rs *redsync.Redsync
}

func (s *redsyncSession) Mutex(name string) Mutex {
	return redsyncMutex{s.rs.NewMutex(name, redsync.WithTries(math.MaxInt32))}
}

func (s *redsyncSession) Commands() (int64, bool) { return s.h.n.Load(), true }
func (s *redsyncSession) Close() error            { return s.c.Close() }

type redsyncMutex struct{ m *redsync.Mutex }

func (m redsyncMutex) Lock(ctx context.Context) error { return m.m.LockContext(ctx) }

func (m redsyncMutex) Unlock(ctx context.Context) error {
	_, err := m.m.UnlockContext(ctx)
	return err
}
