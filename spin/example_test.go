package spin_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/spin"
)

// In this example addr is the address of a Redis server.

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

	m := spin.New(c, "example:spin:report", spin.WithConstantBackoff(64*time.Millisecond))
	if err := m.Lock(ctx); err != nil {
		panic(err)
	}
	// Another owner polls until its wait runs out: no subscription.
	other := interlock.WithOwner(ctx, 2)
	ok, _ := m.TryLock(other, 200*time.Millisecond, 0)
	fmt.Println("second owner got it:", ok)
	fmt.Println("subscriptions:", c.Stats().Channels)
	if err := m.Unlock(ctx); err != nil {
		panic(err)
	}
	// Output:
	// second owner got it: false
	// subscriptions: 0
}
