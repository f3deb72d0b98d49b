package nonreentrant_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/nonreentrant"
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

	m := nonreentrant.New(c, "example:nonreentrant:batch")
	if err := m.Lock(ctx); err != nil {
		panic(err)
	}
	// A nested call that locks again is caught, not counted.
	err = m.Lock(ctx)
	fmt.Println("re-entry refused:", errors.Is(err, nonreentrant.ErrReentered))
	n, _ := m.HoldCount(ctx)
	fmt.Println("holds:", n)
	if err := m.Unlock(ctx); err != nil {
		panic(err)
	}
	// Output:
	// re-entry refused: true
	// holds: 1
}
