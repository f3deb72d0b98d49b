package renewal

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/lua"
)

// run is the Scheduler's one goroutine: a tick every Interval until Close
// cancels ctx, which also aborts a tick in flight; and, with MaxHold, one
// timer set to the earliest MaxHold deadline, which ends the entries that
// reached theirs. Hold signals wake when it adds an earlier deadline.
func (s *Scheduler) run(ctx context.Context) {
	defer close(s.done)
	t := time.NewTicker(s.Interval())
	defer t.Stop()
	maxHold := time.NewTimer(time.Hour)
	maxHold.Stop()
	defer maxHold.Stop()
	expire := time.NewTimer(time.Hour)
	expire.Stop()
	defer expire.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.tick(ctx)
		case <-maxHold.C:
			s.expireMaxHolds(time.Now())
		case <-expire.C:
			s.expireFailing(time.Now())
		case <-s.wake:
		}
		if next, ok := s.nextMaxHold(); ok {
			maxHold.Reset(time.Until(next))
		} else {
			maxHold.Stop()
		}
		if next, ok := s.nextFailing(); ok {
			expire.Reset(time.Until(next))
		} else {
			expire.Stop()
		}
	}
}

// nextFailing returns when the first hold whose last renewal failed runs
// out of validity, if any; holds being released are their unlock's to
// settle, as in expireFailing (counting them would spin the timer).
func (s *Scheduler) nextFailing() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var next time.Time
	for _, e := range s.entries {
		if e.failing != nil && e.watchdog > 0 && e.releasing == 0 && (next.IsZero() || e.renewedAt.Before(next)) {
			next = e.renewedAt
		}
	}
	return next.Add(s.cfg.Lease), !next.IsZero()
}

// expireFailing ends, as lost, every hold whose last renewal failed and
// whose lease has passed since the last one that succeeded: between ticks,
// so that the loss is known when the validity ends, not at the next tick.
func (s *Scheduler) expireFailing(now time.Time) {
	var lost []lostEntry
	s.mu.Lock()
	for _, e := range s.entries {
		if e.failing != nil && e.watchdog > 0 && e.releasing == 0 && now.Sub(e.renewedAt) >= s.cfg.Lease {
			cause := fmt.Errorf("%w: not renewed within the lease: %w", e.task.Lost, e.failing)
			s.forget(e, cause)
			lost = append(lost, lostEntry{e.Key, e.label, cause})
		}
	}
	s.mu.Unlock()
	s.reportLost(lost)
}

// group is the set of entries one script call may renew: one task, one slot.
type group struct {
	task *Task
	slot uint16
}

type lostEntry struct {
	key   string
	label *Label
	cause error
}

// tick renews every watchdog entry that is not being released, in one
// DoMulti, and forgets entries whose lease ran out.
func (s *Scheduler) tick(ctx context.Context) {
	now := time.Now()
	s.expireMaxHolds(now)
	var lost []lostEntry
	groups := make(map[group][]*Entry)
	// A server that does not answer (renewals are retried until the tick's
	// deadline) must not delay the loss of a hold past its validity: the
	// tick gives up when the first of its holds would have expired.
	deadline := now.Add(s.Interval())
	s.mu.Lock()
	for _, e := range s.entries {
		if e.releasing > 0 {
			continue
		}
		if e.watchdog == 0 {
			if !now.Before(e.leaseUntil) {
				s.forget(e, e.task.Lost)
				lost = append(lost, lostEntry{e.Key, e.label, e.task.Lost})
			}
			continue
		}
		if v := e.renewedAt.Add(s.cfg.Lease); v.After(now) && v.Before(deadline) {
			deadline = v
		}
		g := group{e.task, e.slot}
		groups[g] = append(groups[g], e)
	}
	s.mu.Unlock()
	s.reportLost(lost)
	if len(groups) == 0 {
		return
	}

	var chunks [][]*Entry
	var cmds rueidis.Commands
	entries := 0
	for g, es := range groups {
		entries += len(es)
		for len(es) > 0 {
			n := min(len(es), s.cfg.BatchSize)
			chunk := es[:n:n]
			es = es[n:]
			k, a := g.task.Args(s.cfg.Lease, chunk)
			chunks = append(chunks, chunk)
			cmds = append(cmds, g.task.Script.EvalSHA(s.rc, k, a))
		}
	}

	tctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	sent := time.Now()
	res := s.rc.DoMulti(tctx, cmds...)
	var again []int
	for i, r := range res {
		if lua.IsNoScript(r.Error()) {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		evals := make(rueidis.Commands, len(again))
		for j, i := range again {
			task := chunks[i][0].task
			k, a := task.Args(s.cfg.Lease, chunks[i])
			evals[j] = task.Script.Eval(s.rc, k, a)
		}
		for j, r := range s.rc.DoMulti(tctx, evals...) {
			res[again[j]] = r
		}
	}
	t := Tick{Entries: entries, Chunks: len(chunks)}
	if s.cfg.Observer != nil {
		t.Duration = time.Since(sent)
	}
	for i, r := range res {
		failed, err := s.apply(chunks[i], r, sent)
		if t.Failures += failed; t.Err == nil {
			t.Err = err
		}
	}
	if s.cfg.Observer != nil {
		s.cfg.Observer.Renewed(t)
	}
}

// apply records one chunk's reply, and returns how many of its entries
// failed (the call's error), lost or not.
func (s *Scheduler) apply(chunk []*Entry, r rueidis.RedisResult, sent time.Time) (int, error) {
	renewed, err := r.AsIntSlice()
	if err == nil && len(renewed) != len(chunk) {
		err = fmt.Errorf("renewal: %d replies for %d locks", len(renewed), len(chunk))
	}
	var lost []lostEntry
	failed := 0
	s.mu.Lock()
	for i, e := range chunk {
		if s.entries[entryKey{e.Key, e.Owner}] != e || e.releasing > 0 || e.watchdog == 0 {
			continue // released or being released meanwhile: its unlock decides
		}
		switch {
		case err == nil && renewed[i] == 1:
			e.renewedAt = sent
			e.validUntil = sent.Add(s.cfg.Lease)
			e.failing = nil
		case err == nil:
			s.forget(e, e.task.Lost)
			lost = append(lost, lostEntry{e.Key, e.label, e.task.Lost})
		case time.Since(e.renewedAt) >= s.cfg.Lease: // judged when the failure is known
			s.forget(e, e.task.Lost)
			lost = append(lost, lostEntry{e.Key, e.label, fmt.Errorf("%w: not renewed within the lease: %w", e.task.Lost, err)})
			failed++
		default:
			e.failing = err
			failed++
		}
	}
	s.mu.Unlock()
	s.reportLost(lost)
	if failed == 0 {
		err = nil
	}
	return failed, err
}

// reportLost tells the Observer of each lost entry.
func (s *Scheduler) reportLost(lost []lostEntry) {
	if o := s.cfg.Observer; o != nil {
		for _, l := range lost {
			o.Lost(l.key, l.label, l.cause)
		}
	}
}
