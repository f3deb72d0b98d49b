// Command docker is the Docker helper of internal/redistest: it starts,
// freezes, kills and removes server containers through testcontainers-go,
// on behalf of a test process that talks to it over stdin and stdout
// (internal/dockerwire). It is a module of its own so that
// testcontainers-go, the Docker client and their dependencies stay out of
// the library's module graph.
//
// The networking rule: every container uses the host network, and its
// server binds 127.0.0.1 on a free port. No Docker network is ever
// created, and nothing is ever pulled. Two settings of testcontainers-go
// make that hold:
//
//   - The runtime provider "hostnet" (registered in main, selected by
//     TESTCONTAINERS_PROVIDER) makes "host" the default network and
//     127.0.0.1 the published host. Without it testcontainers-go creates a
//     bridge network (reaper_default) on a daemon that has none, and,
//     believing it runs in a container (this machine has /.dockerenv),
//     dials the default-route gateway instead of 127.0.0.1.
//   - TESTCONTAINERS_RYUK_DISABLED=true, in exactly that spelling: the Ryuk
//     reaper is an image that would be pulled. The helper removes its
//     containers itself when its stdin closes, and those of a helper that
//     died are removed by the next one (OpReady).
//
// Both variables are set before testcontainers-go reads its configuration,
// which it does once per process.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"

	"github.com/interlock-go/interlock/internal/dockerwire"
)

// hostNetProvider names the runtime provider registered by main.
const hostNetProvider = "hostnet"

// defaultTimeout bounds a Request that names no timeout.
const defaultTimeout = 30 * time.Second

// hostNet is the runtime provider of the helper: the default Docker
// discovery, with "host" as the default network and 127.0.0.1 as the
// address of every container.
type hostNet struct{}

func (hostNet) Initialize(context.Context) (testcontainers.RuntimeConfig, error) {
	return testcontainers.RuntimeConfig{DefaultBridgeNetwork: "host", PublishedHost: "127.0.0.1"}, nil
}

func main() {
	// Forced, not defaulted: the networking rule is not the caller's choice.
	os.Setenv("TESTCONTAINERS_PROVIDER", hostNetProvider)
	os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	// testcontainers-go's banner and progress lines say nothing a test
	// reads; errors come back in the replies.
	tclog.SetDefault(tclog.NewNoopLogger())
	h := &helper{ctrs: make(map[string]testcontainers.Container)}
	h.registerErr = testcontainers.RegisterProvider(hostNetProvider, func() testcontainers.RuntimeProvider {
		return hostNet{}
	})
	out := json.NewEncoder(os.Stdout)
	var outMu sync.Mutex
	var wg sync.WaitGroup
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<10), 16<<20)
	for in.Scan() {
		var req dockerwire.Request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintf(os.Stderr, "redistest docker helper: bad request %q: %v\n", in.Bytes(), err)
			continue
		}
		wg.Go(func() {
			timeout := defaultTimeout
			if req.TimeoutMillis > 0 {
				timeout = time.Duration(req.TimeoutMillis) * time.Millisecond
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			rep := h.serve(ctx, req)
			rep.ID = req.ID
			outMu.Lock()
			defer outMu.Unlock()
			if err := out.Encode(rep); err != nil {
				fmt.Fprintf(os.Stderr, "redistest docker helper: writing a reply: %v\n", err)
			}
		})
	}
	// The test process is gone, or done: nothing it started may stay.
	wg.Wait()
	h.removeAll()
}
