package faultproxy

import (
	"context"
	"testing"

	"github.com/redis/rueidis"
)

// BenchmarkPing measures what the proxy adds to a round trip, and to a
// pipeline of 100 commands, against the same server without it.
func BenchmarkPing(b *testing.B) {
	p, err := Start(srv.Addr())
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	for _, tc := range []struct{ name, addr string }{{"direct", srv.Addr()}, {"proxy", p.Addr()}} {
		c, err := rueidis.NewClient(rueidis.ClientOption{
			InitAddress: []string{tc.addr}, ForceSingleClient: true, PipelineMultiplex: -1,
		})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		b.Run(tc.name+"/one", func(b *testing.B) {
			for b.Loop() {
				if err := c.Do(ctx, c.B().Ping().Build()).Error(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/pipeline100", func(b *testing.B) {
			for b.Loop() {
				cmds := make(rueidis.Commands, 100)
				for i := range cmds {
					cmds[i] = c.B().Ping().Build()
				}
				for _, r := range c.DoMulti(ctx, cmds...) {
					if err := r.Error(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		c.Close()
	}
}
