package main

import (
	"context"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// The floors: "lock" and "unlock" are each one PING, so a pair is two round
// trips that do no work on the server. The rueidis floor (default client
// options, the client interlock and rueidislock run on) is the denominator
// of the "× floor" column; the go-redis floor (default pool, the client of
// redsync and bsm/redislock) is printed for reference.
type floorRueidis struct{}
type floorGoRedis struct{}

func init() {
	Register(1, floorRueidis{})
	Register(1, floorGoRedis{})
}

func (floorRueidis) Name() string { return "floor: 2×PING (rueidis)" }
func (floorGoRedis) Name() string { return "floor: 2×PING (go-redis)" }

func (floorRueidis) Open(_ context.Context, addr string) (Session, error) {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		return nil, err
	}
	return &rueidisFloor{cnt: newCountingClient(rc)}, nil
}

type rueidisFloor struct{ cnt *countingClient }

func (f *rueidisFloor) IsFloor()                { /* marker */ }
func (f *rueidisFloor) Mutex(string) Mutex      { return rueidisPing{f.cnt} }
func (f *rueidisFloor) ReadMutex(string) Mutex  { return rueidisPing{f.cnt} }
func (f *rueidisFloor) Commands() (int64, bool) { return f.cnt.n.Load(), true }
func (f *rueidisFloor) Close() error            { f.cnt.Client.Close(); return nil }

type rueidisPing struct{ c rueidis.Client }

func (p rueidisPing) ping(ctx context.Context) error {
	return p.c.Do(ctx, p.c.B().Ping().Build()).Error()
}
func (p rueidisPing) Lock(ctx context.Context) error   { return p.ping(ctx) }
func (p rueidisPing) Unlock(ctx context.Context) error { return p.ping(ctx) }

func (floorGoRedis) Open(_ context.Context, addr string) (Session, error) {
	c, h := newGoRedis(addr)
	return &goredisFloor{c: c, h: h}, nil
}

type goredisFloor struct {
	c goredis.UniversalClient
	h *countingHook
}

func (f *goredisFloor) IsFloor()                { /* marker */ }
func (f *goredisFloor) Mutex(string) Mutex      { return goredisPing{f.c} }
func (f *goredisFloor) ReadMutex(string) Mutex  { return goredisPing{f.c} }
func (f *goredisFloor) Commands() (int64, bool) { return f.h.n.Load(), true }
func (f *goredisFloor) Close() error            { return f.c.Close() }

type goredisPing struct{ c goredis.UniversalClient }

func (p goredisPing) Lock(ctx context.Context) error   { return p.c.Ping(ctx).Err() }
func (p goredisPing) Unlock(ctx context.Context) error { return p.c.Ping(ctx).Err() }
