package runtime

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/script"
)

// deleter deletes the keys an operation leaves behind once its caller has
// its answer: unlock latches and semaphore receipts. They ride on the
// Client's next script, in the same pipeline (Runtime.Send), once the
// oldest has waited deleteWindow or enough are queued, so that under load
// one DEL per hash slot goes with one script in many, no goroutine is
// woken and no round trip is added. A timer sweeps the keys that no script
// took within sweepAge (a Client gone quiet, or, on a cluster, a slot no
// script goes to); a key it cannot delete expires by its TTL.
type deleter struct {
	rc      rueidis.Client
	cluster bool

	n       atomic.Int32 // len(pending), read without mu before every script
	first   atomic.Int64 // when pending[0] was queued, in UnixNano; read likewise
	mu      sync.Mutex
	pending []queuedKey
	armed   bool // the sweep timer is set
	closed  bool
	sweep   *time.Timer    // made by the first add
	running sync.WaitGroup // sweeps in flight
}

type queuedKey struct {
	key  string
	slot uint16
	at   time.Time
}

const (
	// deleteWindow is how long a queued key may wait for company before
	// the next script takes it.
	deleteWindow = 2 * time.Millisecond
	// deleteBatch is how many queued keys the next script takes at once,
	// whatever their age.
	deleteBatch = 64
	// sweepEvery is the sweep timer's period while keys are queued, and
	// sweepAge the age from which it deletes them itself: older than any
	// key waits while scripts go out on its slot, so that a Client sending
	// steadily has them all taken along, and a quiet one sees them gone
	// within about 15 ms.
	sweepEvery = 10 * time.Millisecond
	sweepAge   = 5 * time.Millisecond
	// deleteTimeout bounds one sweep.
	deleteTimeout = time.Second
	// maxDelKeys bounds the keys of one DEL command.
	maxDelKeys = 512
)

func newDeleter(rc rueidis.Client) *deleter {
	return &deleter{rc: rc, cluster: rc.Mode() == rueidis.ClientModeCluster}
}

// add queues key. It sends nothing and wakes nothing; a Client that has
// closed deletes it at once.
func (d *deleter) add(key string) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
		defer cancel()
		d.rc.Do(ctx, d.rc.B().Del().Key(key).Build())
		return
	}
	now := time.Now()
	if len(d.pending) == 0 {
		d.first.Store(now.UnixNano())
	}
	d.pending = append(d.pending, queuedKey{key, keys.Slot(key), now})
	d.n.Add(1)
	if !d.armed {
		d.armed = true
		if d.sweep == nil {
			d.sweep = time.AfterFunc(sweepEvery, d.sweepNow)
		} else {
			d.sweep.Reset(sweepEvery)
		}
	}
	d.mu.Unlock()
}

// take returns the DEL commands that go along with a script on key's
// slot: none while the oldest queued key is younger than deleteWindow and
// fewer than deleteBatch wait; on a cluster, only keys of that slot.
func (d *deleter) take(key string, now time.Time) rueidis.Commands {
	if n := d.n.Load(); n == 0 || n < deleteBatch && now.UnixNano()-d.first.Load() < int64(deleteWindow) {
		return nil // without taking mu, which every script would contend for
	}
	var slot uint16
	if d.cluster {
		slot = keys.Slot(key)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.pending) == 0 || len(d.pending) < deleteBatch && now.Sub(d.pending[0].at) < deleteWindow {
		return nil
	}
	return d.dels(func(k queuedKey) bool { return !d.cluster || k.slot == slot })
}

// dels removes the queued keys that pick accepts and returns their DELs,
// one per hash slot (and maxDelKeys). d.mu must be held.
func (d *deleter) dels(pick func(queuedKey) bool) rueidis.Commands {
	var taken []queuedKey
	kept := d.pending[:0]
	for _, k := range d.pending {
		if pick(k) {
			taken = append(taken, k)
		} else {
			kept = append(kept, k)
		}
	}
	clear(d.pending[len(kept):])
	d.pending = kept
	d.n.Store(int32(len(kept)))
	if len(kept) > 0 {
		d.first.Store(kept[0].at.UnixNano())
	}
	if len(taken) == 0 {
		return nil
	}
	// The keys of one DEL share a slot, whatever the client's mode: a
	// cluster, and a server that enforces slots behind one address (a
	// managed service, a proxy), refuse a DEL whose keys span slots.
	groups := map[uint16][]string{}
	var order []uint16
	for _, k := range taken {
		if _, ok := groups[k.slot]; !ok {
			order = append(order, k.slot)
		}
		groups[k.slot] = append(groups[k.slot], k.key)
	}
	var cmds rueidis.Commands
	for _, s := range order {
		for g := groups[s]; len(g) > 0; {
			n := min(len(g), maxDelKeys)
			cmds = append(cmds, d.rc.B().Del().Key(g[:n]...).Build())
			g = g[n:]
		}
	}
	return cmds
}

// sweepNow runs on the timer: it deletes the keys that have waited
// sweepAge, and sets the timer again while any are queued.
func (d *deleter) sweepNow() {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.running.Add(1)
	defer d.running.Done()
	cut := time.Now().Add(-sweepAge)
	cmds := d.dels(func(k queuedKey) bool { return k.at.Before(cut) })
	d.armed = len(d.pending) > 0
	if d.armed {
		d.sweep.Reset(sweepEvery)
	}
	d.mu.Unlock()
	d.send(cmds, time.Now().Add(deleteTimeout))
}

// send sends cmds by deadline; failures are left to the keys' TTL.
func (d *deleter) send(cmds rueidis.Commands, deadline time.Time) {
	if len(cmds) == 0 {
		return
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	d.rc.DoMulti(ctx, cmds...)
}

// close stops the timer, waits for a sweep in flight, and deletes every
// key still queued, by deadline. Keys added later are deleted at once.
func (d *deleter) close(deadline time.Time) {
	d.mu.Lock()
	d.closed = true
	if d.sweep != nil {
		d.sweep.Stop()
	}
	cmds := d.dels(func(queuedKey) bool { return true })
	d.mu.Unlock()
	d.running.Wait()
	d.send(cmds, deadline)
}

// Send runs s with ks and args, as script.Exec does, and sends along, in
// the same pipeline and ahead of it, the deletions queued for its slot
// (see deleter). Their replies are not read: a key left expires by its TTL.
func (r *Runtime) Send(ctx context.Context, s *script.Script, ks, args []string) rueidis.RedisResult {
	if r.latches.n.Load() == 0 || len(ks) == 0 {
		return s.Exec(ctx, r.RC, ks, args)
	}
	dels := r.latches.take(ks[0], time.Now())
	if len(dels) == 0 {
		return s.Exec(ctx, r.RC, ks, args)
	}
	cmd := s.EvalSHA(r.RC, ks, args)
	if cmd.IsRetryable() {
		// rueidis resends a pipeline only when every command in it may be
		// resent, and a DEL may.
		for i := range dels {
			dels[i] = dels[i].ToRetryable()
		}
	}
	res := r.RC.DoMulti(ctx, append(dels, cmd)...)
	last := res[len(res)-1]
	if script.IsNoScript(last.Error()) {
		return r.RC.Do(ctx, s.Eval(r.RC, ks, args))
	}
	return last
}
