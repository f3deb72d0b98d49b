package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/rlock"
)

// In these examples addr is the address of a Redis server.

func ExampleMutex_Lock() {
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

	m := rlock.New(c, "example:orders:42")
	if err := m.Lock(ctx); err != nil { // waits; the watchdog keeps the lock
		panic(err)
	}
	// A nested call on the same goroutine re-enters.
	if err := m.Lock(ctx); err != nil {
		panic(err)
	}
	n, _ := m.HoldCount(ctx)
	fmt.Println("holds:", n)
	_ = m.Unlock(ctx)
	_ = m.Unlock(ctx)
	locked, _ := m.IsLocked(ctx)
	fmt.Println("locked:", locked)
	// Output:
	// holds: 2
	// locked: false
}

func ExampleMutex_TryLock() {
	rc, _ := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	defer rc.Close()
	c, _ := interlock.New(rc)
	defer c.Close()
	ctx := context.Background()
	m := rlock.New(c, "example:report")

	// Another owner (think: another process) holds the lock.
	other := interlock.WithOwner(ctx, interlock.NewOwnerID())
	_ = m.Lock(other)

	// Wait at most 100ms; hold for at most 10s if acquired.
	ok, err := m.TryLock(ctx, 100*time.Millisecond, 10*time.Second)
	fmt.Println("acquired:", ok, err)

	_ = m.Unlock(other)
	ok, _ = m.TryLock(ctx, 0, 10*time.Second) // a single attempt
	fmt.Println("acquired:", ok)
	_ = m.Unlock(ctx)
	// Output:
	// acquired: false <nil>
	// acquired: true
}

func ExampleMutex_Guard() {
	rc, _ := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	defer rc.Close()
	c, _ := interlock.New(rc, interlock.WithWatchdogTimeout(300*time.Millisecond))
	defer c.Close()
	ctx := context.Background()
	m := rlock.New(c, "example:guarded")
	_ = m.Lock(ctx)

	work := m.Guard(ctx) // cancelled if the hold is lost
	// Someone deletes the lock behind our back.
	_ = rc.Do(ctx, rc.B().Del().Key("example:guarded").Build()).Error()

	<-work.Done() // at the next renewal, within 100ms here
	fmt.Println(errors.Is(context.Cause(work), interlock.ErrLockLost))
	fmt.Println(errors.Is(m.Unlock(ctx), interlock.ErrNotHeld))
	// Output:
	// true
	// true
}

func ExampleMutex_Unlock_anotherGoroutine() {
	rc, _ := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	defer rc.Close()
	c, _ := interlock.New(rc)
	defer c.Close()

	// Work that hops goroutines carries an explicit owner.
	ctx := interlock.WithOwner(context.Background(), interlock.NewOwnerID())
	m := rlock.New(c, "example:handoff")
	_ = m.Lock(ctx)
	done := make(chan error)
	go func() { done <- m.Unlock(ctx) }()
	fmt.Println(<-done)
	// Output:
	// <nil>
}
