package interlockotel

import (
	"math"
	"slices"
	"sort"
	"sync/atomic"
)

// hist is an explicit-bucket histogram aggregated with atomics: a record
// is a binary search and four atomic updates on memory the event's
// attribute set already brought in.
type hist struct {
	bounds   []float64
	counts   []atomic.Uint64 // len(bounds)+1; the last is (last bound, +Inf)
	sum      atomic.Uint64   // float64 bits
	min, max atomic.Uint64   // float64 bits; valid once a count is non-zero
}

func newHist(bounds []float64) *hist {
	h := &hist{bounds: bounds, counts: make([]atomic.Uint64, len(bounds)+1)}
	h.min.Store(math.Float64bits(math.Inf(1)))
	h.max.Store(math.Float64bits(math.Inf(-1)))
	return h
}

func (h *hist) record(v float64) {
	h.counts[sort.SearchFloat64s(h.bounds, v)].Add(1)
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			break
		}
	}
	for {
		old := h.min.Load()
		if v >= math.Float64frombits(old) || h.min.CompareAndSwap(old, math.Float64bits(v)) {
			break
		}
	}
	for {
		old := h.max.Load()
		if v <= math.Float64frombits(old) || h.max.CompareAndSwap(old, math.Float64bits(v)) {
			break
		}
	}
}

// snapshot is a histogram read at one time, or several merged.
type snapshot struct {
	counts   []uint64
	count    uint64
	sum      float64
	min, max float64
}

// addTo adds h to s (s.counts nil: s is empty).
func (h *hist) addTo(s *snapshot) {
	if s.counts == nil {
		s.counts = make([]uint64, len(h.counts))
		s.min, s.max = math.Inf(1), math.Inf(-1)
	}
	for i := range h.counts {
		n := h.counts[i].Load()
		s.counts[i] += n
		s.count += n // the count is the buckets' sum, whatever records are under way
	}
	s.sum += math.Float64frombits(h.sum.Load())
	s.min = min(s.min, math.Float64frombits(h.min.Load()))
	s.max = max(s.max, math.Float64frombits(h.max.Load()))
}

// defaultWaitBuckets are the default bucket boundaries (seconds) of the
// acquisition wait and renewal histograms (WithWaitBuckets): 13, from
// 0.5ms to 10s, about one per factor of 2.5.
var defaultWaitBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10}

// defaultHoldBuckets are the default boundaries (seconds) of the hold
// histogram (WithHoldBuckets): 12, from 10ms to an hour.
var defaultHoldBuckets = []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600}

// buckets returns bounds sorted, without duplicates or values that are
// not finite; def when none is left.
func buckets(bounds, def []float64) []float64 {
	out := make([]float64, 0, len(bounds))
	for _, b := range bounds {
		if !math.IsNaN(b) && !math.IsInf(b, 0) {
			out = append(out, b)
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) == 0 {
		return def
	}
	return out
}
