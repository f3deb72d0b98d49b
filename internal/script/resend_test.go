package script

import (
	"context"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/redistest"
)

// Commands that rueidis resends, sent while connections keep breaking, are
// never recycled while a failed connection's writer still reads them. With
// the race detector, a resendable command that is not pinned fails this
// test within a second or two.
func TestResendableSurvivesBrokenConnections(t *testing.T) {
	srv := redistest.Standalone(t)
	addr := resettingProxy(t, srv.Addr())
	// The proxy may reset the client's first connection too: try again.
	var c rueidis.Client
	require.Eventually(t, func() bool {
		var err error
		c, err = rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
		return err == nil
	}, 10*time.Second, time.Millisecond, "no client through the resetting proxy")
	defer c.Close()

	renew := lookup("renew")
	require.True(t, renew.Retryable())
	deadline := time.Now().Add(3 * time.Second)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				cmds := make(rueidis.Commands, 0, 300)
				for i := range 150 {
					key := "resend:" + strconv.Itoa(i)
					cmds = append(cmds,
						renew.EvalSHA(c, []string{key}, []string{"30000", "owner"}),
						Resendable(c.B().Get().Key(key).Build()))
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				c.DoMulti(ctx, cmds...)
				cancel()
			}
		})
	}
	wg.Wait()
}

// lookup returns the engine's script named name.
func lookup(name string) *Script {
	for _, s := range all {
		if s.Name() == name {
			return s
		}
	}
	panic("no script " + name)
}

// resettingProxy forwards to target and resets each connection after a
// few milliseconds, so that connections break while commands are written.
func resettingProxy(t *testing.T, target string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				client.Close()
				continue
			}
			wg.Go(func() { io.Copy(server, client) })
			wg.Go(func() { io.Copy(client, server) })
			wg.Go(func() {
				<-time.After(time.Duration(rand.IntN(30)) * time.Millisecond)
				client.(*net.TCPConn).SetLinger(0)
				client.Close()
				server.Close()
			})
		}
	})
	return ln.Addr().String()
}
