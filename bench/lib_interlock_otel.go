package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"math"
	"slices"

	"github.com/redis/rueidis"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/interlockotel"
)

// interlock with OpenTelemetry on: the interlock row's Session, with an
// interlockotel.Observer on its Client, read by a ManualReader of an SDK
// MeterProvider (so no export runs during a cell), its spans going to an
// SDK TracerProvider (its default parent-based sampler, spans batched to
// an exporter that drops them), and its Client watched for the gauges.
// The scenarios' callers carry no span, so "interlock+otel" makes none;
// in the "traced" rows every Lock and Unlock runs under a caller's span
// context, one pair in sampleEvery sampled (two spans). The rows' "×
// interlock" column is the overhead, measured interleaved with the
// interlock row. They run only when named in -libs.
type interlockOtelLib struct {
	name        string
	sampleEvery int // 0: callers carry no span context
}

func init() {
	Register(11, interlockOtelLib{name: "interlock+otel"})
	Register(12, interlockOtelLib{name: "interlock+otel traced 10%", sampleEvery: 10})
	Register(13, interlockOtelLib{name: "interlock+otel traced 100%", sampleEvery: 1})
}

func (l interlockOtelLib) Name() string { return l.name }
func (interlockOtelLib) OptIn()         {}

func (l interlockOtelLib) Open(_ context.Context, addr string) (Session, error) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(dropSpans{}))
	obs := interlockotel.NewObserver(interlockotel.WithTracerProvider(tp))
	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(obs))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		return nil, err
	}
	cnt := newCountingClient(rc)
	c, err := interlock.New(cnt, interlock.WithObserver(obs))
	if err != nil {
		rc.Close()
		return nil, err
	}
	return &otelSession{
		interlockSession: &interlockSession{rc: rc, cnt: cnt, c: c}, every: l.sampleEvery,
		obs: obs, reader: reader, mp: mp, tp: tp, unwatch: obs.Watch(c),
	}, nil
}

type otelSession struct {
	*interlockSession
	every   int // one Lock+Unlock in every is sampled; 0: no span context
	obs     *interlockotel.Observer
	reader  *sdkmetric.ManualReader
	mp      *sdkmetric.MeterProvider
	tp      *sdktrace.TracerProvider
	unwatch func()
}

func (s *otelSession) Mutex(name string) Mutex { return s.traced(s.interlockSession.Mutex(name)) }
func (s *otelSession) FairMutex(name string) Mutex {
	return s.traced(s.interlockSession.FairMutex(name))
}
func (s *otelSession) ReadMutex(name string) Mutex {
	return s.traced(s.interlockSession.ReadMutex(name))
}
func (s *otelSession) Permit(kind LockKind, name string) Mutex {
	return s.traced(s.interlockSession.Permit(kind, name))
}

func (s *otelSession) Close() error {
	s.unwatch()
	err := s.interlockSession.Close()
	_ = s.tp.Shutdown(context.Background())
	_ = s.mp.Shutdown(context.Background())
	return err
}

// CellDone compares, for a one-process contended cell, the p99 wait of
// the bench's own samples with the p99 read from the cell's
// interlock.acquire.duration histogram (the cell's lock name is its own).
func (s *otelSession) CellDone(c Cell, smp Sample) string {
	if !c.Scenario.Wait || c.Scenario.Procs > 1 || len(smp.Lat) == 0 {
		return ""
	}
	var rm metricdata.ResourceMetrics
	if err := s.reader.Collect(context.Background(), &rm); err != nil {
		return err.Error()
	}
	var dp metricdata.HistogramDataPoint[float64]
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			h, ok := m.Data.(metricdata.Histogram[float64])
			if m.Name != "interlock.acquire.duration" || !ok {
				continue
			}
			for _, p := range h.DataPoints {
				n, _ := p.Attributes.Value(interlockotel.KeyName)
				o, _ := p.Attributes.Value(interlockotel.KeyOutcome)
				if n.AsString() == c.Key && o.AsString() == interlock.OutcomeAcquired {
					dp = p
				}
			}
		}
	}
	if dp.Count == 0 {
		return "no acquire.duration data for " + c.Key
	}
	lat := slices.Clone(smp.Lat)
	slices.Sort(lat)
	own := lat[int(math.Ceil(0.99*float64(len(lat))))-1].Seconds()
	est := histQuantile(dp, 0.99)
	return fmt.Sprintf("p99 wait: bench %.2f ms over %d waits, histogram %.2f ms over %d (%+.1f %%)",
		own*1e3, len(lat), est*1e3, dp.Count, (est/own-1)*100)
}

// histQuantile reads the q-quantile from a histogram as Prometheus's
// histogram_quantile does: linear interpolation in the bucket that holds
// rank q·count.
func histQuantile(dp metricdata.HistogramDataPoint[float64], q float64) float64 {
	rank := q * float64(dp.Count)
	var cum float64
	for i, c := range dp.BucketCounts {
		prev := cum
		cum += float64(c)
		if c == 0 || cum < rank {
			continue
		}
		if i == len(dp.Bounds) {
			return dp.Bounds[i-1]
		}
		lo := 0.0
		if i > 0 {
			lo = dp.Bounds[i-1]
		}
		return lo + (dp.Bounds[i]-lo)*(rank-prev)/float64(c)
	}
	return math.NaN()
}

// tracedMutex runs Lock and Unlock under a span context of its own, as a
// caller inside a traced request does: every every-th pair sampled, the
// others not. The contexts carrying them are made once per caller context
// (the harness passes one per cell), since a traced caller's context
// carries its span already. It is used by one goroutine.
type tracedMutex struct {
	m                  Mutex
	every, n           int
	sc                 trace.SpanContext // sampled; unsampled with the same ids
	parent             context.Context
	sampled, unsampled context.Context // parent with sc, and unsampled
	current            context.Context // the pair's
}

func (s *otelSession) traced(m Mutex) Mutex {
	if s.every == 0 {
		return m
	}
	var tid trace.TraceID
	var sid trace.SpanID
	_, _ = rand.Read(tid[:])
	_, _ = rand.Read(sid[:])
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
	return &tracedMutex{m: m, every: s.every, sc: sc}
}

func (t *tracedMutex) Lock(ctx context.Context) error {
	if ctx != t.parent {
		t.parent = ctx
		t.sampled = trace.ContextWithSpanContext(ctx, t.sc)
		t.unsampled = trace.ContextWithSpanContext(ctx, t.sc.WithTraceFlags(0))
	}
	t.n++
	t.current = t.unsampled
	if t.n%t.every == 0 {
		t.current = t.sampled
	}
	return t.m.Lock(t.current)
}

func (t *tracedMutex) Unlock(context.Context) error { return t.m.Unlock(t.current) }

// dropSpans is a span exporter that drops what it is given.
type dropSpans struct{}

func (dropSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (dropSpans) Shutdown(context.Context) error                             { return nil }
