package faultproxy

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"
)

// A server without WAIT, as some managed Redis services are: the error
// takes the rejected command's place in the pipeline.
func ExampleProxy_Reject() {
	p, err := Start(srv.Addr()) // srv: the redis-server of these tests
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	if err := p.Reject("WAIT", "ERR unknown command 'WAIT'"); err != nil {
		fmt.Println(err)
		return
	}
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{p.Addr()}, ForceSingleClient: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	for _, r := range c.DoMulti(context.Background(),
		c.B().Echo().Message("before").Build(),
		c.B().Wait().Numreplicas(1).Timeout(100).Build(),
		c.B().Echo().Message("after").Build(),
	) {
		if v, err := r.ToString(); err != nil {
			fmt.Println("error:", err)
		} else {
			fmt.Println(v)
		}
	}
	// Output:
	// before
	// error: unknown command 'WAIT'
	// after
}

// Losing the reply to one run of a script: the script runs, the caller
// gets a connection error, and the next call works on a new connection.
func ExampleEvalSHA() {
	p, err := Start(srv.Addr())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{p.Addr()}, ForceSingleClient: true, DisableRetry: true, PipelineMultiplex: -1,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	ctx := context.Background()
	const src = "return redis.call('INCR', KEYS[1])"
	const key = "faultproxy:ExampleEvalSHA"
	sha, _ := c.Do(ctx, c.B().ScriptLoad().Script(src).Build()).ToString()
	script := rueidis.NewLuaScript(src)
	defer c.Do(ctx, c.B().Del().Key(key).Build())

	p.DropReplyTo(EvalSHA(sha), 1)
	_, err = script.Exec(ctx, c, []string{key}, nil).AsInt64()
	fmt.Println("lost reply:", err != nil)
	for range 3 { // the first command after may still meet the ended connection
		var n int64
		if n, err = script.Exec(ctx, c, []string{key}, nil).AsInt64(); err == nil {
			fmt.Println("next run returns", n)
			break
		}
	}
	fmt.Println("replies dropped:", p.Stats().RepliesDropped)
	// Output:
	// lost reply: true
	// next run returns 2
	// replies dropped: 1
}
