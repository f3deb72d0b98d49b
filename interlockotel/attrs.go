package interlockotel

import (
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"

	"github.com/interlock-go/interlock"
)

// The counters of an attribute set.
const (
	cAcquisitions = iota
	cReleases
	cLosses
	cResends
	cRefusals
	cUndos
	cRenewFailures
	numCounters
)

// attrSet is one attribute set with its counts and histograms, which
// the Observer aggregates itself: an event costs the lock path a few atomic
// adds on the set's memory rather than calls into an SDK.
type attrSet struct {
	set        attribute.Set
	kv         []attribute.KeyValue // kind, name (per the name mode), outcome or reason
	n          [numCounters]atomic.Int64
	wait, hold atomic.Pointer[hist] // made at the first record
}

// histogram returns the histogram in p, made with bounds if there is none.
func histogram(p *atomic.Pointer[hist], bounds []float64) *hist {
	if h := p.Load(); h != nil {
		return h
	}
	p.CompareAndSwap(nil, newHist(bounds))
	return p.Load()
}

// maxNames bounds the names the Observer keeps attribute sets for, and so
// its memory and series. Past it, events of new names count without
// interlock.name.
const maxNames = 4096

// sets caches the attribute sets: by name, then by the index of a known
// kind and outcome (no lookup hashes more than the name); others, and the
// sets of names past maxNames, by their whole key.
type sets struct {
	byName sync.Map // name → *nameSets
	other  sync.Map // attrKey → *attrSet
	names  atomic.Int64
}

type nameSets [numKinds][numOutcomes]atomic.Pointer[attrSet]

type attrKey struct {
	kind, name, outcome string
	withOutcome         bool
	reason              bool // outcome is a loss's reason (KeyReason)
	dropName            bool
}

// get returns the attribute set of kind, name (mapped with names) and,
// withOutcome, outcome: built once, and the same one every time after.
func (s *sets) get(names func(string) string, kind, name, outcome string, withOutcome bool) *attrSet {
	return s.in(s.named(name), names, kind, name, outcome, withOutcome)
}

// getReason returns the attribute set of a loss of kind and name (mapped
// with names) for reason.
func (s *sets) getReason(names func(string) string, kind, name, reason string) *attrSet {
	k := attrKey{kind: kind, name: name, outcome: reason, reason: true}
	if s.named(name) == nil {
		k.name, k.dropName = "", true
	}
	if v, ok := s.other.Load(k); ok {
		return v.(*attrSet)
	}
	v, _ := s.other.LoadOrStore(k, newAttrSet(names, k))
	return v.(*attrSet)
}

// named returns the sets of name, made if need be; nil past maxNames.
func (s *sets) named(name string) *nameSets {
	if v, ok := s.byName.Load(name); ok {
		return v.(*nameSets)
	}
	if s.names.Load() >= maxNames {
		return nil
	}
	v, loaded := s.byName.LoadOrStore(name, new(nameSets))
	if !loaded {
		s.names.Add(1)
	}
	return v.(*nameSets)
}

// in is get with name's sets found (ns, nil when past maxNames).
func (s *sets) in(ns *nameSets, names func(string) string, kind, name, outcome string, withOutcome bool) *attrSet {
	ki, oi := kindIndex(kind), 0
	if withOutcome {
		oi = outcomeIndex(outcome)
	}
	k := attrKey{kind: kind, name: name, outcome: outcome, withOutcome: withOutcome}
	if ki >= 0 && oi >= 0 && ns != nil {
		slot := &ns[ki][oi]
		if a := slot.Load(); a != nil {
			return a
		}
		a := newAttrSet(names, k)
		if slot.CompareAndSwap(nil, a) {
			return a
		}
		return slot.Load()
	}
	if ns == nil {
		k.name, k.dropName = "", true
	}
	if v, ok := s.other.Load(k); ok {
		return v.(*attrSet)
	}
	v, _ := s.other.LoadOrStore(k, newAttrSet(names, k))
	return v.(*attrSet)
}

func newAttrSet(names func(string) string, k attrKey) *attrSet {
	kv := make([]attribute.KeyValue, 0, 3)
	kv = append(kv, KeyKind.String(k.kind))
	if !k.dropName {
		n := k.name
		if names != nil {
			n = names(n)
		}
		if n != "" {
			kv = append(kv, KeyName.String(n))
		}
	}
	switch {
	case k.reason:
		kv = append(kv, KeyReason.String(k.outcome))
	case k.withOutcome:
		kv = append(kv, KeyOutcome.String(k.outcome))
	}
	return &attrSet{set: attribute.NewSet(kv...), kv: kv}
}

// each calls f with every attribute set.
func (s *sets) each(f func(*attrSet)) {
	s.byName.Range(func(_, v any) bool {
		ns := v.(*nameSets)
		for i := range ns {
			for j := range ns[i] {
				if a := ns[i][j].Load(); a != nil {
					f(a)
				}
			}
		}
		return true
	})
	s.other.Range(func(_, v any) bool {
		f(v.(*attrSet))
		return true
	})
}

const numKinds = 13

// kindIndex numbers the known kinds; -1 for any other.
func kindIndex(k string) int {
	switch interlock.Kind(k) {
	case interlock.KindRLock:
		return 0
	case interlock.KindFairLock:
		return 1
	case interlock.KindReadLock:
		return 2
	case interlock.KindWriteLock:
		return 3
	case interlock.KindFenced:
		return 4
	case interlock.KindNonReentrant:
		return 5
	case interlock.KindNonReentrantFair:
		return 6
	case interlock.KindSpin:
		return 7
	case interlock.KindSemaphore:
		return 8
	case interlock.KindExpirable:
		return 9
	case interlock.KindLatch:
		return 10
	case interlock.KindRateLimiter:
		return 11
	case interlock.KindElection:
		return 12
	}
	return -1
}

const numOutcomes = 11

// outcomeIndex numbers the known outcomes from 1 (0 is "no outcome
// attribute"); -1 for any other.
func outcomeIndex(o string) int {
	switch o {
	case interlock.OutcomeAcquired:
		return 1
	case interlock.OutcomeBusy:
		return 2
	case interlock.OutcomeTimedOut:
		return 3
	case interlock.OutcomeCancelled:
		return 4
	case interlock.OutcomeReleased:
		return 5
	case interlock.OutcomeDecremented:
		return 6
	case interlock.OutcomeNotHeld:
		return 7
	case interlock.OutcomeOK:
		return 8
	case interlock.OutcomeError:
		return 9
	case interlock.OutcomeTransferred:
		return 10
	}
	return -1
}
