package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// detacher runs the sends whose reply a caller may stop waiting for while
// a clean-up step must still learn that the command is done.
//
// rueidis, when a caller's ctx ends, returns at once but leaves the command
// queued on the connection it picked, and writes it later. rueidis
// pipelines over several connections to one server and picks one at
// random for every command that names a key slot, so a take-back sent
// after that return may travel on another connection and run on the
// server first, find nothing to take back, and leave the late acquisition
// held until its lease runs out. Outside a cluster the scripts avoid this
// by going on one connection (Ordered), and so do they on a cluster client
// that keeps one connection per node, once a probe found it so; on any
// other cluster client, whose commands must name their slot, a detached
// send keeps waiting for the reply on its own goroutine, and the take-back
// waits for it.
type detacher struct {
	stop context.Context // ended by Close: the sends still waiting give up
	quit context.CancelFunc
	wg   sync.WaitGroup

	mu     sync.RWMutex // read-held by add, so that sends do not contend
	closed bool         // under mu: sends run on their caller's goroutine
}

func newDetacher() *detacher {
	ctx, cancel := context.WithCancel(context.Background())
	return &detacher{stop: ctx, quit: cancel}
}

// close makes the sends still waiting give up, and joins them.
func (d *detacher) close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.quit()
	d.wg.Wait()
}

// add counts a goroutine about to start; false once closed.
func (d *detacher) add() bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return false
	}
	d.wg.Add(1)
	return true
}

// Pending is the outcome of a send whose caller stopped waiting: Done is
// closed once the command has answered, failed, or was given up (after
// its bound, or by Close), and then Result is its reply.
type Pending struct {
	done chan struct{}
	res  rueidis.RedisResult
	ctx  sendCtx // the send's, allocated with it
}

// Done is closed once the send has ended.
func (p *Pending) Done() <-chan struct{} { return p.done }

// Result is the send's reply; only read it once Done is closed.
func (p *Pending) Result() rueidis.RedisResult { return p.res }

// SendDetached runs send, which must honour the context it is given,
// and returns its reply. When ctx can end, send runs on a goroutine of
// its own with ctx's values but not its end, and bound as its deadline
// (sendCtx); if ctx ends first, SendDetached returns ctx's error and the
// Pending send, which a clean-up step waits for before it takes back
// what the command may have done.
func (r *Runtime) SendDetached(ctx context.Context, bound time.Duration, send func(ctx context.Context) rueidis.RedisResult) (rueidis.RedisResult, *Pending) {
	if ctx.Done() == nil {
		return send(ctx), nil
	}
	if err := ctx.Err(); err != nil {
		return rueidis.NewErrorResult(err), nil // nothing sent
	}
	d := r.detached
	if !d.add() {
		return send(ctx), nil // the Client is closing
	}
	p := &Pending{done: make(chan struct{})}
	p.ctx = sendCtx{vals: ctx, stop: d.stop, deadline: time.Now().Add(bound)}
	go func() {
		defer d.wg.Done()
		defer close(p.done)
		p.res = send(&p.ctx)
	}()
	select {
	case <-p.done:
		if ctx.Err() == nil && errors.Is(p.res.Error(), context.DeadlineExceeded) {
			// The bound, not the caller's deadline: the reply is lost.
			return rueidis.NewErrorResult(fmt.Errorf("no reply within %v", bound)), nil
		}
		return p.res, nil
	case <-ctx.Done():
		return rueidis.NewErrorResult(ctx.Err()), p
	}
}

// sendCtx is a detached send's context: the caller's values, and the
// Client's end as its own. Its deadline, the bound, has no timer behind
// it, which every send would pay for: rueidis applies it to a synchronous
// send as its connection's deadline, while a pipelined send waits for its
// reply, its connection's failure (rueidis's ConnWriteTimeout, 10 s by
// default) or Close.
type sendCtx struct {
	vals     context.Context // the caller's
	stop     context.Context // the detacher's: ended by Close
	deadline time.Time
}

func (c *sendCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *sendCtx) Done() <-chan struct{}       { return c.stop.Done() }
func (c *sendCtx) Err() error                  { return c.stop.Err() }
func (c *sendCtx) Value(key any) any           { return c.vals.Value(key) }

// AfterFunc lets a context derived from c follow c's end without a
// goroutine of its own (context.AfterFunc's contract).
func (c *sendCtx) AfterFunc(f func()) func() bool { return context.AfterFunc(c.stop, f) }

// Ordered reports whether the scripts Send sends run in the order of the
// calls, so that a take-back runs after the acquisition it takes back,
// even one whose caller gave up while it was queued: outside a cluster,
// where they all go on one connection (script.Ordered), and on a cluster
// client that keeps one connection per node, rueidis's default, once a
// probe found it so. The first call on a cluster starts the probe.
func (r *Runtime) Ordered() bool {
	if r.ordered || r.nodeOrdered.Load() {
		return true
	}
	r.probeNodes.Do(r.startNodeProbe)
	return false
}

// nodeProbeCalls is how many CLIENT IDs the probe sends. rueidis picks one
// of a node's connections at random for each command, so where it keeps
// two, all of them answer the same id once in 2^31 probes.
const nodeProbeCalls = 32

// startNodeProbe learns, on a goroutine that Close joins, whether the
// cluster client sends a node's scripts on one connection: it sends
// CLIENT IDs routed as the scripts are (to a slot, marked for the
// pipeline, as Send builds them) and finds them all answered by
// one connection. Until it has, and if anything fails, acquisitions are
// sent detached (SendDetached).
func (r *Runtime) startNodeProbe() {
	if !r.detached.add() {
		return
	}
	go func() {
		defer r.detached.wg.Done()
		ctx, cancel := context.WithTimeout(r.detached.stop, nodeProbeTimeout)
		defer cancel()
		r.nodeOrdered.Store(oneConnection(ctx, r.RC, nodeProbeCalls))
	}()
}

// nodeProbeTimeout bounds the probe.
const nodeProbeTimeout = 5 * time.Second

// oneConnection reports whether calls CLIENT IDs sent to the node of one
// slot, as the scripts are sent, were all answered by one connection.
func oneConnection(ctx context.Context, rc rueidis.Client, calls int) bool {
	var first int64
	for i := range calls {
		cmd := rc.B().ClientId().Build().SetSlot(nodeProbeKey).ToPipe()
		id, err := rc.Do(ctx, cmd).AsInt64()
		switch {
		case err != nil:
			return false
		case i == 0:
			first = id
		case id != first:
			return false
		}
	}
	return true
}

// nodeProbeKey routes the probe: any key would do.
const nodeProbeKey = "interlock:probe"
