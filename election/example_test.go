package election_test

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/election"
)

// In these examples addr is the address of a Redis server.

// Two candidates: one leads, the other waits until it resigns, then leads
// with the next term's token.
func ExampleElection_Campaign() {
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

	a := election.New(c, "example:scheduler")
	b := election.New(c, "example:scheduler")
	term, err := a.Campaign(ctx, "host-a:8080") // waits until a leads
	if err != nil {
		panic(err)
	}
	leader, _ := b.Leader(ctx)
	fmt.Println("leader:", leader.Value, leader.Token == term.Token())

	next := make(chan *election.Leadership)
	go func() {
		t, _ := b.Campaign(ctx, "host-b:8080") // waits for a
		next <- t
	}()
	// a works while term.Context() lives, passing term.Token() to what it
	// writes, then steps down.
	_ = a.Resign(ctx)
	fmt.Println("a's term ended:", term.Context().Err() != nil)
	bTerm := <-next
	fmt.Println("b leads, with a newer token:", bTerm.Token() > term.Token())
	_ = b.Resign(ctx)
	// Output:
	// leader: host-a:8080 true
	// a's term ended: true
	// b leads, with a newer token: true
}

// An observer sees each new leader, Go or Java.
func ExampleElection_Observe() {
	rc, _ := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	defer rc.Close()
	c, _ := interlock.New(rc)
	defer c.Close()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	e := election.New(c, "example:reporter")
	seen := e.Observe(ctx)
	term, _ := e.Campaign(ctx, "host-a:8080")
	leader := <-seen
	fmt.Println("observed:", leader.Value, leader.Token == term.Token())
	_ = e.Resign(ctx)
	// Output:
	// observed: host-a:8080 true
}
