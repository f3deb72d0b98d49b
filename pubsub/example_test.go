package pubsub_test

import (
	"context"
	"log"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/pubsub"
)

// Workers wait for "jobs:ready" instead of polling; a producer sends
// PUBLISH jobs:ready 1 to wake them all, or 0 to wake one.
func ExampleHub() {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:6379"}})
	if err != nil {
		log.Fatal(err)
	}
	defer rc.Close()
	hub, err := pubsub.NewHub(rc)
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()

	ctx := context.Background()
	sub, err := hub.Subscribe(ctx, "jobs:ready", false)
	if err != nil {
		log.Fatal(err)
	}
	defer sub.Close()
	for !jobsQueued(ctx, rc) {
		if err := sub.Wait(ctx, 5*time.Second); err != nil { // the timeout bounds a lost message
			log.Fatal(err)
		}
	}
}

func jobsQueued(ctx context.Context, rc rueidis.Client) bool {
	n, err := rc.Do(ctx, rc.B().Llen().Key("jobs").Build()).AsInt64()
	return err == nil && n > 0
}
