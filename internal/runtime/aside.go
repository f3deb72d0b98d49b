package runtime

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/route"
)

// aside is where a Client's background work goes: the renewal rounds and
// the latch sweeps. rueidis sends a lone caller's command on the caller's
// goroutine (its synchronous mode) until a connection first carries two
// calls at once, and through a writer and a reader goroutine of its own
// from then on, for good. A round or a sweep sent on the connection of the
// scripts while a caller waited there would switch it, and a Client used
// from one goroutine would then pay those goroutines' wake-ups on every
// command. So they go on connections of their own, dedicated from
// rueidis's pools and dialled when the Client first sends a script: one
// outside a cluster; on a cluster one per master, from that node's pool
// (Client.Nodes), the masters and their slots read with CLUSTER SLOTS.
// A command goes on the client while its connection is being dialled,
// when no connection serves its slot, and again after its connection
// failed (for the commands rueidis may resend) or a MOVED reply sent it
// elsewhere.
type aside struct {
	rc      rueidis.Client
	cluster bool
	routes  *route.Table // on a cluster, the master of each slot (shared with the Hub)
	stop    context.Context
	quit    context.CancelFunc
	// warmed: warm has run, so that the script path that calls it takes
	// mu only once.
	warmed atomic.Bool

	mu      sync.Mutex
	conns   map[string]rueidis.DedicatedClient // by master address; "" outside a cluster
	dialing map[string]bool
	learnt  time.Time      // when the topology was last read
	dials   sync.WaitGroup // dials and topology reads in flight
	closed  bool
}

// relearnEvery bounds how often a cluster's topology is read again after
// a connection failed or a MOVED reply came.
const relearnEvery = time.Second

func newAside(rc rueidis.Client, routes *route.Table) *aside {
	stop, quit := context.WithCancel(context.Background())
	return &aside{rc: rc, cluster: rc.Mode() == rueidis.ClientModeCluster, routes: routes, stop: stop, quit: quit,
		conns: make(map[string]rueidis.DedicatedClient), dialing: make(map[string]bool)}
}

// warm starts dialling the first time it is called; later dials are
// started by the calls that find a connection gone. It sends nothing and
// does not wait.
func (a *aside) warm() {
	if a.warmed.Load() || a.warmed.Swap(true) {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cluster {
		a.learnLocked()
	} else {
		a.dialLocked("")
	}
}

// dialLocked dedicates a connection to addr on a goroutine, unless one is
// held or being dialled. a.mu must be held.
func (a *aside) dialLocked(addr string) {
	if a.closed || a.conns[addr] != nil || a.dialing[addr] {
		return
	}
	a.dialing[addr] = true
	a.dials.Add(1)
	go a.dial(addr)
}

// dial dedicates a connection. rueidis's Dedicate cannot be interrupted;
// it returns within the client's dial timeout (while its pool of dedicated
// connections has room, as the pub/sub connections also need).
func (a *aside) dial(addr string) {
	defer a.dials.Done()
	dc := a.dedicate(addr)
	a.mu.Lock()
	delete(a.dialing, addr)
	if a.closed || dc == nil {
		a.mu.Unlock()
		if dc != nil {
			dc.Close()
		}
		return
	}
	a.conns[addr] = dc
	a.mu.Unlock()
}

// dedicate dedicates a connection to the server, or to the cluster node
// at addr; nil when the client knows no such node.
func (a *aside) dedicate(addr string) rueidis.DedicatedClient {
	c := a.rc
	if a.cluster {
		if c = a.rc.Nodes()[addr]; c == nil {
			return nil
		}
	}
	dc, _ := c.Dedicate()
	return dc
}

// learnLocked reads the cluster's topology on a goroutine and dials a
// connection to every master, at most once per relearnEvery. a.mu must be
// held.
func (a *aside) learnLocked() {
	if a.closed || time.Since(a.learnt) < relearnEvery {
		return
	}
	a.learnt = time.Now()
	a.dials.Add(1)
	go func() {
		defer a.dials.Done()
		if err := a.routes.Refresh(a.stop, a.routes.Generation(), a.readTopology); err != nil {
			return
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		for _, addr := range a.routes.Masters() {
			a.dialLocked(addr)
		}
	}()
}

// learnTimeout bounds one node's answer to CLUSTER SLOTS.
const learnTimeout = 5 * time.Second

// readTopology reads CLUSTER SLOTS from the nodes in turn, each time on a
// connection dedicated for it: never on one that carries scripts.
func (a *aside) readTopology(ctx context.Context) ([]route.Range, error) {
	return route.ReadAny(ctx, a.rc.Nodes(), learnTimeout, func(n rueidis.Client) (rueidis.CoreClient, func()) {
		return n.Dedicate()
	})
}

// DoMulti sends cmds on the connections aside, as the class comment says.
func (a *aside) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	if a.cluster {
		return a.doCluster(ctx, cmds)
	}
	dc := a.conn("")
	if dc == nil {
		return a.rc.DoMulti(ctx, cmds...)
	}
	res := dc.DoMulti(ctx, cmds...)
	if ctx.Err() != nil || !failed(res) {
		return res
	}
	a.drop("", dc)
	for _, c := range cmds {
		if !c.IsRetryable() {
			return res
		}
	}
	return a.rc.DoMulti(ctx, cmds...)
}

// nodeBatch is the commands of one DoMulti that go on one master's
// connection: their positions in it.
type nodeBatch struct {
	addr string
	dc   rueidis.DedicatedClient
	at   []int
}

// doCluster groups cmds by master and sends each group on that master's
// connection, the groups at once; the commands no connection serves go on
// the client, with those that a failed connection or a MOVED reply sent
// back.
func (a *aside) doCluster(ctx context.Context, cmds []rueidis.Completed) []rueidis.RedisResult {
	var batches []nodeBatch
	var rest []int
	unknown := false
	for i, c := range cmds {
		addr, _, ok := a.routes.Master(c.Slot())
		var dc rueidis.DedicatedClient
		if ok {
			dc = a.conn(addr)
		}
		if dc == nil {
			unknown = unknown || !ok
			rest = append(rest, i)
			continue
		}
		j := 0
		for j < len(batches) && batches[j].addr != addr {
			j++
		}
		if j == len(batches) {
			batches = append(batches, nodeBatch{addr: addr, dc: dc})
		}
		batches[j].at = append(batches[j].at, i)
		// Pinned, so that rueidis does not recycle it once answered: a
		// MOVED answer sends it again on the client.
		cmds[i] = cmds[i].Pin()
	}
	if unknown {
		a.mu.Lock()
		a.learnLocked()
		a.mu.Unlock()
	}
	if len(batches) == 0 {
		return a.rc.DoMulti(ctx, cmds...)
	}
	res := make([]rueidis.RedisResult, len(cmds))
	back := make([][]int, len(batches)) // per batch, the positions to send again on the client
	var wg sync.WaitGroup
	for j := range batches {
		if j == len(batches)-1 {
			back[j] = a.sendBatch(ctx, &batches[j], cmds, res)
			break
		}
		wg.Go(func() { back[j] = a.sendBatch(ctx, &batches[j], cmds, res) })
	}
	wg.Wait()
	for _, b := range back {
		rest = append(rest, b...)
	}
	if len(rest) > 0 {
		sub := make([]rueidis.Completed, len(rest))
		for k, i := range rest {
			sub[k] = cmds[i]
		}
		for k, r := range a.rc.DoMulti(ctx, sub...) {
			res[rest[k]] = r
		}
	}
	return res
}

// sendBatch sends b's commands on its connection and writes their replies
// into res. It returns the positions to send again on the client: those a
// MOVED or ASK reply redirected, and, when the connection failed, those
// rueidis may resend; the connection is then given up.
func (a *aside) sendBatch(ctx context.Context, b *nodeBatch, cmds []rueidis.Completed, res []rueidis.RedisResult) []int {
	sub := make([]rueidis.Completed, len(b.at))
	for k, i := range b.at {
		sub[k] = cmds[i]
	}
	replies := b.dc.DoMulti(ctx, sub...)
	var back []int
	broken := ctx.Err() == nil && failed(replies)
	moved := false
	for k, r := range replies {
		i := b.at[k]
		res[i] = r
		if err, ok := rueidis.IsRedisErr(r.Error()); ok {
			if addr, ok := err.IsMoved(); ok {
				a.routes.Learn(cmds[i].Slot(), addr)
				moved = true
				back = append(back, i)
				continue
			}
			if _, ok := err.IsAsk(); ok {
				back = append(back, i)
				continue
			}
		}
		if broken && cmds[i].IsRetryable() {
			back = append(back, i)
		}
	}
	if broken {
		a.drop(b.addr, b.dc)
	}
	if moved || broken {
		a.mu.Lock()
		a.learnLocked()
		a.mu.Unlock()
	}
	return back
}

// conn returns the connection held for addr, or nil after starting its
// dial.
func (a *aside) conn(addr string) rueidis.DedicatedClient {
	a.mu.Lock()
	defer a.mu.Unlock()
	dc := a.conns[addr]
	if dc == nil {
		a.dialLocked(addr)
	}
	return dc
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
func (a *aside) drop(addr string, dc rueidis.DedicatedClient) {
	a.mu.Lock()
	if a.conns[addr] != dc {
		a.mu.Unlock()
		return
	}
	delete(a.conns, addr)
	a.mu.Unlock()
	dc.Close()
}

// close waits for the dials and topology reads in flight and closes the
// connections. Calls after it go on the client.
func (a *aside) close() {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.quit()
	a.dials.Wait()
	a.mu.Lock()
	conns := a.conns
	a.conns = make(map[string]rueidis.DedicatedClient)
	a.mu.Unlock()
	for _, dc := range conns {
		dc.Close()
	}
}
