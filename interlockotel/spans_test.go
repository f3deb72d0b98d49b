package interlockotel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/interlockotel"
	"github.com/interlock-go/interlock/rlock"
	"github.com/interlock-go/interlock/semaphore"
)

func attrValue(kvs []attribute.KeyValue, k attribute.Key) (string, bool) {
	for _, kv := range kvs {
		if kv.Key == k {
			return kv.Value.Emit(), true
		}
	}
	return "", false
}

// TestSpans: an acquisition and a release under a caller's span are its
// children, timed around the calls, with kind, name, outcome, attempts
// and permits.
func TestSpans(t *testing.T) {
	r := newRig(t, nil)
	ctx, parent := r.tp.Tracer("test").Start(context.Background(), "parent")
	m := rlock.New(r.c, "otel:spans")
	t0 := time.Now()
	require.NoError(t, m.Lock(ctx))
	t1 := time.Now()
	other := interlock.WithOwner(ctx, interlock.NewOwnerID())
	ok, err := m.TryLock(other, 0, 0)
	require.NoError(t, err)
	require.False(t, ok)
	t2 := time.Now()
	require.NoError(t, m.Unlock(ctx))
	t3 := time.Now()
	sem := semaphore.New(r.c, "otel:spans:sem")
	_, err = sem.Delete(ctx)
	require.NoError(t, err)
	_, err = sem.TrySetPermits(ctx, 3)
	require.NoError(t, err)
	require.NoError(t, sem.Acquire(ctx, 2))
	parent.End()

	spans := r.spans.Ended()
	require.Len(t, spans, 5)
	psc := parent.SpanContext()
	want := []struct {
		name, outcome string
		from, to      time.Time
	}{
		{"acquire rlock", interlock.OutcomeAcquired, t0, t1},
		{"acquire rlock", interlock.OutcomeBusy, t1, t2},
		{"release rlock", interlock.OutcomeReleased, t2, t3},
		{"acquire semaphore", interlock.OutcomeAcquired, t3, time.Now()},
	}
	for i, w := range want {
		s := spans[i]
		assert.Equal(t, w.name, s.Name())
		assert.Equal(t, psc.TraceID(), s.SpanContext().TraceID(), "span %d trace", i)
		assert.Equal(t, psc.SpanID(), s.Parent().SpanID(), "span %d parent", i)
		assert.Equal(t, trace.SpanKindInternal, s.SpanKind())
		kind := interlock.KindRLock
		name := "otel:spans"
		if i == 3 {
			kind, name = interlock.KindSemaphore, "otel:spans:sem"
		}
		for k, v := range map[attribute.Key]string{
			interlockotel.KeyKind: string(kind), interlockotel.KeyName: name, interlockotel.KeyOutcome: w.outcome,
		} {
			got, ok := attrValue(s.Attributes(), k)
			assert.True(t, ok, "span %d lacks %s", i, k)
			assert.Equal(t, v, got, "span %d %s", i, k)
		}
		attempts, ok := attrValue(s.Attributes(), interlockotel.KeyAttempts)
		assert.True(t, ok)
		assert.NotEqual(t, "0", attempts, "span %d attempts", i)
		// The span lies within the call, give or take the clock's
		// granularity.
		assert.False(t, s.StartTime().Before(w.from.Add(-time.Millisecond)), "span %d starts before the call", i)
		assert.False(t, s.EndTime().After(w.to.Add(time.Millisecond)), "span %d ends after the call", i)
		assert.False(t, s.EndTime().Before(s.StartTime()))
		assert.Equal(t, codes.Unset, s.Status().Code)
	}
	permits, ok := attrValue(spans[3].Attributes(), interlockotel.KeyPermits)
	assert.True(t, ok)
	assert.Equal(t, "2", permits)
	_, ok = attrValue(spans[0].Attributes(), interlockotel.KeyPermits)
	assert.False(t, ok, "a lock's span has permits")
	assert.Equal(t, "parent", spans[4].Name())
}

// TestSpansNeedAParent: without a span in the context no span is made,
// unless WithRootSpans.
func TestSpansNeedAParent(t *testing.T) {
	r := newRig(t, nil)
	m := rlock.New(r.c, "otel:noparent")
	require.NoError(t, m.Lock(context.Background()))
	require.NoError(t, m.Unlock(context.Background()))
	assert.Empty(t, r.spans.Ended())

	r = newRig(t, []interlockotel.Option{interlockotel.WithRootSpans()})
	m = rlock.New(r.c, "otel:noparent")
	require.NoError(t, m.Lock(context.Background()))
	require.NoError(t, m.Unlock(context.Background()))
	spans := r.spans.Ended()
	require.Len(t, spans, 2)
	for _, s := range spans {
		assert.False(t, s.Parent().IsValid(), "%s has a parent", s.Name())
	}
}

// TestErrorSpan: an event with outcome "error" gives a span with status
// Error and the error recorded, that began Duration before it ended.
func TestErrorSpan(t *testing.T) {
	r := newRig(t, nil)
	ctx, parent := r.tp.Tracer("test").Start(context.Background(), "parent")
	boom := errors.New("boom")
	r.obs.Observe(ctx, interlock.Event{
		Op: interlock.OpAcquire, Kind: interlock.KindFenced, Name: "otel:error",
		Outcome: interlock.OutcomeError, Duration: 40 * time.Millisecond, Attempts: 1, Err: boom,
	})
	parent.End()
	spans := r.spans.Ended()
	require.Len(t, spans, 2)
	s := spans[0]
	assert.Equal(t, "acquire fenced", s.Name())
	assert.Equal(t, codes.Error, s.Status().Code)
	assert.Equal(t, "boom", s.Status().Description)
	require.Len(t, s.Events(), 1)
	assert.Equal(t, "exception", s.Events()[0].Name)
	assert.Equal(t, 40*time.Millisecond, s.EndTime().Sub(s.StartTime()))
	assert.Equal(t, int64(1), sum(r.collect(), "interlock.acquisitions",
		attrs{interlockotel.KeyKind: string(interlock.KindFenced), interlockotel.KeyOutcome: interlock.OutcomeError}))
}

// TestLogHandler: records logged with a span's context carry its trace and
// span ids; others are unchanged.
func TestLogHandler(t *testing.T) {
	r := newRig(t, nil)
	var buf bytes.Buffer
	log := slog.New(interlockotel.LogHandler(slog.NewJSONHandler(&buf, nil))).With("app", "test")
	ctx, sp := r.tp.Tracer("test").Start(context.Background(), "op")
	log.InfoContext(ctx, "with")
	log.Info("without")
	sp.End()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2)
	var with, without map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &with))
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &without))
	assert.Equal(t, sp.SpanContext().TraceID().String(), with[interlockotel.LogTraceID])
	assert.Equal(t, sp.SpanContext().SpanID().String(), with[interlockotel.LogSpanID])
	assert.Equal(t, "test", with["app"])
	assert.NotContains(t, without, interlockotel.LogTraceID)
	assert.NotContains(t, without, interlockotel.LogSpanID)
}
