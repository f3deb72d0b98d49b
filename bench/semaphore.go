package main

import (
	"context"
	"crypto/rand"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/lua"
	"github.com/interlock-go/interlock/semaphore"
)

// Semaphore scenarios (P1-P3: RSemaphore; X1-X3: RPermitExpirableSemaphore,
// see scenario.go). A Mutex's Lock acquires one permit, waiting if none is
// free, and its Unlock releases it. The harness creates every semaphore of
// a cell with the scenario's permits (a plain SET of the count, which is
// how both kinds store their free permits) before the cell is bracketed.
//
// They have two floors, both the scripts the library sends, on a default
// rueidis client with EVALSHA, without any of the library's Go code:
//
//   - "floor: Redisson scripts (rueidis)", without the library's receipt
//     keys, so that the scripts run exactly Redisson's commands: ACQ
//     (KEYS=[N], ARGV=[1]) and REL (KEYS=[N, ch], ARGV=[1, PUBLISH]) for
//     RSemaphore, PACQ and PREL1 for the expirable one, with a 30 s lease
//     (the watchdog's). It is what any client compatible with Redisson
//     sends for a pair, and the "× floor" denominator.
//   - "floor: interlock scripts+receipts (rueidis)", the same with a
//     receipt key on each script, every receipt then deleted by a DEL
//     batched over a 2ms window, as interlock's Client deletes them: what
//     interlock sends for a pair.
//
// Floors cannot wait, so they run only where no goroutine waits: P1, P2,
// X1 and X2. The scripts publish with floorPublish's command (SPUBLISH on
// a cluster with sharded pub/sub).
const (
	KindSemaphore LockKind = "semaphore"
	KindExpirable LockKind = "expirable"
)

// Semaphores is a Session with semaphores: Permit returns one goroutine's
// handle on one permit of the semaphore name of kind.
type Semaphores interface {
	Permit(kind LockKind, name string) Mutex
}

// semaphoresOnly marks a Session that has no locks: the lock scenarios
// show it as n/a.
type semaphoresOnly interface{ onlySemaphores() }

// setPermits creates the cell's semaphores (c.Key, or c.Key:0 ..
// c.Key:Workers-1) with the scenario's free permits, on the admin client.
func (r *benchRedis) setPermits(ctx context.Context, c Cell) error {
	names := []string{c.Key}
	if c.Scenario.Distinct {
		names = names[:0]
		for w := range c.Workers {
			names = append(names, c.Key+":"+strconv.Itoa(w))
		}
	}
	p := strconv.Itoa(c.Scenario.Permits)
	cmds := make(rueidis.Commands, len(names))
	for i, n := range names {
		cmds[i] = r.admin.B().Set().Key(n).Value(p).Build()
	}
	for _, res := range r.admin.DoMulti(ctx, cmds...) {
		if err := res.Error(); err != nil {
			return err
		}
	}
	return nil
}

// interlock's semaphores, on the Session of lib_interlock.go: Acquire(1)
// and Release(1); the expirable one with lease 0, a watchdog hold.
func (s *interlockSession) Permit(kind LockKind, name string) Mutex {
	if kind == KindExpirable {
		return &ilExpirable{e: semaphore.NewExpirable(s.c, name)}
	}
	return ilSemaphore{semaphore.New(s.c, name)}
}

type ilSemaphore struct{ s *semaphore.Semaphore }

func (m ilSemaphore) Lock(ctx context.Context) error   { return m.s.Acquire(ctx, 1) }
func (m ilSemaphore) Unlock(ctx context.Context) error { return m.s.Release(ctx, 1) }

type ilExpirable struct {
	e   *semaphore.Expirable
	ids []semaphore.PermitID
}

func (m *ilExpirable) Lock(ctx context.Context) (err error) {
	m.ids, err = m.e.Acquire(ctx, 1, 0)
	return err
}

func (m *ilExpirable) Unlock(ctx context.Context) error { return m.e.Release(ctx, m.ids...) }

// The floors.
type (
	floorScripts  struct{}
	floorReceipts struct{}
)

func init() {
	Register(2, floorScripts{})
	Register(3, floorReceipts{})
}

func (floorScripts) Name() string  { return "floor: Redisson scripts (rueidis)" }
func (floorReceipts) Name() string { return "floor: interlock scripts+receipts (rueidis)" }

// floorScriptSet is what the floors send; loaded in Open.
var floorScriptSet = []*lua.Script{floorScript("sem_acquire"), floorScript("sem_release"), floorScript("pes_acquire"), floorScript("pes_release_one")}

func (floorScripts) Open(ctx context.Context, addr string) (Session, error) {
	return openScriptFloor(ctx, addr, false)
}

func (floorReceipts) Open(ctx context.Context, addr string) (Session, error) {
	return openScriptFloor(ctx, addr, true)
}

func openScriptFloor(ctx context.Context, addr string, receipts bool) (Session, error) {
	rc, publish, err := openFloor(ctx, addr, floorScriptSet...)
	if err != nil {
		return nil, err
	}
	f := &scriptFloor{cnt: newCountingClient(rc), publish: publish}
	if receipts {
		f.del = newReceiptDeleter(f.cnt)
	}
	return f, nil
}

// scriptFloor is either floor: del is nil without receipts.
type scriptFloor struct {
	cnt     *countingClient
	del     *receiptDeleter
	publish string // floorPublish
}

func (f *scriptFloor) IsFloor()                { /* marker */ }
func (f *scriptFloor) onlySemaphores()         { /* marker */ }
func (f *scriptFloor) Mutex(string) Mutex      { return nil } // never asked: semaphoresOnly
func (f *scriptFloor) Commands() (int64, bool) { return f.cnt.n.Load(), true }

func (f *scriptFloor) Close() error {
	if f.del != nil {
		f.del.close()
	}
	f.cnt.Client.Close()
	return nil
}

func (f *scriptFloor) Permit(kind LockKind, name string) Mutex {
	p := floorPermit{c: f.cnt, del: f.del, name: name, ch: keys.SemaphoreChannel(name), timeout: keys.Suffix(name, keys.PermitsSuffix), publish: f.publish}
	if kind == KindExpirable {
		return &floorExpirable{floorPermit: p}
	}
	return p
}

// errFloorBusy: the floor cannot wait, and found no free permit.
var errFloorBusy = errors.New("floor: no free permit (the floor does not wait)")

type floorPermit struct {
	c                          rueidis.Client
	del                        *receiptDeleter // nil: no receipts
	name, ch, timeout, publish string
}

// floorReceiptTTL is interlock's receipt TTL in ms (lockcore.ReceiptTTL).
const floorReceiptTTL = "30000"

// call runs s with keys and args, with a fresh receipt appended to both
// when the floor has receipts; the receipt is queued for deletion once s
// has answered.
func (p floorPermit) call(ctx context.Context, s *lua.Script, keyList []string, args ...string) rueidis.RedisResult {
	var receipt string
	if p.del != nil {
		receipt = keys.Receipt(p.name, keys.RequestID())
		keyList, args = append(keyList, receipt), append(args, floorReceiptTTL)
	}
	r := p.c.Do(ctx, p.c.B().Evalsha().Sha1(s.SHA1()).Numkeys(int64(len(keyList))).Key(keyList...).Arg(args...).Build())
	if p.del != nil && r.NonRedisError() == nil {
		p.del.add(receipt)
	}
	return r
}

// Lock is ACQ.
func (p floorPermit) Lock(ctx context.Context) error {
	n, err := p.call(ctx, floorScript("sem_acquire"), []string{p.name}, "1").AsInt64()
	if err == nil && n != 1 {
		err = errFloorBusy
	}
	return err
}

// Unlock is REL.
func (p floorPermit) Unlock(ctx context.Context) error {
	return nilOK(p.call(ctx, floorScript("sem_release"), []string{p.name, p.ch}, "1", p.publish).Error())
}

type floorExpirable struct {
	floorPermit
	id [16]byte
}

// floorLeaseMs is the floor's lease: the watchdog timeout's.
const floorLeaseMs = 30000

// Lock is PACQ of one fresh id.
func (p *floorExpirable) Lock(ctx context.Context) error {
	_, _ = rand.Read(p.id[:])
	now := time.Now().UnixMilli()
	r, err := p.call(ctx, floorScript("pes_acquire"), []string{p.name, p.timeout, p.ch},
		"1", strconv.FormatInt(now+floorLeaseMs, 10), strconv.FormatInt(now, 10), "922337203685477", p.publish, string(p.id[:])).ToString()
	if err == nil && r != "OK" {
		err = errFloorBusy
	}
	if rueidis.IsRedisNil(err) {
		err = errFloorBusy
	}
	return err
}

// Unlock is PREL1 of it.
func (p *floorExpirable) Unlock(ctx context.Context) error {
	n, err := p.call(ctx, floorScript("pes_release_one"), []string{p.name, p.ch, p.timeout},
		string(p.id[:]), "1", strconv.FormatInt(time.Now().UnixMilli(), 10), p.publish).AsInt64()
	if err == nil && n != 1 {
		err = errors.New("floor: the permit was not released")
	}
	return err
}

// receiptDeleter is interlock's batched receipt deletion rebuilt on plain
// rueidis: a queued key opens a 2ms window, at whose end every key queued
// meanwhile goes out in one DEL (at most 512 keys a command), on a cluster
// one DEL per hash slot.
type receiptDeleter struct {
	rc      rueidis.Client
	cluster bool
	mu      sync.Mutex
	pending []string
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

func newReceiptDeleter(rc rueidis.Client) *receiptDeleter {
	d := &receiptDeleter{rc: rc, cluster: rc.Mode() == rueidis.ClientModeCluster,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go d.run()
	return d
}

func (d *receiptDeleter) add(key string) {
	d.mu.Lock()
	d.pending = append(d.pending, key)
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// close stops the deleter after a last flush.
func (d *receiptDeleter) close() { close(d.stop); <-d.done }

func (d *receiptDeleter) run() {
	defer close(d.done)
	for {
		select {
		case <-d.wake:
			select {
			case <-time.After(2 * time.Millisecond):
			case <-d.stop:
			}
			d.flush()
		case <-d.stop:
			d.flush()
			return
		}
	}
}

func (d *receiptDeleter) flush() {
	d.mu.Lock()
	batch := d.pending
	d.pending = nil
	d.mu.Unlock()
	groups := [][]string{batch}
	if d.cluster {
		groups = bySlot(batch)
	}
	var cmds rueidis.Commands
	for _, g := range groups {
		for len(g) > 0 {
			n := min(len(g), 512)
			cmds = append(cmds, d.rc.B().Del().Key(g[:n]...).Build())
			g = g[n:]
		}
	}
	if len(cmds) > 0 {
		d.rc.DoMulti(context.Background(), cmds...)
	}
}

// bySlot groups ks by hash slot, in the order each slot first appears.
func bySlot(ks []string) [][]string {
	at := map[uint16]int{}
	var out [][]string
	for _, k := range ks {
		s := keys.Slot(k)
		i, ok := at[s]
		if !ok {
			i = len(out)
			at[s] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], k)
	}
	return out
}

func nilOK(err error) error {
	if rueidis.IsRedisNil(err) {
		return nil
	}
	return err
}

// warmJVMSemaphores warms the Redisson peer's JIT on the semaphore shapes,
// each on names of its own, as Open does for the locks.
func warmJVMSemaphores(p *javaPeer) error {
	const ms = 1000
	for i, sh := range []struct {
		kind             string
		threads, permits int
		distinct         bool
	}{
		{"semaphore", 1, 1, false}, {"semaphore", 64, 1, true}, {"semaphore", 64, 8, false},
		{"expirable", 1, 1, false}, {"expirable", 64, 1, true}, {"expirable", 64, 8, false},
	} {
		if err := p.do(map[string]any{
			"op": "bench", "kind": sh.kind, "name": "lockbench:jvmwarm:" + sh.kind + ":" + strconv.Itoa(i),
			"threads": sh.threads, "distinctKeys": sh.distinct, "permits": sh.permits,
			"durationMs": ms, "warmupMs": 0,
		}, nil); err != nil {
			return err
		}
	}
	return nil
}
