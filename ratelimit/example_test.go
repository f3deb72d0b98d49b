package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/ratelimit"
)

// In these examples addr is the address of a Redis server.

// Three calls a second, across every process that opens the limiter, Go or
// Java (Redisson's getRateLimiter).
func ExampleLimiter() {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		panic(err)
	}
	defer rc.Close()
	c, err := interlock.New(rc)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ctx := context.Background()

	l := ratelimit.New(c, "example:api")
	defer l.Delete(ctx)
	ok, _ := l.TrySetRate(ctx, ratelimit.Config{Rate: 3, Interval: time.Second}) // false if set up already
	fmt.Println("set up:", ok)

	ok, _ = l.TryAcquire(ctx, 2, 0)
	fmt.Println("took two:", ok)
	ok, _ = l.TryAcquire(ctx, 2, 0) // one left in this second: no wait, no permits
	fmt.Println("took two more:", ok)
	n, _ := l.AvailablePermits(ctx)
	fmt.Println("free:", n)

	cfg, _ := l.Config(ctx)
	fmt.Println(cfg.Type, cfg.Rate, cfg.Interval)
	// Output:
	// set up: true
	// took two: true
	// took two more: false
	// free: 1
	// OVERALL 3 1s
}

// Acquire sleeps for as long as the limiter says the permits take to come
// free; the context bounds the wait.
func ExampleLimiter_Acquire() {
	rc, _ := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	defer rc.Close()
	c, _ := interlock.New(rc)
	defer c.Close()
	ctx := context.Background()

	l := ratelimit.New(c, "example:acquire")
	defer l.Delete(ctx)
	_, _ = l.TrySetRate(ctx, ratelimit.Config{Rate: 1, Interval: 200 * time.Millisecond})

	start := time.Now()
	for range 3 {
		if err := l.Acquire(ctx, 1); err != nil {
			panic(err)
		}
	}
	fmt.Println("three permits took two intervals:", time.Since(start) >= 400*time.Millisecond)

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	err := l.Acquire(short, 1)
	fmt.Println(errors.Is(err, context.DeadlineExceeded))
	// Output:
	// three permits took two intervals: true
	// true
}

// A per-client rate: each Client (each RedissonClient in Java) has the
// whole rate to itself.
func ExampleLimiter_perClient() {
	rc, _ := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	defer rc.Close()
	a, _ := interlock.New(rc)
	defer a.Close()
	b, _ := interlock.New(rc)
	defer b.Close()
	ctx := context.Background()

	la, lb := ratelimit.New(a, "example:per-client"), ratelimit.New(b, "example:per-client")
	defer la.Delete(ctx)
	defer lb.Delete(ctx)
	_ = la.SetRate(ctx, ratelimit.Config{Type: ratelimit.PerClient, Rate: 1, Interval: time.Minute})

	okA, _ := la.TryAcquire(ctx, 1, 0)
	okB, _ := lb.TryAcquire(ctx, 1, 0)
	againA, _ := la.TryAcquire(ctx, 1, 0)
	fmt.Println(okA, okB, againA)
	// Output:
	// true true false
}
