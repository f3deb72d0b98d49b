package interlockotel

import (
	"math"
	"sort"
	"strconv"
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

// waitBuckets are the bucket boundaries (seconds) of the acquisition wait
// and renewal histograms: four per octave from 100µs to 1.6s, so that a
// quantile read from the histogram is within 19 % of the true one there,
// then 2.5s to 5 minutes.
var waitBuckets = append(octaves(0.0001, 14, 4), 2.5, 5, 10, 20, 30, 60, 120, 300)

// holdBuckets are the hold histogram's boundaries: waitBuckets, then up to
// an hour.
var holdBuckets = append(append([]float64(nil), waitBuckets...), 600, 1800, 3600)

// octaves returns from·2^(i/per) for i in [0, n·per], each rounded to 3
// significant digits.
func octaves(from float64, n, per int) []float64 {
	out := make([]float64, 0, n*per+1)
	for i := 0; i <= n*per; i++ {
		v := from * math.Pow(2, float64(i)/float64(per))
		p := math.Pow(10, 2-math.Floor(math.Log10(v)))
		r, _ := strconv.ParseFloat(strconv.FormatFloat(math.Round(v*p)/p, 'g', 3, 64), 64)
		out = append(out, r)
	}
	return out
}
