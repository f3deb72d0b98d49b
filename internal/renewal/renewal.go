package renewal

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/report"
	"github.com/interlock-go/interlock/internal/script"
)

// A Task tells the Scheduler how to renew one lock kind's entries.
type Task struct {
	// Script renews a chunk of entries that share one hash slot (on every
	// server, not only a cluster) and answers an array with 1 (renewed) or
	// 0 (lost) per entry, in order.
	Script *script.Script
	// Args returns the script's KEYS and ARGV for a chunk of entries.
	Args func(lease time.Duration, chunk []*Entry) (keys, argv []string)
	// Lost is wrapped, with the reason (report.ErrLeaseExpired,
	// ErrNotRenewed, ErrKeyGone, ErrForceUnlocked or Config.MaxHoldErr), by
	// the cause given to an entry's context when its lock is lost.
	Lost error
	// KeepLosses has the Scheduler remember this task's losses for
	// LostCause and Expired (for an owner's late unlock or release).
	KeepLosses bool
}

// lostBy returns the cause of a loss for reason (report.Lost).
func (t *Task) lostBy(reason, detail error) error { return report.Lost(t.Lost, reason, detail) }

// Observer hears what the Scheduler did. Its methods are called from the
// Scheduler's goroutines, possibly at the same time, and must not block.
type Observer interface {
	// Renewed is called once per tick that sent renewals, after their
	// replies were applied.
	Renewed(t Tick)
	// Lost is called once for each entry that is lost, after the entry's
	// guards have been cancelled, with the label HoldLabeled was given (nil
	// from Hold).
	Lost(key string, label *Label, cause error)
}

// Label names an entry's synchronizer to the Observer (HoldLabeled).
type Label struct {
	// Kind is the synchronizer's kind, as its events name it.
	Kind string
	// Name is its name as the caller gave it; empty: the Observer names
	// the entry by its key.
	Name string
}

// Tick is what one renewal tick did.
type Tick struct {
	// Entries is how many entries renewal was sent for; Chunks how many
	// script calls carried them.
	Entries, Chunks int
	// Failures counts the entries whose call failed: tried again on the
	// next tick, or lost once a lease has passed since their last renewal.
	Failures int
	// Duration is how long the tick's DoMulti took (with its EVAL resend
	// after NOSCRIPT).
	Duration time.Duration
	// Err is the error of the first call that failed.
	Err error
	// Failed counts the failed entries by synchronizer (Failures in all);
	// nil without failures or without an Observer.
	Failed map[Named]int
}

// Named is the synchronizer of an entry, as the Observer and the Client's
// queries name it: its label's kind and name, or, when its label names
// nothing, its key.
type Named struct {
	Kind, Name string
	Key        string // only when Name is empty
}

// named returns what names e's synchronizer.
func (e *Entry) named() Named {
	if e.label == nil {
		return Named{Key: e.Key}
	}
	if e.label.Name == "" {
		return Named{Kind: e.label.Kind, Key: e.Key}
	}
	return Named{Kind: e.label.Kind, Name: e.label.Name}
}

// Config configures a Scheduler.
type Config struct {
	// Send sends a round's commands in one pipeline. The default is the
	// client's DoMulti.
	Send func(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult
	// Lease is the TTL each renewal sets, the watchdog timeout. Ticks run
	// every Lease/3. Required.
	Lease time.Duration
	// BatchSize is the most entries one script call renews. Required.
	BatchSize int
	// Observer, if not nil, is told about failures and losses.
	Observer Observer
	// Closed is the cause given to the entries still held when the
	// Scheduler is closed. The default is ErrClosed.
	Closed error
	// MaxHold, when positive, bounds how long watchdog holds are renewed:
	// MaxHold after an entry's first watchdog hold was acquired, the entry
	// ends as lost and renewal stops, so the key expires within one lease.
	// 0, the default, renews for as long as the holds last.
	MaxHold time.Duration
	// MaxHoldErr is wrapped, with the Task's Lost, by the cause of entries
	// ended by MaxHold. The default is ErrMaxHold.
	MaxHoldErr error
}

// ErrClosed is returned by Hold once the Scheduler is closed, and is the
// default cause of the entries it ends then.
var ErrClosed = errors.New("renewal: scheduler closed")

// ErrMaxHold is the default Config.MaxHoldErr.
var ErrMaxHold = errors.New("renewal: held longer than the maximum hold time")

// lostMemory is how long the Scheduler remembers that an entry was lost,
// for the owner's late Unlock (LostCause).
const lostMemory = 10 * time.Minute

type entryKey struct{ key, owner string }

// Scheduler renews watchdog holds and tracks every local hold. It is safe
// for concurrent use.
type Scheduler struct {
	rc  rueidis.Client
	cfg Config

	mu       sync.Mutex
	entries  map[entryKey]*Entry
	maxHolds deadlines             // entries with a MaxHold deadline, earliest first
	lost     map[entryKey]lostHold // entries lost, until their owner acquires again
	inFlight int                   // renewal rounds sent and not yet applied
	forcing  map[string]int        // keys being force-unlocked (Forcing)
	closed   bool

	rounds sync.WaitGroup // the rounds in flight, joined by run

	wake   chan struct{}      // tells run that the earliest MaxHold deadline moved
	urgent chan struct{}      // tells run that a hold needs renewing before the next tick
	cancel context.CancelFunc // stops run
	done   chan struct{}      // closed when run returned
}

// lostHold records an entry that was lost.
type lostHold struct {
	at    time.Time
	cause error
}

// New starts a Scheduler and its goroutine. Close stops it.
func New(rc rueidis.Client, cfg Config) (*Scheduler, error) {
	if rc == nil {
		return nil, errors.New("renewal: nil rueidis client")
	}
	if cfg.Lease < 3*time.Millisecond {
		return nil, errors.New("renewal: lease must be at least 3ms")
	}
	if cfg.BatchSize < 1 {
		return nil, errors.New("renewal: batch size must be at least 1")
	}
	if cfg.Closed == nil {
		cfg.Closed = ErrClosed
	}
	if cfg.MaxHold < 0 {
		return nil, errors.New("renewal: max hold must not be negative")
	}
	if cfg.MaxHoldErr == nil {
		cfg.MaxHoldErr = ErrMaxHold
	}
	if cfg.Send == nil {
		cfg.Send = rc.DoMulti
	}
	s := &Scheduler{
		rc:      rc,
		cfg:     cfg,
		entries: make(map[entryKey]*Entry),
		lost:    make(map[entryKey]lostHold),
		wake:    make(chan struct{}, 1),
		urgent:  make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go s.run(ctx)
	return s, nil
}

// Interval is the time between two ticks: a third of the lease.
func (s *Scheduler) Interval() time.Duration { return s.cfg.Lease / 3 }

// Close stops the goroutine and returns after it exited. Entries still held
// are cancelled with cause ErrClosed; their locks expire on the server when
// their lease runs out.
func (s *Scheduler) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.done
		return
	}
	s.closed = true
	for k, e := range s.entries {
		delete(s.entries, k)
		e.end(s.cfg.Closed)
	}
	s.maxHolds = nil
	clear(s.lost)
	s.mu.Unlock()
	s.cancel()
	<-s.done
}

// Len returns the number of entries, for tests and metrics.
func (s *Scheduler) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// Hold records one successful acquisition of key by owner, made with the
// given lease (0: a watchdog hold) by a request sent at sentAt.
func (s *Scheduler) Hold(key, owner string, task *Task, lease time.Duration, sentAt time.Time) error {
	return s.HoldLabeled(key, owner, task, lease, sentAt, nil)
}

// HoldLabeled is Hold with a label for the Observer, which hears it with
// the entry's loss; the first hold of an entry sets it.
func (s *Scheduler) HoldLabeled(key, owner string, task *Task, lease time.Duration, sentAt time.Time, label *Label) error {
	// The entry a first hold needs is made before s.mu is taken, which
	// every hold and release of the Client takes: an allocation can stop
	// for the garbage collector. Grouped by hash slot whatever the
	// client's mode: a server that enforces slots behind one address (a
	// managed service, a proxy) refuses a script whose keys span slots,
	// as a cluster does.
	fresh := &Entry{Key: key, Owner: owner, task: task, s: s, heapIndex: -1, since: monoOf(sentAt), label: label, slot: keys.Slot(key)}
	fresh.holds = fresh.holds0[:0]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return s.cfg.Closed
	}
	k := entryKey{key, owner}
	if len(s.lost) > 0 {
		delete(s.lost, k)
	}
	e := s.entries[k]
	if e != nil && e.watchdog == 0 && !sentAt.Before(e.leaseUntil.Time()) {
		// Every hold of e had a lease, and they have all run out: the key
		// expired on the server, and this acquisition starts afresh.
		s.forget(e, e.task.lostBy(report.ErrLeaseExpired, nil))
		e = nil
	}
	if e == nil {
		e = fresh
		s.entries[k] = e
	}
	s.addHold(e, lease, sentAt)
	return nil
}

// addHold records one hold of e. s.mu must be held.
func (s *Scheduler) addHold(e *Entry, lease time.Duration, sentAt time.Time) {
	e.holds = append(e.holds, lease)
	if lease == 0 {
		e.watchdog++
		e.failing = nil
		e.setTTL(sentAt, s.cfg.Lease)
		s.checkUrgent(e)
		if s.cfg.MaxHold > 0 && e.maxUntil == 0 {
			e.maxUntil = monoOf(sentAt.Add(s.cfg.MaxHold))
			s.maxHolds.push(e)
			if e.heapIndex == 0 {
				select {
				case s.wake <- struct{}{}:
				default:
				}
			}
		}
	} else {
		// The acquire script set the TTL to this lease.
		e.setTTL(sentAt, lease)
		if until := monoOf(sentAt.Add(lease)); until > e.leaseUntil {
			e.leaseUntil = until
		}
	}
}

// Relet replaces owner's holds on key by one hold of lease (0: a watchdog
// hold), set on the server by a request sent at sentAt, and reports whether
// there was an entry. Guards made before move to the new lease's end (none
// for a watchdog hold).
func (s *Scheduler) Relet(key, owner string, lease time.Duration, sentAt time.Time) bool {
	return s.relet(key, owner, false, lease, sentAt)
}

// ReletLast replaces owner's innermost hold on key by one of lease, whose
// TTL a request sent at sentAt set on the server, and reports whether there
// was a hold. Outer watchdog holds keep the key renewed.
func (s *Scheduler) ReletLast(key, owner string, lease time.Duration, sentAt time.Time) bool {
	return s.relet(key, owner, true, lease, sentAt)
}

// relet replaces owner's innermost hold (last) or all its holds on key by
// one of lease: the server's TTL is now lease, whatever the others had.
func (s *Scheduler) relet(key, owner string, last bool, lease time.Duration, sentAt time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[entryKey{key, owner}]
	if e == nil || e.ended || (last && len(e.holds) == 0) {
		return false
	}
	keep := 0
	if last {
		keep = len(e.holds) - 1
	}
	for _, h := range e.holds[keep:] {
		if h == 0 {
			e.watchdog--
		}
	}
	e.holds = e.holds[:keep]
	if e.watchdog == 0 {
		s.maxHolds.remove(e)
		e.maxUntil = 0
	}
	e.leaseUntil = 0
	s.addHold(e, lease, sentAt)
	e.moveDeadlines()
	return true
}

// Extending reports whether owner holds key by the Scheduler's records
// (Holds > 0), and whether one of its holds is a watchdog hold, which an
// Extend renews with the watchdog lease instead of giving it another.
func (s *Scheduler) Extending(key, owner string) (held, watchdog bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[entryKey{key, owner}]
	if e == nil || e.count() == 0 {
		return false, false
	}
	return true, e.watchdog > 0
}

// Extend records that a request sent at sentAt set the TTL of owner's holds
// on key to lease, and reports whether they are still recorded. An entry
// with a watchdog hold was renewed (lease is Config.Lease, as Extending
// said) and keeps its holds; otherwise every hold gets lease, since the
// key's one TTL ends them all, and the guards' deadlines move to its end.
func (s *Scheduler) Extend(key, owner string, lease time.Duration, sentAt time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[entryKey{key, owner}]
	if e == nil || e.ended || len(e.holds) == 0 {
		return false
	}
	if e.watchdog > 0 {
		e.failing = nil
		e.setTTL(sentAt, lease)
		s.checkUrgent(e)
		return true
	}
	for i := range e.holds {
		e.holds[i] = lease
	}
	e.leaseUntil = monoOf(sentAt.Add(lease))
	e.setTTL(sentAt, lease)
	e.moveDeadlines()
	return true
}

// Lose ends owner's holds on key as lost, as a renewal that found them
// gone does, and reports the loss.
func (s *Scheduler) Lose(key, owner string) {
	s.mu.Lock()
	e := s.entries[entryKey{key, owner}]
	if e == nil || e.ended {
		s.mu.Unlock()
		return
	}
	now := time.Now()
	l := s.lose(e, s.goneCause(e, now), now)
	s.mu.Unlock()
	s.reportLost([]lostEntry{l})
}

// LostCause returns why owner's holds on key were lost (renewal found them
// gone or could not confirm them in time, their lease or MaxHold ran out),
// or nil. The record lasts until owner acquires key again, or ten minutes.
func (s *Scheduler) LostCause(key, owner string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lost[entryKey{key, owner}].cause
}

// ForgetLoss drops the record of owner's lost hold on key (LostCause,
// Expired), once the server's answer about it has been reported.
func (s *Scheduler) ForgetLoss(key, owner string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.lost, entryKey{key, owner})
}

// Expired reports what the Scheduler knows of owner's hold on key. known:
// it records the hold, or remembers its loss (LostCause); expired: the
// server's copy has run out by the Client's records: the last TTL the
// Client set has passed, or the hold was lost for any reason but being
// found gone (report.ErrKeyGone) or force-unlocked.
func (s *Scheduler) Expired(key, owner string) (known, expired bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := entryKey{key, owner}
	if e := s.entries[k]; e != nil {
		return true, !time.Now().Before(e.validUntil.Time())
	}
	l, ok := s.lost[k]
	if !ok {
		return false, false
	}
	return true, !errors.Is(l.cause, report.ErrKeyGone) && !errors.Is(l.cause, report.ErrForceUnlocked)
}

// Oldest returns when the oldest current hold of each synchronizer kind
// (byName: of each synchronizer) was acquired, by Named (Name and Key
// empty unless byName). It walks every entry.
func (s *Scheduler) Oldest(byName bool) map[Named]time.Time {
	out := make(map[Named]time.Time)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.entries {
		if e.count() == 0 {
			continue
		}
		n := e.named()
		if !byName {
			n.Name, n.Key = "", ""
		}
		since := e.since.Time()
		if t, ok := out[n]; !ok || since.Before(t) {
			out[n] = since
		}
	}
	return out
}

// lose forgets e as lost with cause, remembers it for LostCause (if its
// task keeps losses; at most maxLost of them) and returns what reportLost
// needs. s.mu must be held.
func (s *Scheduler) lose(e *Entry, cause error, now time.Time) lostEntry {
	s.forget(e, cause)
	if e.task.KeepLosses {
		if len(s.lost) >= maxLost {
			for k := range s.lost { // any one: an unlock without a record only asks the server
				delete(s.lost, k)
				break
			}
		}
		s.lost[entryKey{e.Key, e.Owner}] = lostHold{at: now, cause: cause}
	}
	return lostEntry{e.Key, e.label, cause}
}

// maxLost bounds the losses remembered for LostCause.
const maxLost = 4096

// pruneLost forgets the losses older than lostMemory. s.mu must be held.
func (s *Scheduler) pruneLost(now time.Time) {
	for k, l := range s.lost {
		if now.Sub(l.at) > lostMemory {
			delete(s.lost, k)
		}
	}
}

// HeldSince returns when the first hold of owner's entry on key was
// acquired (its request sent): the zero time without an entry.
func (s *Scheduler) HeldSince(key, owner string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entries[entryKey{key, owner}]; e != nil {
		return e.since.Time()
	}
	return time.Time{}
}

// mono is an instant on the monotonic clock, counted from epoch: an Entry
// keeps several, and a time.Time is three words, one of them a pointer
// for the collector to follow. The zero mono is "not set".
type mono time.Duration

// monoOf returns t as a mono; the zero time gives the zero mono.
func monoOf(t time.Time) mono {
	if t.IsZero() {
		return 0
	}
	return mono(t.Sub(epoch))
}

// Time returns m as a time.Time, the zero time for the zero mono.
func (m mono) Time() time.Time {
	if m == 0 {
		return time.Time{}
	}
	return epoch.Add(time.Duration(m))
}

// epoch is what a mono counts from.
var epoch = time.Now()

// lookup returns the entry of key and owner, or nil.
func (s *Scheduler) lookup(key, owner string) *Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.entries[entryKey{key, owner}]
}

// Holds returns how many holds owner has on key: 0 when there is no entry,
// or when every hold had a lease and the leases have run out.
func (s *Scheduler) Holds(key, owner string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entries[entryKey{key, owner}]; e != nil {
		return e.count()
	}
	return 0
}

// Guard derives from parent a context cancelled when owner's hold on key
// ends: with a cause wrapping Task.Lost and the reason if lost (or its
// explicit lease ran out), context.Canceled if released. ok is false, and
// ctx nil, without an entry.
func (s *Scheduler) Guard(parent context.Context, key, owner string) (ctx context.Context, ok bool) {
	return s.GuardNamed(parent, key, owner, Label{})
}

// GuardNamed is Guard whose loss cause names the synchronizer as says: the
// *interlock.Error of its kind, Op lost and name (report.Wrap) around the
// cause Guard gives. A zero as names nothing.
func (s *Scheduler) GuardNamed(parent context.Context, key, owner string, as Label) (ctx context.Context, ok bool) {
	e := s.lookup(key, owner)
	if e == nil {
		return nil, false
	}
	return e.guard(parent, as), true
}

// Remaining returns how long owner's hold on key is still certainly valid on
// the server, measured from when the last TTL was sent; 0 when there is no
// entry or its validity ran out. It sends nothing.
func (s *Scheduler) Remaining(key, owner string) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entries[entryKey{key, owner}]; e != nil {
		return e.remaining()
	}
	return 0
}

// Outcome is what an unlock did on the server.
type Outcome int

const (
	// Unknown: the unlock failed without an answer. The hold is no
	// longer counted; an entry left with none is not renewed and is lost
	// when its validity ends, unless a later unlock of it answers first.
	Unknown Outcome = iota
	// Decremented: one hold was released and others remain.
	Decremented
	// Released: the lock was released.
	Released
	// NotHeld: the server says the owner holds nothing; the entry is lost.
	NotHeld
)

// Release begins unlocking owner's innermost hold on key. If held, the entry's
// renewal pauses until end and lease is the TTL the remaining holds keep;
// otherwise lease is Config.Lease and end does nothing. Call end exactly once
// with the unlock's Outcome (defer it); calls after the first are ignored.
func (s *Scheduler) Release(key, owner string) (lease time.Duration, held bool, end func(Outcome)) {
	s.mu.Lock()
	e := s.entries[entryKey{key, owner}]
	if e == nil {
		s.mu.Unlock()
		return s.cfg.Lease, false, func(Outcome) {}
	}
	lease = e.beginRelease()
	s.mu.Unlock()
	ended := false // the closure is made after s.mu is let go, as HoldLabeled's entry is
	return lease, true, func(o Outcome) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !ended {
			ended = true
			e.endRelease(o)
		}
	}
}

// Forcing records that key is being force-unlocked through this
// Scheduler's client until done is called: a hold of key found gone
// meanwhile, by a renewal round or a release that ran before Drop, was
// lost to the forced unlock (report.ErrForceUnlocked).
func (s *Scheduler) Forcing(key string) (done func()) {
	s.mu.Lock()
	if s.forcing == nil {
		s.forcing = make(map[string]int)
	}
	s.forcing[key]++
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		if s.forcing[key]--; s.forcing[key] == 0 {
			delete(s.forcing, key)
		}
		s.mu.Unlock()
	}
}

// goneCause is the cause of e's loss when the server no longer has it:
// report.ErrForceUnlocked while its key is being force-unlocked, else
// e.goneCause. s.mu must be held.
func (s *Scheduler) goneCause(e *Entry, now time.Time) error {
	if s.forcing[e.Key] > 0 {
		return e.task.lostBy(report.ErrForceUnlocked, nil)
	}
	return e.goneCause(now)
}

// Drop ends every entry of key, whatever its owner, as lost with
// report.ErrForceUnlocked, for a forced unlock or a delete, and reports
// the losses.
func (s *Scheduler) Drop(key string) {
	var lost []lostEntry
	now := time.Now()
	s.mu.Lock()
	for k, e := range s.entries {
		if k.key == key {
			lost = append(lost, s.lose(e, e.task.lostBy(report.ErrForceUnlocked, nil), now))
		}
	}
	s.mu.Unlock()
	s.reportLost(lost)
}

// forget removes e and ends its context. s.mu must be held.
func (s *Scheduler) forget(e *Entry, cause error) {
	k := entryKey{e.Key, e.Owner}
	if s.entries[k] == e {
		delete(s.entries, k)
		s.maxHolds.remove(e)
		e.end(cause)
	}
}
