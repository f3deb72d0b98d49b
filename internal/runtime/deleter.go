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
// one DEL goes with one script in many, no goroutine is woken and no
// round trip is added. A timer sweeps the keys that no script took within
// sweepAge (a Client gone quiet, or, on a cluster, a slot no script goes
// to); a key it cannot delete expires by its TTL.
//
// On a cluster a DEL holds the keys of one hash slot, and a script takes
// those of its slot once slotBatch of them wait: with locks spread over
// many slots, fewer are left to the sweep, whose one DoMulti holds every
// slot's DEL. Elsewhere one DEL holds keys of every slot until the server
// refuses such a DEL, as one that enforces slots behind one address (a
// managed service, a proxy) does with CROSSSLOT; from then on it goes as
// on a cluster, and the refused keys are queued again.
type deleter struct {
	rc      rueidis.Client
	side    *aside // where the sweeps go
	cluster bool
	// slots is nil while a DEL may hold keys of several slots; then, the
	// queued keys of each slot, written under mu.
	slots atomic.Pointer[slotCounts]

	n     atomic.Int32 // keys queued, read without mu before every script
	first atomic.Int64 // when pending[0] was queued, in UnixNano; read likewise
	mu    sync.Mutex
	// pending queues the keys, oldest first, while a DEL may span slots;
	// bySlot, from then on, the keys of each slot, so that a script takes
	// its slot's without going through the others'.
	pending []queuedKey
	bySlot  map[uint16][]queuedKey
	armed   bool // the sweep timer is set
	closed  bool
	sweep   *time.Timer    // made by the first add
	running sync.WaitGroup // sweeps in flight
}

// slotCounts counts queued keys by hash slot.
type slotCounts [1 << 14]atomic.Int32

type queuedKey struct {
	key string
	at  time.Time
}

const (
	// deleteWindow is how long a queued key may wait for company before
	// the next script takes it.
	deleteWindow = 2 * time.Millisecond
	// deleteBatch is how many queued keys the next script takes at once,
	// whatever their age.
	deleteBatch = 64
	// slotBatch is how many queued keys of its slot a script takes along
	// at the least, where a DEL holds one slot's keys.
	slotBatch = 16
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

func newDeleter(rc rueidis.Client, side *aside) *deleter {
	d := &deleter{rc: rc, side: side, cluster: rc.Mode() == rueidis.ClientModeCluster}
	if d.cluster {
		d.slots.Store(new(slotCounts))
		d.bySlot = make(map[uint16][]queuedKey)
	}
	return d
}

// delBatch is one DEL command and the keys it holds.
type delBatch struct {
	cmds  rueidis.Commands
	keys  [][]string // cmds[i]'s keys; rueidis recycles a command once sent
	spans bool       // a DEL may hold keys of several slots
}

// add queues key. It sends nothing and wakes nothing; a Client that has
// closed deletes it at once.
func (d *deleter) add(key string) {
	// Before mu, which every script's take may need.
	now, c := time.Now(), d.slots.Load()
	var slot uint16
	if c != nil {
		slot = keys.Slot(key)
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
		defer cancel()
		d.rc.Do(ctx, d.rc.B().Del().Key(key).Build())
		return
	}
	if c == nil && d.slots.Load() != nil {
		c, slot = d.slots.Load(), keys.Slot(key) // oneSlot ran meanwhile
	}
	q := queuedKey{key, now}
	if c != nil {
		d.bySlot[slot] = append(d.bySlot[slot], q)
		c[slot].Add(1)
	} else {
		if len(d.pending) == 0 {
			d.first.Store(now.UnixNano())
		}
		d.pending = append(d.pending, q)
	}
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
// fewer than deleteBatch wait; where a DEL holds one slot's keys, those of
// key's slot once slotBatch of them wait. It takes mu only then, since
// every script would contend for it.
func (d *deleter) take(key string) delBatch {
	n := d.n.Load()
	if n == 0 {
		return delBatch{}
	}
	if c := d.slots.Load(); c != nil {
		slot := keys.Slot(key)
		if c[slot].Load() < slotBatch {
			return delBatch{}
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		var b delBatch
		d.takeSlot(&b, slot, time.Time{})
		return b
	}
	now := time.Now()
	if n < deleteBatch && now.UnixNano()-d.first.Load() < int64(deleteWindow) {
		return delBatch{}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.slots.Load() != nil || len(d.pending) == 0 || len(d.pending) < deleteBatch && now.Sub(d.pending[0].at) < deleteWindow {
		return delBatch{}
	}
	return d.dels(time.Time{})
}

// dels removes the keys queued before cut, every key for a zero cut, and
// returns their DELs: one per hash slot unless a DEL may span slots, and
// at most maxDelKeys keys each. Emptied slot queues are let go. d.mu must
// be held.
func (d *deleter) dels(cut time.Time) delBatch {
	if d.slots.Load() != nil {
		var b delBatch
		for slot, q := range d.bySlot {
			if len(q) == 0 {
				delete(d.bySlot, slot)
				continue
			}
			d.takeSlot(&b, slot, cut)
		}
		return b
	}
	b := delBatch{spans: true}
	var ks []string
	d.pending, ks = split(d.pending, cut)
	d.n.Store(int32(len(d.pending)))
	if len(d.pending) > 0 {
		d.first.Store(d.pending[0].at.UnixNano())
	}
	b.add(d, ks)
	return b
}

// takeSlot adds to b the DELs of slot's keys queued before cut (every key
// for a zero cut). The queue keeps its array for the keys to come; the
// sweep lets it go once empty. d.mu must be held.
func (d *deleter) takeSlot(b *delBatch, slot uint16, cut time.Time) {
	q, ks := split(d.bySlot[slot], cut)
	d.bySlot[slot] = q
	d.slots.Load()[slot].Add(-int32(len(ks)))
	d.n.Add(-int32(len(ks)))
	b.add(d, ks)
}

// split removes from q, in place, the keys queued before cut (every key
// for a zero cut), and returns what is left and the keys removed.
func split(q []queuedKey, cut time.Time) (kept []queuedKey, taken []string) {
	kept = q[:0]
	for _, k := range q {
		if cut.IsZero() || k.at.Before(cut) {
			taken = append(taken, k.key)
		} else {
			kept = append(kept, k)
		}
	}
	clear(q[len(kept):])
	return kept, taken
}

// add appends the DELs of ks, at most maxDelKeys keys each.
func (b *delBatch) add(d *deleter, ks []string) {
	for len(ks) > 0 {
		n := min(len(ks), maxDelKeys)
		b.cmds = append(b.cmds, d.del(ks[:n]))
		b.keys = append(b.keys, ks[:n:n])
		ks = ks[n:]
	}
}

// del builds a DEL of ks: ordered (script.Ordered) outside a cluster, so
// that it goes on the connection of the script it rides with.
func (d *deleter) del(ks []string) rueidis.Completed {
	if d.cluster {
		return d.rc.B().Del().Key(ks...).Build().ToPipe() // as the scripts
	}
	return script.Ordered(d.rc, "DEL", ks)
}

// answered reads the replies to b's DELs. The first refusal of a DEL
// that spans slots turns spanning off and queues its keys again, one DEL
// per slot from then on; when the caller that sent them gave up (gone),
// the DELs that may not have gone out are queued again too (a DEL run
// twice is harmless). Other failures leave the keys to their TTL.
func (d *deleter) answered(b delBatch, replies []rueidis.RedisResult, gone bool) {
	for i, res := range replies {
		switch _, refused := rueidis.IsRedisErr(res.Error()); {
		case refused && b.spans && spansSlots(b.keys[i]):
			d.oneSlot()
			d.requeue(b.keys[i])
		case gone && !Answered(res):
			d.requeue(b.keys[i])
		}
	}
}

// oneSlot makes every DEL from now on hold one slot's keys.
func (d *deleter) oneSlot() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.slots.Load() != nil {
		return
	}
	c, by := new(slotCounts), make(map[uint16][]queuedKey)
	for _, k := range d.pending {
		slot := keys.Slot(k.key)
		by[slot] = append(by[slot], k)
		c[slot].Add(1)
	}
	d.pending, d.bySlot = nil, by
	d.slots.Store(c)
}

// requeue queues ks again.
func (d *deleter) requeue(ks []string) {
	for _, k := range ks {
		d.add(k)
	}
}

// spansSlots reports whether keys hash to more than one slot.
func spansSlots(ks []string) bool {
	for _, k := range ks[1:] {
		if keys.Slot(k) != keys.Slot(ks[0]) {
			return true
		}
	}
	return false
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
	b := d.dels(time.Now().Add(-sweepAge))
	// One more sweep after the last key lets the emptied slot queues go.
	d.armed = d.n.Load() > 0 || len(d.bySlot) > 0
	if d.armed {
		d.sweep.Reset(sweepEvery)
	}
	d.mu.Unlock()
	d.send(b, time.Now().Add(deleteTimeout))
}

// send sends b by deadline; failures are left to the keys' TTL, but for
// a refused DEL that spans slots (answered).
func (d *deleter) send(b delBatch, deadline time.Time) {
	if len(b.cmds) == 0 {
		return
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	d.answered(b, d.side.DoMulti(ctx, b.cmds...), false)
}

// close stops the timer, waits for a sweep in flight, and deletes every
// key still queued, by deadline. Keys added later are deleted at once.
func (d *deleter) close(deadline time.Time) {
	d.mu.Lock()
	d.closed = true
	if d.sweep != nil {
		d.sweep.Stop()
	}
	b := d.dels(time.Time{})
	d.mu.Unlock()
	d.running.Wait()
	d.send(b, deadline)
}

// Send runs s with ks and args, as script.Exec does, and sends along, in
// the same pipeline and ahead of it, the deletions queued for it (see
// deleter). Their replies are read only for a refusal of a DEL that spans
// slots and, when ctx ended, for DELs that did not go out (answered).
func (r *Runtime) Send(ctx context.Context, s *script.Script, ks, args []string) rueidis.RedisResult {
	r.side.warm()
	var b delBatch
	if r.latches.n.Load() > 0 && len(ks) > 0 && ctx.Err() == nil {
		b = r.latches.take(ks[0])
	}
	cmd := r.evalSHA(s, ks, args)
	var res rueidis.RedisResult
	if len(b.cmds) == 0 {
		res = r.RC.Do(ctx, cmd)
	} else {
		if cmd.IsRetryable() {
			// rueidis resends a pipeline only when every command in it may
			// be resent, and a DEL may (pinned, as script.Resendable says).
			for i := range b.cmds {
				b.cmds[i] = script.Resendable(b.cmds[i].ToRetryable())
			}
		}
		all := r.RC.DoMulti(ctx, append(b.cmds, cmd)...)
		// The caller's end may have kept the DELs from going out.
		r.latches.answered(b, all[:len(b.cmds)], ctx.Err() != nil)
		res = all[len(all)-1]
	}
	if script.IsNoScript(res.Error()) {
		return r.RC.Do(ctx, r.eval(s, ks, args))
	}
	return res
}

// Answered reports whether res is the server's answer, nil or an error
// reply included, rather than a connection's or a context's error.
func Answered(res rueidis.RedisResult) bool { return res.NonRedisError() == nil }

// evalSHA and eval build s's commands for Send: ordered outside a cluster;
// on a cluster, marked for the pipeline, as the DELs they carry are, so
// that a client without auto-pipelining sends them on the connection it
// keeps per node, in call order (Ordered), not on one of its pool. Safe
// and replica-sync modes build theirs unmarked: a pipeline that holds WAIT
// must go on a dedicated connection.
func (r *Runtime) evalSHA(s *script.Script, ks, args []string) rueidis.Completed {
	if r.ordered {
		return s.EvalSHAOrdered(r.RC, ks, args)
	}
	return s.EvalSHA(r.RC, ks, args).ToPipe()
}

func (r *Runtime) eval(s *script.Script, ks, args []string) rueidis.Completed {
	if r.ordered {
		return s.EvalOrdered(r.RC, ks, args)
	}
	return s.Eval(r.RC, ks, args).ToPipe()
}
