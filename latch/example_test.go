package latch_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/latch"
)

// In these examples addr is the address of a Redis server.

// Wait for three workers, which could as well be Java threads calling
// countDown() on the same latch.
func ExampleLatch() {
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

	l := latch.New(c, "example:batch")
	defer l.Delete(ctx)
	ok, _ := l.TrySetCount(ctx, 3)
	fmt.Println("closed:", ok)

	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			// ... a worker's job ...
			if err := l.CountDown(ctx); err != nil {
				panic(err)
			}
		})
	}

	if err := l.Await(ctx); err != nil { // returns once the count is 0
		panic(err)
	}
	n, _ := l.Count(ctx)
	fmt.Println("open, count", n)
	wg.Wait()
	// Output:
	// closed: true
	// open, count 0
}

// Await waits as long as its context lets it.
func ExampleLatch_Await() {
	rc, _ := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	defer rc.Close()
	c, _ := interlock.New(rc)
	defer c.Close()
	ctx := context.Background()
	l := latch.New(c, "example:never-done")
	defer l.Delete(ctx)
	_, _ = l.TrySetCount(ctx, 1)

	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	err := l.Await(short)
	fmt.Println(errors.Is(err, context.DeadlineExceeded))

	_ = l.CountDown(ctx)
	fmt.Println(l.Await(ctx)) // open: returns at once
	// Output:
	// true
	// <nil>
}
