package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/semaphore"
)

// In these examples addr is the address of a Redis server.

// At most two uploads run at once, across every process that opens the
// semaphore, Go or Java.
func ExampleSemaphore() {
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

	s := semaphore.New(c, "example:uploads")
	defer s.Delete(ctx)
	ok, _ := s.TrySetPermits(ctx, 2) // false if someone set it up already
	fmt.Println("set up:", ok)

	if err := s.Acquire(ctx, 1); err != nil { // waits until a permit is free
		panic(err)
	}
	n, _ := s.Available(ctx)
	fmt.Println("free:", n)

	ok, _ = s.TryAcquire(ctx, 2, 0) // two more are not free: one attempt, no wait
	fmt.Println("took two more:", ok)

	_ = s.Release(ctx, 1)
	n, _ = s.Available(ctx)
	fmt.Println("free:", n)
	// Output:
	// set up: true
	// free: 1
	// took two more: false
	// free: 2
}

// A release wakes a waiter, here or in another process.
func ExampleSemaphore_Acquire() {
	rc, _ := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	defer rc.Close()
	c, _ := interlock.New(rc)
	defer c.Close()
	ctx := context.Background()
	s := semaphore.New(c, "example:slots")
	defer s.Delete(ctx)
	_, _ = s.TrySetPermits(ctx, 1)
	_ = s.Acquire(ctx, 1) // the only permit

	got := make(chan error)
	go func() { got <- s.Acquire(ctx, 1) }() // waits
	select {
	case <-got:
		fmt.Println("acquired too early")
	case <-time.After(100 * time.Millisecond):
		fmt.Println("waiting")
	}
	_ = s.Release(ctx, 1) // announces one permit: wakes one waiter
	fmt.Println("acquired:", <-got)
	_ = s.Release(ctx, 1)
	// Output:
	// waiting
	// acquired: <nil>
}

// Permits have no owner: anyone may release, even into a semaphore that
// does not exist yet. ReleaseIfExists does not create one.
func ExampleSemaphore_ReleaseIfExists() {
	rc, _ := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	defer rc.Close()
	c, _ := interlock.New(rc)
	defer c.Close()
	ctx := context.Background()
	s := semaphore.New(c, "example:unset")
	defer s.Delete(ctx)

	ok, _ := s.ReleaseIfExists(ctx, 1)
	fmt.Println("released:", ok)
	_ = s.Release(ctx, 3) // nobody acquired these; the semaphore now exists
	n, _ := s.Available(ctx)
	fmt.Println("free:", n)
	// Output:
	// released: false
	// free: 3
}

// A permit acquired with lease 0 is kept by the watchdog for as long as
// its holder runs, and comes back by itself if the holder dies.
func ExampleExpirable() {
	rc, _ := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	defer rc.Close()
	c, _ := interlock.New(rc)
	defer c.Close()
	ctx := context.Background()

	e := semaphore.NewExpirable(c, "example:workers")
	defer e.Delete(ctx)
	_, _ = e.TrySetPermits(ctx, 1)

	ids, err := e.Acquire(ctx, 1, 0) // lease 0: renewed until released
	if err != nil {
		panic(err)
	}
	fmt.Println("id:", len(ids[0].String()), "hex characters")
	work := e.Guard(ctx, ids...) // cancelled if the permit is lost

	_, ok, _ := e.TryAcquire(ctx, 1, 0, time.Minute)
	fmt.Println("another permit:", ok)

	_ = e.Release(ctx, ids...)
	<-work.Done()
	fmt.Println("guard:", context.Cause(work)) // released, not lost
	n, _ := e.Available(ctx)
	fmt.Println("free:", n)
	// Output:
	// id: 32 hex characters
	// another permit: false
	// guard: context canceled
	// free: 1
}

// A permit that disappears (here deleted by hand; a crash of Redis or a
// lease that ran out do the same) ends its Guard.
func ExampleExpirable_Guard() {
	rc, _ := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	defer rc.Close()
	c, _ := interlock.New(rc, interlock.WithWatchdogTimeout(300*time.Millisecond))
	defer c.Close()
	ctx := context.Background()
	e := semaphore.NewExpirable(c, "example:guarded")
	defer e.Delete(ctx)
	_, _ = e.TrySetPermits(ctx, 1)
	ids, _ := e.Acquire(ctx, 1, 0)
	work := e.Guard(ctx, ids...)

	_ = rc.Do(ctx, rc.B().Del().Key("{example:guarded}:timeout").Build()).Error()

	<-work.Done() // at the next renewal, within 100ms here
	fmt.Println(errors.Is(context.Cause(work), semaphore.ErrPermitLost))
	fmt.Println(errors.Is(e.Release(ctx, ids...), semaphore.ErrUnknownPermit))
	// Output:
	// true
	// true
}

// Ids print as Redisson prints them, and parse from either case.
func ExampleParsePermitID() {
	id, err := semaphore.ParsePermitID("F931C493916289A8B33EEFA41CFB0CE3")
	fmt.Println(id, err)
	_, err = semaphore.ParsePermitID("f931c4")
	fmt.Println(errors.Is(err, interlock.ErrInvalid))
	// Output:
	// f931c493916289a8b33eefa41cfb0ce3 <nil>
	// true
}
