package rwlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/rwlock"
)

// In these examples addr is the address of a Redis server.

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

	// Three owners; think: three processes.
	alice := interlock.WithOwner(ctx, interlock.NewOwnerID())
	bob := interlock.WithOwner(ctx, interlock.NewOwnerID())
	carol := interlock.WithOwner(ctx, interlock.NewOwnerID())

	rw := rwlock.New(c, "example:doc:9")
	_ = rw.Read().Lock(alice) // readers share the lock
	_ = rw.Read().Lock(bob)
	ok, _ := rw.Write().TryLock(carol, 100*time.Millisecond, 0)
	fmt.Println("carol writes while two read:", ok)

	_ = rw.Read().Unlock(alice)
	_ = rw.Read().Unlock(bob) // the last reader wakes a waiting writer
	ok, _ = rw.Write().TryLock(carol, 100*time.Millisecond, 0)
	fmt.Println("carol writes when they are done:", ok)
	ok, _ = rw.Read().TryLock(alice, 0, 0)
	fmt.Println("alice reads while carol writes:", ok)
	_ = rw.Write().Unlock(carol) // wakes every waiter
	// Output:
	// carol writes while two read: false
	// carol writes when they are done: true
	// alice reads while carol writes: false
}

func ExampleWriteLock_Unlock_downgrade() {
	rc, _ := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	defer rc.Close()
	c, _ := interlock.New(rc)
	defer c.Close()
	ctx := context.Background()
	rw := rwlock.New(c, "example:downgrade")

	_ = rw.Write().Lock(ctx)
	// ... write ...
	_ = rw.Read().Lock(ctx)    // the writer may also read
	_ = rw.Write().Unlock(ctx) // a downgrade: still reading, no writer got in
	w, _ := rw.Write().IsLocked(ctx)
	r, _ := rw.Read().IsLocked(ctx)
	fmt.Println("write locked:", w, "read locked:", r)
	_ = rw.Read().Unlock(ctx)
	// Output:
	// write locked: false read locked: true
}

func ExampleWriteLock_Lock_upgrade() {
	rc, _ := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	defer rc.Close()
	c, _ := interlock.New(rc)
	defer c.Close()
	ctx := context.Background()
	rw := rwlock.New(c, "example:upgrade")

	_ = rw.Read().Lock(ctx)
	// A reader cannot become the writer: it would wait for itself.
	err := rw.Write().Lock(ctx)
	fmt.Println(errors.Is(err, rwlock.ErrUpgrade))
	_ = rw.Read().Unlock(ctx)
	fmt.Println(rw.Write().Lock(ctx)) // release the read lock first
	_ = rw.Write().Unlock(ctx)
	// Output:
	// true
	// <nil>
}

func ExampleReadLock_Guard() {
	rc, _ := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	defer rc.Close()
	c, _ := interlock.New(rc, interlock.WithWatchdogTimeout(300*time.Millisecond))
	defer c.Close()
	ctx := context.Background()
	rw := rwlock.New(c, "example:read-guard")
	_ = rw.Read().Lock(ctx)

	work := rw.Read().Guard(ctx) // cancelled if the read hold is lost
	// Someone deletes the lock behind our back.
	_ = rc.Do(ctx, rc.B().Del().Key("example:read-guard").Build()).Error()

	<-work.Done() // at the next renewal, within 100ms here
	fmt.Println(errors.Is(context.Cause(work), interlock.ErrLockLost))
	fmt.Println(errors.Is(rw.Read().Unlock(ctx), interlock.ErrNotHeld))
	// Output:
	// true
	// true
}

// Readers share the lock; a writer on a goroutine of its own waits until
// the last of them has left, as the package documentation shows.
func ExampleMutex_readersAndWriter() {
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
	rw := rwlock.New(c, "example:doc:9")

	in, leave, out := make(chan error), make(chan struct{}), make(chan error)
	for range 2 { // two readers, each on its own goroutine
		go func() {
			if err := rw.Read().Lock(ctx); err != nil {
				in <- err
				return
			}
			in <- nil
			<-leave // ... read ...
			out <- rw.Read().Unlock(ctx)
		}()
	}
	fmt.Println("readers in:", <-in, <-in)

	wrote := make(chan string)
	go func() { // the writer
		if err := rw.Write().Lock(ctx); err != nil {
			wrote <- err.Error()
			return
		}
		readers, _ := rw.Read().IsLocked(ctx) // ... write ...
		err := rw.Write().Unlock(ctx)
		wrote <- fmt.Sprintf("writer was in alone: %v, out: %v", !readers, err)
	}()
	select {
	case s := <-wrote:
		fmt.Println("the writer did not wait:", s)
	case <-time.After(200 * time.Millisecond):
		fmt.Println("writer waits for the readers")
	}

	close(leave)
	fmt.Println("readers out:", <-out, <-out)
	fmt.Println(<-wrote)
	// Output:
	// readers in: <nil> <nil>
	// writer waits for the readers
	// readers out: <nil> <nil>
	// writer was in alone: true, out: <nil>
}
