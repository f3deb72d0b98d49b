package interlockotel

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace"

	"github.com/interlock-go/interlock"
)

// Observer turns a Client's events into OpenTelemetry metrics and spans.
// Give it to interlock.WithObserver, to each metric reader as its Producer
// (sdkmetric.WithProducer, or the Prometheus exporter's WithProducer), and
// to Watch for the up-down counters. It is safe for concurrent use, and one
// Observer may serve several Clients.
//
// It aggregates its metrics itself, with atomics, and hands them to the
// readers as they collect: an event costs the lock path a few atomic adds,
// where a record into an SDK instrument costs a few times more (bench S2
// in docs/performance.md). Views of the MeterProvider do not apply to
// them, and they are cumulative. The metrics (attributes in brackets; name
// per WithNames):
//
//	interlock.acquire.duration  histogram, s  time an acquisition waited [kind, name, outcome]
//	interlock.hold.duration     histogram, s  time a hold was held, at the release that ended it [kind, name]
//	interlock.renewal.duration  histogram, s  one watchdog tick's round trips
//	interlock.acquisitions      counter       acquisitions [kind, name, outcome]
//	interlock.releases          counter       releases [kind, name, outcome]
//	interlock.renewals          counter       holds the watchdog renewed or tried to
//	interlock.renewal.failures  counter       of those, the renewals that failed [kind, name]
//	interlock.losses            counter       holds lost without a release [kind, name, reason]
//	interlock.resends           counter       releases resent after a lost reply [kind, name]
//	interlock.refusals          counter       acquisitions refused by safe mode or replica sync [kind, name]
//	interlock.undos             counter       lost-reply acquisitions taken back [kind, name, outcome]
//	interlock.pubsub.failures   counter       subscription failures
//	interlock.pubsub.reconnects counter       subscription connections that came back
//	interlock.holds             up-down       holds the watched Clients keep and renew
//	interlock.waiters           up-down       callers of the watched Clients waiting to acquire
//	interlock.undo.pending      up-down       holds whose clean-up is still pending
//	interlock.pubsub.channels   up-down       channels the watched Clients' waiters listen on
//	interlock.hold.oldest       gauge, s      age of the oldest hold the watched Clients keep now [kind, name]
//
// Outcomes and reasons are interlock's Outcome constants and the Reason
// constants (the package documentation says which go where). The gauges
// are read from the watched Clients when a reader collects
// (interlock.Client.Stats, and OldestHolds, which walks every hold).
//
// Spans: one per acquisition ("acquire <kind>") and per release ("release
// <kind>") whose context carries a sampled span, as its child, from the
// operation's start to its end, with kind, name, outcome, attempts and
// permits, and status Error when the outcome is "error". Under an
// unsampled span none is made, as a parent-based sampler would decide,
// without the cost of asking the tracer.
type Observer struct {
	tracer                 trace.Tracer
	names                  func(string) string
	dropNames              bool
	rootSpans              bool
	start                  time.Time
	waitBounds, holdBounds []float64

	sets                                  sets
	renewDur                              *hist
	nRenewals, nRenewFailures             atomic.Int64
	nPubSubFailures, nPubSubReconnections atomic.Int64

	mu      sync.Mutex
	clients map[*interlock.Client]int // watched, with how many Watch calls
}

var (
	_ interlock.Observer = (*Observer)(nil)
	_ sdkmetric.Producer = (*Observer)(nil)
)

// NewObserver returns an Observer whose metrics start now, with its spans
// going to the TracerProvider (otel's global one by default).
func NewObserver(opts ...Option) *Observer {
	var c config
	for _, o := range opts {
		o(&c)
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	o := &Observer{
		tracer:     c.tp.Tracer(ScopeName, trace.WithInstrumentationVersion(version())),
		names:      c.names,
		dropNames:  c.dropNames,
		rootSpans:  c.rootSpans,
		start:      time.Now(),
		waitBounds: c.waitBounds,
		holdBounds: c.holdBounds,
		clients:    map[*interlock.Client]int{},
	}
	if o.waitBounds == nil {
		o.waitBounds = defaultWaitBuckets
	}
	if o.holdBounds == nil {
		o.holdBounds = defaultHoldBuckets
	}
	o.renewDur = newHist(o.waitBounds)
	return o
}

// Watch adds c's Stats (holds, waiters, pending clean-ups, channels) to the
// up-down counters, summed over the watched Clients, and its oldest holds
// (interlock.Client.OldestHolds) to interlock.hold.oldest, the oldest over
// the watched Clients, until stop is called. They have no data while no
// Client is watched; the gauge has none for a kind (or name) not held.
func (o *Observer) Watch(c *interlock.Client) (stop func()) {
	o.mu.Lock()
	o.clients[c]++
	o.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			o.mu.Lock()
			defer o.mu.Unlock()
			if o.clients[c]--; o.clients[c] <= 0 {
				delete(o.clients, c)
			}
		})
	}
}

// Observe records e: it implements interlock.Observer. It never blocks
// beyond what the TracerProvider's span End does.
func (o *Observer) Observe(ctx context.Context, e interlock.Event) {
	switch e.Op {
	case interlock.OpAcquire:
		a := o.attrs(&e, true)
		a.n[cAcquisitions].Add(1)
		histogram(&a.wait, o.waitBounds).record(e.Duration.Seconds())
		o.span(ctx, &e, a, true)
	case interlock.OpRelease:
		ns := o.sets.named(e.Name)
		a := o.sets.in(ns, o.names, string(e.Kind), e.Name, e.Outcome, true)
		a.n[cReleases].Add(1)
		if e.Held > 0 && (e.Outcome == interlock.OutcomeReleased || e.Outcome == interlock.OutcomeDecremented || e.Outcome == interlock.OutcomeTransferred) {
			histogram(&o.sets.in(ns, o.names, string(e.Kind), e.Name, "", false).hold, o.holdBounds).record(e.Held.Seconds())
		}
		o.span(ctx, &e, a, false)
	case interlock.OpRenew:
		o.nRenewals.Add(int64(e.Entries))
		named := 0
		for _, f := range e.Failed {
			o.sets.get(o.names, string(f.Kind), f.Name, "", false).n[cRenewFailures].Add(int64(f.Holds))
			named += f.Holds
		}
		if rest := e.Failures - named; rest > 0 {
			o.nRenewFailures.Add(int64(rest))
		}
		o.renewDur.record(e.Duration.Seconds())
	case interlock.OpLost:
		o.sets.getReason(o.names, string(e.Kind), e.Name, reason(e.Err)).n[cLosses].Add(1)
	case interlock.OpResend:
		o.attrs(&e, false).n[cResends].Add(1)
	case interlock.OpRefused:
		o.attrs(&e, false).n[cRefusals].Add(1)
	case interlock.OpUndo:
		o.attrs(&e, true).n[cUndos].Add(1)
	case interlock.OpPubSub:
		if e.Outcome == interlock.OutcomeOK {
			o.nPubSubReconnections.Add(1)
		} else {
			o.nPubSubFailures.Add(1)
		}
	}
}

// attrs is e's attribute set: kind, name (per the name mode) and, with
// outcome, the outcome.
func (o *Observer) attrs(e *interlock.Event, outcome bool) *attrSet {
	return o.sets.get(o.names, string(e.Kind), e.Name, e.Outcome, outcome)
}

// The counters with attributes, by index.
var counterInfo = [numCounters]struct{ name, unit, desc string }{
	cAcquisitions:  {"interlock.acquisitions", "{acquisition}", "Acquisitions, by outcome."},
	cReleases:      {"interlock.releases", "{release}", "Releases, by outcome."},
	cLosses:        {"interlock.losses", "{loss}", "Holds that ended without their owner's release, by reason."},
	cRenewFailures: {"interlock.renewal.failures", "{renewal}", "Renewals that failed; the watchdog tries again next tick."},
	cResends:       {"interlock.resends", "{resend}", "Releases resent after a lost reply."},
	cRefusals:      {"interlock.refusals", "{refusal}", "Acquisitions that safe mode or replica sync refused and took back."},
	cUndos:         {"interlock.undos", "{undo}", "Acquisitions whose reply was lost, taken back by the undo queue."},
}

// Produce returns the metrics as they are now, cumulative since
// NewObserver: it implements sdkmetric.Producer, for the readers.
func (o *Observer) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	now := time.Now()
	// Names that map to one value (WithNameFunc, DropNames, names past the
	// cache's bound) share an attribute set: their data merge.
	type agg struct {
		set        attribute.Set
		n          [numCounters]int64
		wait, hold snapshot
	}
	aggs := map[attribute.Distinct]*agg{}
	var order []*agg
	o.sets.each(func(a *attrSet) {
		g := aggs[a.set.Equivalent()]
		if g == nil {
			g = &agg{set: a.set}
			aggs[a.set.Equivalent()] = g
			order = append(order, g)
		}
		for i := range a.n {
			g.n[i] += a.n[i].Load()
		}
		if h := a.wait.Load(); h != nil {
			h.addTo(&g.wait)
		}
		if h := a.hold.Load(); h != nil {
			h.addTo(&g.hold)
		}
	})

	var ms []metricdata.Metrics
	histogram := func(name, desc string, bounds []float64, pts []histPoint) {
		var dps []metricdata.HistogramDataPoint[float64]
		for _, p := range pts {
			if p.s.count == 0 {
				continue
			}
			dps = append(dps, metricdata.HistogramDataPoint[float64]{
				Attributes: p.set, StartTime: o.start, Time: now,
				Count: p.s.count, Bounds: bounds, BucketCounts: p.s.counts, Sum: p.s.sum,
				Min: metricdata.NewExtrema(p.s.min), Max: metricdata.NewExtrema(p.s.max),
			})
		}
		if len(dps) > 0 {
			ms = append(ms, metricdata.Metrics{Name: name, Description: desc, Unit: "s",
				Data: metricdata.Histogram[float64]{DataPoints: dps, Temporality: metricdata.CumulativeTemporality}})
		}
	}
	sum := func(name, unit, desc string, monotonic bool, dps []metricdata.DataPoint[int64]) {
		if len(dps) > 0 {
			ms = append(ms, metricdata.Metrics{Name: name, Description: desc, Unit: unit,
				Data: metricdata.Sum[int64]{DataPoints: dps, Temporality: metricdata.CumulativeTemporality, IsMonotonic: monotonic}})
		}
	}
	point := func(set attribute.Set, n int64) metricdata.DataPoint[int64] {
		return metricdata.DataPoint[int64]{Attributes: set, StartTime: o.start, Time: now, Value: n}
	}

	var waits, holds []histPoint
	for _, g := range order {
		waits = append(waits, histPoint{g.set, g.wait})
		holds = append(holds, histPoint{g.set, g.hold})
	}
	histogram("interlock.acquire.duration", "Time an acquisition waited, from the call to its outcome.", o.waitBounds, waits)
	histogram("interlock.hold.duration", "Time a hold was held, from its owner's first acquisition to the release that ended it.", o.holdBounds, holds)
	var renew snapshot
	o.renewDur.addTo(&renew)
	histogram("interlock.renewal.duration", "Time one watchdog tick took to renew its holds.", o.waitBounds,
		[]histPoint{{*attribute.EmptySet(), renew}})

	empty := *attribute.EmptySet()
	for i, c := range counterInfo {
		var dps []metricdata.DataPoint[int64]
		for _, g := range order {
			if g.n[i] > 0 {
				dps = append(dps, point(g.set, g.n[i]))
			}
		}
		if i == cRenewFailures {
			// Failures no event named, and a zero while there are none.
			if n := o.nRenewFailures.Load(); n > 0 || len(dps) == 0 {
				dps = append(dps, point(empty, n))
			}
		}
		sum(c.name, c.unit, c.desc, true, dps)
	}
	for _, c := range []struct {
		name, unit, desc string
		n                *atomic.Int64
	}{
		{"interlock.renewals", "{renewal}", "Holds the watchdog renewed or tried to renew.", &o.nRenewals},
		{"interlock.pubsub.failures", "{failure}", "Subscription failures; waiters resubscribe or poll.", &o.nPubSubFailures},
		{"interlock.pubsub.reconnects", "{reconnect}", "Subscription connections that came back.", &o.nPubSubReconnections},
	} {
		sum(c.name, c.unit, c.desc, true, []metricdata.DataPoint[int64]{point(empty, c.n.Load())})
	}

	if st, ok := o.stats(); ok {
		for _, g := range []struct {
			name, unit, desc string
			n                int
		}{
			{"interlock.holds", "{hold}", "Holds the watched Clients keep and renew.", st.Holds},
			{"interlock.waiters", "{waiter}", "Callers of the watched Clients waiting to acquire.", st.Waiters},
			{"interlock.undo.pending", "{hold}", "Holds whose clean-up is still pending.", st.UndoQueue},
			{"interlock.pubsub.channels", "{channel}", "Pub/sub channels the watched Clients' waiters listen on.", st.Channels},
		} {
			sum(g.name, g.unit, g.desc, false, []metricdata.DataPoint[int64]{point(empty, int64(g.n))})
		}
		var dps []metricdata.DataPoint[float64]
		for _, a := range o.oldest() {
			dps = append(dps, metricdata.DataPoint[float64]{Attributes: a.set, Time: now, Value: a.age.Seconds()})
		}
		if len(dps) > 0 {
			ms = append(ms, metricdata.Metrics{Name: "interlock.hold.oldest", Unit: "s",
				Description: "Age of the oldest hold the watched Clients keep now, from its owner's first acquisition.",
				Data:        metricdata.Gauge[float64]{DataPoints: dps}})
		}
	}
	return []metricdata.ScopeMetrics{{Scope: instrumentation.Scope{Name: ScopeName, Version: version()}, Metrics: ms}}, nil
}

// heldAge is one point of interlock.hold.oldest.
type heldAge struct {
	set attribute.Set
	age time.Duration
}

// oldest returns the age of the oldest hold of the watched Clients by
// kind, and by name unless names are dropped: a name the Observer keeps
// no attribute sets for (past maxNames) counts under its kind alone, and
// names mapped to one value share a point, the oldest.
func (o *Observer) oldest() []heldAge {
	o.mu.Lock()
	clients := make([]*interlock.Client, 0, len(o.clients))
	for c := range o.clients {
		clients = append(clients, c)
	}
	o.mu.Unlock()
	points := map[attribute.Distinct]*heldAge{}
	var order []*heldAge
	for _, c := range clients {
		for _, h := range c.OldestHolds(!o.dropNames) {
			kv := []attribute.KeyValue{KeyKind.String(string(h.Kind))}
			if h.Name != "" {
				if _, known := o.sets.byName.Load(h.Name); known {
					n := h.Name
					if o.names != nil {
						n = o.names(n)
					}
					if n != "" {
						kv = append(kv, KeyName.String(n))
					}
				}
			}
			set := attribute.NewSet(kv...)
			if p := points[set.Equivalent()]; p != nil {
				p.age = max(p.age, h.Age)
				continue
			}
			p := &heldAge{set: set, age: h.Age}
			points[set.Equivalent()] = p
			order = append(order, p)
		}
	}
	out := make([]heldAge, len(order))
	for i, p := range order {
		out[i] = *p
	}
	return out
}

type histPoint struct {
	set attribute.Set
	s   snapshot
}

// stats sums the watched Clients' Stats; false when none is watched.
func (o *Observer) stats() (interlock.Stats, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var sum interlock.Stats
	for c := range o.clients {
		s := c.Stats()
		sum.Holds += s.Holds
		sum.Waiters += s.Waiters
		sum.UndoQueue += s.UndoQueue
		sum.Channels += s.Channels
	}
	return sum, len(o.clients) > 0
}
