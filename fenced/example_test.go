package fenced_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fenced"
)

// In these examples addr is the address of a Redis server.

func ExampleMutex_LockToken() {
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

	m := fenced.New(c, "example:ledger")
	token, err := m.LockToken(ctx) // waits; the watchdog keeps the lock
	if err != nil {
		panic(err)
	}
	// Send the token with every write, and let the resource check it.
	fence := fenced.NewRedisFence(rc, "{example:ledger}:fence")
	err = fence.Set(ctx, token, "{example:ledger}:balance", "100")
	fmt.Println("written:", err == nil)

	// Every acquisition takes a newer token, a re-entry too.
	again, _ := m.LockToken(ctx)
	fmt.Println("re-entry token is the next one:", again == token+1)
	_ = m.Unlock(ctx)
	_ = m.Unlock(ctx)
	// Output:
	// written: true
	// re-entry token is the next one: true
}

// A holder stalls past its lease, and its late write is refused.
func ExampleRedisFence() {
	rc, _ := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	defer rc.Close()
	c, _ := interlock.New(rc)
	defer c.Close()
	ctx := context.Background()
	const status = "{example:invoice:7}:status"
	m := fenced.New(c, "example:invoice:7")
	fence := fenced.NewRedisFence(rc, "{example:invoice:7}:fence")
	a := interlock.WithOwner(ctx, interlock.NewOwnerID())
	b := interlock.WithOwner(ctx, interlock.NewOwnerID())

	tokenA, _ := m.LockLeaseToken(a, 100*time.Millisecond)
	// A stalls (a GC pause, say) for longer than its lease. The lock
	// expires, and B takes it and writes.
	tokenB, _ := m.LockToken(b)
	err := fence.Set(ctx, tokenB, status, "paid by B")
	fmt.Println("B's write:", err)

	// A runs again and finishes its write, with its old token.
	err = fence.Set(ctx, tokenA, status, "paid by A")
	fmt.Println("A's write refused:", errors.Is(err, fenced.ErrStale))

	v, _ := rc.Do(ctx, rc.B().Get().Key(status).Build()).ToString()
	fmt.Println(v)
	_ = m.Unlock(b)
	// Output:
	// B's write: <nil>
	// A's write refused: true
	// paid by B
}

// A resource inside one process checks tokens with a Fence.
func ExampleFence_Do() {
	var (
		fence   fenced.Fence
		balance int
	)
	write := func(token uint64, v int) error {
		return fence.Do(token, func() error {
			balance = v
			return nil
		})
	}
	fmt.Println(write(7, 100))
	fmt.Println(write(6, 50)) // a holder that lost the lock, writing late
	fmt.Println(balance)
	// Output:
	// <nil>
	// fenced: fence: fenced: stale fencing token: token 6, but 7 was admitted
	// 100
}
