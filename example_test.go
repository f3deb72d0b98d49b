package interlock_test

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/rlock"
)

// In these examples addr is the address of a Redis server.

// A handler takes a lock and hands the job, lock and all, to a worker
// goroutine, which releases it when the job is done.
func ExampleLock() {
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

	m := rlock.New(c, "example:orders:7")
	h, err := interlock.Lock(ctx, m) // held by this goroutine, as m.Lock would
	if err != nil {
		panic(err)
	}

	done := make(chan error)
	go func() { // the worker
		work := h.Guard(ctx) // ends, cause interlock.ErrLockLost, if the lock is lost
		fmt.Println("working, lock held:", work.Err() == nil)
		done <- h.Unlock(ctx) // releases the handler's hold
	}()
	fmt.Println("released by the worker:", <-done)
	locked, _ := m.IsLocked(ctx)
	fmt.Println("locked:", locked)
	// Output:
	// working, lock held: true
	// released by the worker: <nil>
	// locked: false
}
