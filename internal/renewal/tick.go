package renewal

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/report"
	"github.com/interlock-go/interlock/internal/script"
)

// maxRounds bounds the renewal rounds in flight. A round gives up a lease
// after it was sent, when its replies can confirm nothing, so with one
// round per interval (a third of the lease) three are in flight at most,
// and a fourth as the oldest gives up: a slow reply never holds the next
// round back.
const maxRounds = 4

// run is the Scheduler's goroutine: a tick every Interval until Close
// cancels ctx, which also aborts the rounds in flight (joined before run
// returns); one timer set to the earliest end of validity of a watchdog
// hold, which ends the holds no renewal confirmed in time; and, with
// MaxHold, one timer set to the earliest MaxHold deadline. Hold signals
// wake when it adds an earlier MaxHold deadline.
func (s *Scheduler) run(ctx context.Context) {
	defer close(s.done)
	defer s.rounds.Wait()
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
		case <-s.urgent:
			s.renew(ctx, time.Now(), true)
		case <-maxHold.C:
			s.expireMaxHolds(time.Now())
		case <-expire.C:
			s.expireUnconfirmed(time.Now())
		case <-s.wake:
		}
		if next, ok := s.nextMaxHold(); ok {
			maxHold.Reset(time.Until(next))
		} else {
			maxHold.Stop()
		}
		if next, ok := s.nextExpiry(); ok {
			expire.Reset(time.Until(next))
		} else {
			expire.Stop()
		}
	}
}

// nextExpiry returns when the first entry that ends with its validity is
// lost unconfirmed (Entry.lostAt), if any.
func (s *Scheduler) nextExpiry() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var next time.Time
	for _, e := range s.entries {
		if e.endsWithValidity() && (next.IsZero() || e.lostAt().Before(next)) {
			next = e.lostAt()
		}
	}
	return next, !next.IsZero()
}

// expireUnconfirmed ends, as lost, every entry that ends with its validity
// (Entry.endsWithValidity) once that validity has ended without a
// confirmed renewal (and without a renewal still in flight that could
// confirm it, Entry.lostAt): the server's TTL may have run out, so the
// hold is lost at that moment. A hold being released is lost too: its
// unlock, not yet answered, may come too late; it still reports what the
// server did.
func (s *Scheduler) expireUnconfirmed(now time.Time) {
	var lost []lostEntry
	s.mu.Lock()
	for _, e := range s.entries {
		if e.endsWithValidity() && !now.Before(e.lostAt()) {
			lost = append(lost, s.lose(e, e.task.lostBy(report.ErrNotRenewed, e.failing), now))
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

// tick ends the holds whose lease ran out and renews the others.
func (s *Scheduler) tick(ctx context.Context) {
	now := time.Now()
	s.expireMaxHolds(now)
	s.expireUnconfirmed(now)
	s.renew(ctx, now, false)
}

// checkUrgent asks run for a round before the next tick when e's validity
// ends within two intervals: its acquisition or partial release answered
// late, and a renewal sent at the next tick might come back after the
// validity ended. s.mu must be held.
func (s *Scheduler) checkUrgent(e *Entry) {
	if time.Until(e.validUntil.Time()) < 2*s.Interval() {
		select {
		case s.urgent <- struct{}{}:
		default:
		}
	}
}

// renew starts a round that renews every watchdog entry not being
// released (urgent: only those whose validity ends within two intervals),
// in one DoMulti, unless maxRounds are still in flight. It forgets the
// lease-only entries whose lease has passed.
func (s *Scheduler) renew(ctx context.Context, now time.Time, urgent bool) {
	var lost []lostEntry
	groups := make(map[group][]*Entry)
	s.mu.Lock()
	s.pruneLost(now)
	for _, e := range s.entries {
		if e.releasing > 0 || len(e.holds) == 0 {
			// An unlock in flight, or only a hold whose unlock got no
			// answer: that one lives out its validity.
			continue
		}
		if e.watchdog == 0 {
			if !now.Before(e.leaseUntil.Time()) {
				lost = append(lost, s.lose(e, e.task.lostBy(report.ErrLeaseExpired, nil), now))
			}
			continue
		}
		if urgent && e.validUntil.Time().Sub(now) >= 2*s.Interval() {
			continue
		}
		g := group{e.task, e.slot}
		groups[g] = append(groups[g], e)
	}
	busy := s.inFlight >= maxRounds
	sent := time.Now()
	if len(groups) > 0 && !busy {
		s.inFlight++
		for _, es := range groups {
			for _, e := range es {
				e.renewing = monoOf(sent)
			}
		}
	}
	s.mu.Unlock()
	s.reportLost(lost)
	if len(groups) == 0 || busy {
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
	s.rounds.Go(func() {
		defer func() {
			s.mu.Lock()
			s.inFlight--
			s.mu.Unlock()
		}()
		s.round(ctx, sent, chunks, cmds, entries)
	})
}

// round sends one tick's renewals and applies their replies, which may
// come after the next round was sent.
func (s *Scheduler) round(ctx context.Context, sent time.Time, chunks [][]*Entry, cmds rueidis.Commands, entries int) {
	res := s.send(ctx, cmds)
	sentAt := slices.Repeat([]time.Time{sent}, len(res))
	var again []int
	for i, r := range res {
		if script.IsNoScript(r.Error()) {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		// The EVAL sent after NOSCRIPT is a renewal of its own: what it
		// confirms counts from when it was sent.
		resent := time.Now()
		evals := make(rueidis.Commands, len(again))
		s.mu.Lock()
		for j, i := range again {
			for _, e := range chunks[i] {
				if e.renewing == monoOf(sent) {
					e.renewing = monoOf(resent)
				}
			}
			task := chunks[i][0].task
			k, a := task.Args(s.cfg.Lease, chunks[i])
			evals[j] = task.Script.Eval(s.rc, k, a)
		}
		s.mu.Unlock()
		for j, r := range s.send(ctx, evals) {
			res[again[j]], sentAt[again[j]] = r, resent
		}
	}
	t := Tick{Entries: entries, Chunks: len(chunks)}
	if s.cfg.Observer != nil {
		t.Duration = time.Since(sent)
	}
	for i, r := range res {
		failed, err := s.apply(chunks[i], r, sentAt[i])
		if t.Failures += failed; t.Err == nil {
			t.Err = err
		}
		if failed > 0 && s.cfg.Observer != nil {
			if t.Failed == nil {
				t.Failed = make(map[Named]int)
			}
			for _, e := range chunks[i] {
				t.Failed[e.named()]++
			}
		}
	}
	if s.cfg.Observer != nil {
		s.cfg.Observer.Renewed(t)
	}
}

// send runs cmds in one DoMulti, given up a lease after it was sent: its
// replies can confirm nothing later. That limit is a timer rather than a
// context deadline: rueidis sends a call whose context has a deadline
// synchronously on an idle connection, where Close could not cancel it.
func (s *Scheduler) send(ctx context.Context, cmds rueidis.Commands) []rueidis.RedisResult {
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	limit := time.AfterFunc(s.cfg.Lease, cancel)
	defer limit.Stop()
	return s.cfg.Send(tctx, cmds...)
}

// apply records one chunk's reply, and returns how many of its entries
// failed (the call's error), whether still held or not. A renewal
// confirmed before the hold was lost (Entry.lostAt) makes it valid for a
// lease from when it was sent.
func (s *Scheduler) apply(chunk []*Entry, r rueidis.RedisResult, sent time.Time) (int, error) {
	renewed, err := r.AsIntSlice()
	if err == nil && len(renewed) != len(chunk) {
		err = fmt.Errorf("renewal: %d replies for %d locks", len(renewed), len(chunk))
	}
	var lost []lostEntry
	failed := 0
	now := time.Now()
	s.mu.Lock()
	for i, e := range chunk {
		if e.renewing == monoOf(sent) {
			e.renewing = 0 // this round has answered
		}
		if err != nil {
			failed++
		}
		if s.entries[entryKey{e.Key, e.Owner}] != e || e.releasing > 0 || e.watchdog == 0 {
			continue // released, lost or being released meanwhile: its unlock decides
		}
		switch {
		case err == nil && renewed[i] == 1 && now.Before(e.lostAt()):
			e.setTTL(sent, s.cfg.Lease)
			e.failing = nil
		case err == nil && renewed[i] == 1: // confirmed too late: the lease may have ended
			lost = append(lost, s.lose(e, e.task.lostBy(report.ErrNotRenewed, errConfirmedLate), now))
		case err == nil:
			lost = append(lost, s.lose(e, s.goneCause(e, now), now))
		default:
			e.failing = err
		}
	}
	s.mu.Unlock()
	s.reportLost(lost)
	if failed == 0 {
		err = nil
	}
	return failed, err
}

// errConfirmedLate is the detail of a loss whose renewal was confirmed
// after the hold's validity ended.
var errConfirmedLate = errors.New("renewal confirmed after the lease ended")

// reportLost tells the Observer of each lost entry.
func (s *Scheduler) reportLost(lost []lostEntry) {
	if o := s.cfg.Observer; o != nil {
		for _, l := range lost {
			o.Lost(l.key, l.label, l.cause)
		}
	}
}
