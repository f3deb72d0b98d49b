package lua_test

import (
	"context"
	"fmt"
	"log"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/lua"
)

// An operator's audit: every script interlock may run, under the SHA1 that
// EVALSHA names in MONITOR and the slow log.
func ExampleAll() {
	for _, s := range lua.All() {
		fmt.Printf("%s  %s.lua\n", s.SHA1(), s.Name())
	}
}

// Loading every script ahead of the first call, for instance after a
// failover, so that no call has to fall back to EVAL.
func ExamplePreload() {
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:6379"}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if err := lua.Preload(context.Background(), c); err != nil {
		log.Fatal(err)
	}
}
