package multilock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/multilock"
	"github.com/interlock-go/interlock/rlock"
)

// In this example addr is the address of a Redis server.

func ExampleNew() {
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

	// A transfer holds both accounts, in sorted order, as every process
	// that takes them together must.
	from, to := rlock.New(c, "example:acct:1"), fairlock.New(c, "example:acct:2")
	both := multilock.New(from, to)
	if err := both.Lock(ctx); err != nil {
		panic(err)
	}
	work := both.Guard(ctx) // ends if either account's lock is lost

	// Someone who needs only one of them waits.
	other := interlock.WithOwner(ctx, 2)
	ok, _ := to.TryLock(other, 100*time.Millisecond, 0)
	fmt.Println("account 2 alone, while the transfer runs:", ok)

	if err := both.Unlock(ctx); err != nil {
		panic(err)
	}
	<-work.Done()
	fmt.Println("guard ended with:", context.Cause(work))
	// Output:
	// account 2 alone, while the transfer runs: false
	// guard ended with: context canceled
}
