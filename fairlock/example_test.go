package fairlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
)

// In these examples addr is the address of a Redis server.

// Workers are served in the order they started waiting.
func ExampleMutex() {
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
	m := fairlock.New(c, "example:jobs")

	// Someone (think: another process) holds the lock.
	holder := interlock.WithOwner(ctx, interlock.NewOwnerID())
	if err := m.Lock(holder); err != nil {
		panic(err)
	}

	// Three workers queue up, one after the other.
	served := make(chan int, 3)
	var wg sync.WaitGroup
	for i := 1; i <= 3; i++ {
		worker := interlock.WithOwner(ctx, interlock.NewOwnerID())
		wg.Go(func() {
			if err := m.Lock(worker); err != nil {
				panic(err)
			}
			served <- i
			_ = m.Unlock(worker)
		})
		// Let worker i join the queue before the next one starts.
		for queued(rc, "redisson_lock_queue:{example:jobs}") < i {
			time.Sleep(time.Millisecond)
		}
	}

	_ = m.Unlock(holder) // wakes the first worker in the queue
	wg.Wait()
	close(served)
	for i := range served {
		fmt.Println("served worker", i)
	}
	// Output:
	// served worker 1
	// served worker 2
	// served worker 3
}

func queued(rc rueidis.Client, queue string) int {
	n, _ := rc.Do(context.Background(), rc.B().Llen().Key(queue).Build()).AsInt64()
	return int(n)
}

func ExampleMutex_TryLock() {
	rc, _ := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	defer rc.Close()
	c, _ := interlock.New(rc)
	defer c.Close()
	ctx := context.Background()
	m := fairlock.New(c, "example:report")

	other := interlock.WithOwner(ctx, interlock.NewOwnerID())
	_ = m.Lock(other)

	// A single attempt: never queues.
	ok, err := m.TryLock(ctx, 0, 10*time.Second)
	fmt.Println("acquired:", ok, err)
	// Wait at most 100ms in the queue; leave it when that runs out.
	ok, err = m.TryLock(ctx, 100*time.Millisecond, 10*time.Second)
	fmt.Println("acquired:", ok, err, "still queued:", queued(rc, "redisson_lock_queue:{example:report}"))

	_ = m.Unlock(other)
	ok, _ = m.TryLock(ctx, 0, 10*time.Second)
	fmt.Println("acquired:", ok)
	_ = m.Unlock(ctx)
	// Output:
	// acquired: false <nil>
	// acquired: false <nil> still queued: 0
	// acquired: true
}

// A lock whose lease ran out is not held any more: Unlock says so (Redisson
// reports success here), and still wakes the next waiter.
func ExampleMutex_Unlock_expired() {
	rc, _ := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	defer rc.Close()
	c, _ := interlock.New(rc)
	defer c.Close()
	ctx := context.Background()
	m := fairlock.New(c, "example:expired")

	_ = m.LockLease(ctx, 50*time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	err := m.Unlock(ctx)
	fmt.Println(errors.Is(err, interlock.ErrNotHeld))
	// Output:
	// true
}

func ExampleWithWaitTimeout() {
	rc, _ := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	defer rc.Close()
	c, _ := interlock.New(rc)
	defer c.Close()
	ctx := context.Background()

	// Waiters of this lock keep their place 30s past their expected turn;
	// a crashed waiter blocks the queue at most that long.
	m := fairlock.New(c, "example:dispatch", fairlock.WithWaitTimeout(30*time.Second))
	if err := m.Lock(ctx); err != nil {
		panic(err)
	}
	fmt.Println(m.Unlock(ctx))

	bad := fairlock.New(c, "example:dispatch", fairlock.WithWaitTimeout(0))
	fmt.Println(bad.Lock(ctx))
	// Output:
	// <nil>
	// fairlock: acquire example:dispatch: interlock: invalid argument: wait timeout 0s must be at least 1ms
}
