package renewal

import (
	"context"
	"time"
)

// LookupEntry returns the entry of key and owner, or nil, so tests can tell
// one entry from the next.
func LookupEntry(s *Scheduler, key, owner string) *Entry { return s.lookup(key, owner) }

// EntryRemaining is e's remaining validity, also once e has ended.
func EntryRemaining(e *Entry) time.Duration {
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	return e.remaining()
}

// MaxLost is maxLost, for tests.
const MaxLost = maxLost

// LostLen returns how many losses s remembers.
func LostLen(s *Scheduler) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.lost)
}

// GuardsLen returns how many guards e keeps registered and shared.
func GuardsLen(e *Entry) (registered, shared int) {
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	return len(e.guards), len(e.shared)
}

// RenewRound sends one renewal round of every watchdog entry at once and
// waits for its replies, for benchmarks (with a lease long enough that no
// tick runs meanwhile).
func RenewRound(ctx context.Context, s *Scheduler) {
	s.renew(ctx, time.Now(), false)
	s.rounds.Wait()
}
