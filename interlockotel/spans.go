package interlockotel

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/interlock-go/interlock"
)

// spanKind is the option every span gets.
var spanKind = trace.WithSpanKind(trace.SpanKindInternal)

// span records e as a span that ended now and began e.Duration ago: under
// a sampled parent, or without one when rootSpans. Its attributes are set
// once the tracer has decided to record it.
func (o *Observer) span(ctx context.Context, e *interlock.Event, a *attrSet, acquire bool) {
	if sc := trace.SpanContextFromContext(ctx); !sc.IsSampled() && (sc.IsValid() || !o.rootSpans) {
		return
	}
	end := time.Now()
	_, sp := o.tracer.Start(ctx, spanName(string(e.Kind), acquire), trace.WithTimestamp(end.Add(-e.Duration)), spanKind)
	if !sp.IsRecording() {
		sp.End()
		return
	}
	var buf [5]attribute.KeyValue
	kv := append(append(buf[:0], a.kv...), KeyAttempts.Int(e.Attempts))
	if e.Permits > 0 {
		kv = append(kv, KeyPermits.Int(e.Permits))
	}
	sp.SetAttributes(kv...)
	if e.Outcome == interlock.OutcomeError {
		msg := e.Outcome
		if e.Err != nil {
			msg = e.Err.Error()
			sp.RecordError(e.Err, trace.WithTimestamp(end))
		}
		sp.SetStatus(codes.Error, msg)
	}
	sp.End(trace.WithTimestamp(end))
}

// spanNames are the span names of the known kinds: [acquire, release].
var spanNames = map[string][2]string{}

func init() {
	for _, k := range []interlock.Kind{
		interlock.KindRLock, interlock.KindFairLock, interlock.KindReadLock, interlock.KindWriteLock,
		interlock.KindFenced, interlock.KindNonReentrant, interlock.KindNonReentrantFair, interlock.KindSpin,
		interlock.KindSemaphore, interlock.KindExpirable, interlock.KindLatch, interlock.KindRateLimiter,
		interlock.KindElection,
	} {
		spanNames[string(k)] = [2]string{"acquire " + string(k), "release " + string(k)}
	}
}

func spanName(kind string, acquire bool) string {
	i := 1
	if acquire {
		i = 0
	}
	if n, ok := spanNames[kind]; ok {
		return n[i]
	}
	return [2]string{"acquire ", "release "}[i] + kind
}
