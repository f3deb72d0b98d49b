package interlockotel_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/interlockotel"
)

type dropSpans struct{}

func (dropSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (dropSpans) Shutdown(context.Context) error                             { return nil }

// BenchmarkObserve is the cost of one acquire and one release event on
// 64 names (as bench S2's 64 goroutines on distinct keys): the metrics
// alone, under an unsampled span, and under a sampled one (two spans).
func BenchmarkObserve(b *testing.B) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: [16]byte{1}, SpanID: [8]byte{1}, TraceFlags: trace.FlagsSampled, Remote: true})
	for _, tc := range []struct {
		name string
		ctx  context.Context
	}{
		{"metrics", context.Background()},
		{"unsampled", trace.ContextWithSpanContext(context.Background(), sc.WithTraceFlags(0))},
		{"sampled", trace.ContextWithSpanContext(context.Background(), sc)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var tp trace.TracerProvider = tracenoop.NewTracerProvider()
			if tc.name != "metrics" {
				sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(dropSpans{}))
				defer sdk.Shutdown(context.Background())
				tp = sdk
			}
			obs := interlockotel.NewObserver(interlockotel.WithTracerProvider(tp))
			var acq, rel [64]interlock.Event
			for i := range acq {
				name := fmt.Sprintf("lockbench:S2:interlock:r0:%d", i)
				acq[i] = interlock.Event{Op: interlock.OpAcquire, Kind: interlock.KindRLock, Name: name, Outcome: interlock.OutcomeAcquired, Duration: time.Millisecond, Attempts: 1}
				rel[i] = interlock.Event{Op: interlock.OpRelease, Kind: interlock.KindRLock, Name: name, Outcome: interlock.OutcomeReleased, Duration: time.Millisecond, Held: time.Millisecond, Attempts: 1}
			}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					obs.Observe(tc.ctx, acq[i%64])
					obs.Observe(tc.ctx, rel[i%64])
					i += 7
				}
			})
		})
	}
}
