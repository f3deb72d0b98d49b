package main

import (
	"context"
	"time"

	"github.com/bsm/redislock"
	goredis "github.com/redis/go-redis/v9"
)

// bsm/redislock on one go-redis v9 client (default pool). It has no
// watchdog, so the TTL is fixed: 30 s (interlock's watchdog lease). Its
// default is not to retry; the waiting acquire uses
// LinearBackoff(16 ms), 16 ms being the smallest interval its documentation
// recommends, bounded by the cell's context. Acquire and release are Lua
// scripts (EVALSHA). Commands are counted with a go-redis hook.
type redislockLib struct{}

func init() { Register(30, redislockLib{}) }

const redislockTTL = 30 * time.Second

func (redislockLib) Name() string { return "bsm/redislock" }

func (redislockLib) Open(_ context.Context, addr string) (Session, error) {
	c, h := newGoRedis(addr)
	return &redislockSession{c: c, h: h, rl: redislock.New(c)}, nil
}

type redislockSession struct {
	c  goredis.UniversalClient
	h  *countingHook
	rl *redislock.Client
}

func (s *redislockSession) Mutex(name string) Mutex {
	return &redislockMutex{rl: s.rl, key: name}
}

func (s *redislockSession) Commands() (int64, bool) { return s.h.n.Load(), true }
func (s *redislockSession) Close() error            { return s.c.Close() }

type redislockMutex struct {
	rl   *redislock.Client
	key  string
	held *redislock.Lock
}

func (m *redislockMutex) Lock(ctx context.Context) error {
	l, err := m.rl.Obtain(ctx, m.key, redislockTTL, &redislock.Options{
		RetryStrategy: redislock.LinearBackoff(16 * time.Millisecond),
	})
	if err != nil {
		return err
	}
	m.held = l
	return nil
}

func (m *redislockMutex) Unlock(ctx context.Context) error {
	l := m.held
	m.held = nil
	if l == nil {
		return redislock.ErrLockNotHeld
	}
	return l.Release(ctx)
}
