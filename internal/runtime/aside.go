package runtime

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/rueidis"
)

// aside is the connection a Client's background work goes on outside a
// cluster: the renewal rounds and the latch sweeps. rueidis sends a lone
// caller's command on the caller's goroutine (its synchronous mode) until
// a connection first carries two calls at once, and through a writer and a
// reader goroutine of its own from then on, for good. A round sent on the
// connection of the scripts (script.Ordered) while a caller waited there
// would switch it, and a Client used from one goroutine would then pay
// those goroutines' wake-ups on every command. So the rounds go on a
// connection of their own, dedicated from rueidis's pool, dialled when the
// Client first sends a script and again once broken; until it is there,
// they go on the client as before. On a cluster, where rueidis keeps one
// connection per node and a dedicated one serves a single slot, they go on
// the client.
type aside struct {
	rc  rueidis.Client
	own bool // not a cluster: the work gets a connection of its own
	// warmed: warm has run, so that the script path that calls it takes
	// mu only once.
	warmed atomic.Bool

	mu      sync.Mutex
	dc      rueidis.DedicatedClient // nil: none held
	dialing chan struct{}           // closed when the dial in flight returns; nil: none
	closed  bool
}

func newAside(rc rueidis.Client) *aside {
	return &aside{rc: rc, own: rc.Mode() != rueidis.ClientModeCluster}
}

// warm starts dialling the connection the first time it is called,
// unless it is not wanted; later dials are started by the calls that find
// it gone. It sends nothing and does not wait.
func (a *aside) warm() {
	if !a.own || a.warmed.Load() || a.warmed.Swap(true) {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.dialLocked()
}

func (a *aside) dialLocked() {
	if a.dc != nil || a.dialing != nil || a.closed {
		return
	}
	done := make(chan struct{})
	a.dialing = done
	go a.dial(done)
}

// dial dedicates a connection. rueidis's Dedicate cannot be interrupted;
// it returns within the client's dial timeout (while its pool of dedicated
// connections has room, as the pub/sub connections also need).
func (a *aside) dial(done chan struct{}) {
	defer close(done)
	dc, _ := a.rc.Dedicate()
	a.mu.Lock()
	a.dialing = nil
	if a.closed {
		a.mu.Unlock()
		dc.Close()
		return
	}
	a.dc = dc
	a.mu.Unlock()
}

// DoMulti sends cmds on the connection, or on the client while there is
// none. Where the connection failed or its server no longer takes writes
// (a failover), it is given up, and commands rueidis may resend go again
// on the client.
func (a *aside) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	dc := a.conn()
	if dc == nil {
		return a.rc.DoMulti(ctx, cmds...)
	}
	res := dc.DoMulti(ctx, cmds...)
	if ctx.Err() != nil || !failed(res) {
		return res
	}
	a.drop(dc)
	for _, c := range cmds {
		if !c.IsRetryable() {
			return res
		}
	}
	return a.rc.DoMulti(ctx, cmds...)
}

// conn returns the connection held, or nil after starting its dial.
func (a *aside) conn() rueidis.DedicatedClient {
	if !a.own {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dc == nil {
		a.dialLocked()
	}
	return a.dc
}

// failed reports whether a reply shows the connection unusable: no answer
// from the server, or its refusal of writes.
func failed(res []rueidis.RedisResult) bool {
	for _, r := range res {
		if r.NonRedisError() != nil {
			return true
		}
		if err, ok := rueidis.IsRedisErr(r.Error()); ok && strings.HasPrefix(err.Error(), "READONLY") {
			return true
		}
	}
	return false
}

// drop closes dc, unless it was given up already; the next call dials
// another. Closing, rather than giving it back to rueidis's pool, spares
// the pool's clean-up commands, which would wait on a server that does not
// answer.
func (a *aside) drop(dc rueidis.DedicatedClient) {
	a.mu.Lock()
	if a.dc != dc {
		a.mu.Unlock()
		return
	}
	a.dc = nil
	a.mu.Unlock()
	dc.Close()
}

// close waits for a dial in flight and closes the connection. Calls after
// it go on the client.
func (a *aside) close() {
	a.mu.Lock()
	a.closed = true
	dialing := a.dialing
	a.mu.Unlock()
	if dialing != nil {
		<-dialing
	}
	a.mu.Lock()
	dc := a.dc
	a.dc = nil
	a.mu.Unlock()
	if dc != nil {
		dc.Close()
	}
}
