package interlockotel_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/fairlock"
	"github.com/interlock-go/interlock/interlockotel"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/rlock"
)

// constValues returns the string values of the constants of file whose
// names start with prefix.
func constValues(t *testing.T, file, prefix string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	require.NoError(t, err)
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range vs.Names {
			if !strings.HasPrefix(name.Name, prefix) || i >= len(vs.Values) {
				continue
			}
			if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				v, err := strconv.Unquote(lit.Value)
				require.NoError(t, err)
				out = append(out, v)
			}
		}
		return true
	})
	require.NotEmpty(t, out, "no %s constants in %s", prefix, file)
	return out
}

// TestOutcomesDocumented: every Outcome of interlock's Events, and every
// loss reason, is named in the package documentation and in
// docs/operations.md; the row of interlock.releases there names every
// release outcome, transferred included, and says how to count the holds
// that ended.
func TestOutcomesDocumented(t *testing.T) {
	outcomes := constValues(t, "../observe.go", "Outcome")
	reasons := constValues(t, "options.go", "Reason")
	doc, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	ops, err := os.ReadFile("../docs/operations.md")
	require.NoError(t, err)
	for _, v := range append(outcomes, reasons...) {
		word := regexp.MustCompile(`\b` + regexp.QuoteMeta(v) + `\b`)
		assert.True(t, word.Match(doc), "the package doc does not name %q", v)
		assert.True(t, strings.Contains(string(ops), "`"+v+"`"), "docs/operations.md does not name %q", v)
	}
	var row string
	for _, line := range strings.Split(string(ops), "\n") {
		if strings.HasPrefix(line, "| `interlock.releases`") {
			row = line
		}
	}
	require.NotEmpty(t, row, "docs/operations.md has no row for interlock.releases")
	for _, v := range []string{interlock.OutcomeReleased, interlock.OutcomeTransferred, interlock.OutcomeDecremented,
		interlock.OutcomeNotHeld, interlock.OutcomeError} {
		assert.Contains(t, row, "`"+v+"`")
	}
	assert.True(t, strings.Contains(string(ops), `interlock_outcome=~"released|transferred"`),
		"docs/operations.md does not say how to count the holds that ended")
}

// TestBuckets: the duration histograms have a dozen or so buckets by
// default, and WithWaitBuckets and WithHoldBuckets set them (sorted,
// without duplicates).
func TestBuckets(t *testing.T) {
	run := func(opts ...interlockotel.Option) metricdata.ResourceMetrics {
		t.Helper()
		r := newRig(t, opts, interlock.WithWatchdogTimeout(300*time.Millisecond))
		m := rlock.New(r.c, "otel:buckets")
		require.NoError(t, m.Lock(context.Background()))
		eventually(t, "a renewal", func() bool { return sum(r.collect(), "interlock.renewals", nil) > 0 })
		require.NoError(t, m.Unlock(context.Background()))
		return r.collect()
	}
	rm := run()
	for _, name := range []string{"interlock.acquire.duration", "interlock.renewal.duration", "interlock.hold.duration"} {
		dp := hist(rm, name, nil)
		require.NotZero(t, dp.Count, name)
		assert.GreaterOrEqual(t, len(dp.Bounds), 10, name)
		assert.LessOrEqual(t, len(dp.Bounds), 15, name)
	}
	assert.Equal(t, 3600.0, hist(rm, "interlock.hold.duration", nil).Bounds[11], "holds up to an hour")

	rm = run(interlockotel.WithWaitBuckets(1, 0.01, 0.1, 0.01), interlockotel.WithHoldBuckets(60, 1))
	assert.Equal(t, []float64{0.01, 0.1, 1}, hist(rm, "interlock.acquire.duration", nil).Bounds)
	assert.Equal(t, []float64{0.01, 0.1, 1}, hist(rm, "interlock.renewal.duration", nil).Bounds)
	assert.Equal(t, []float64{1, 60}, hist(rm, "interlock.hold.duration", nil).Bounds)
	assert.Len(t, hist(rm, "interlock.acquire.duration", nil).BucketCounts, 4)
}

// gauge returns the points of a float gauge that match f, by name value.
func gauge(rm metricdata.ResourceMetrics, name string, f attrs) []metricdata.DataPoint[float64] {
	m, ok := metricNamed(rm, name)
	if !ok {
		return nil
	}
	var out []metricdata.DataPoint[float64]
	for _, dp := range m.Data.(metricdata.Gauge[float64]).DataPoints {
		if f.match(dp.Attributes) {
			out = append(out, dp)
		}
	}
	return out
}

// TestOldestHoldGauge: interlock.hold.oldest is the age of the oldest
// current hold per kind and name, per kind alone with DropNames, and has
// no points once nothing is held.
func TestOldestHoldGauge(t *testing.T) {
	for _, tc := range []struct {
		mode  interlockotel.NameMode
		names bool
	}{{interlockotel.KeepNames, true}, {interlockotel.DropNames, false}} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			r := newRig(t, []interlockotel.Option{interlockotel.WithNames(tc.mode)})
			ctx := interlock.WithOwner(context.Background(), interlock.NewOwnerID())
			old, young := rlock.New(r.c, "otel:oldest:old"), rlock.New(r.c, "otel:oldest:young")
			fair := fairlock.New(r.c, "otel:oldest:fair")
			require.NoError(t, old.Lock(ctx))
			time.Sleep(300 * time.Millisecond)
			require.NoError(t, young.Lock(ctx))
			require.NoError(t, fair.Lock(ctx))

			rm := r.collect()
			rl := gauge(rm, "interlock.hold.oldest", attrs{interlockotel.KeyKind: string(interlock.KindRLock)})
			fl := gauge(rm, "interlock.hold.oldest", attrs{interlockotel.KeyKind: string(interlock.KindFairLock)})
			if tc.names {
				require.Len(t, rl, 2)
				require.Len(t, fl, 1)
				o := gauge(rm, "interlock.hold.oldest", attrs{interlockotel.KeyName: "otel:oldest:old"})
				y := gauge(rm, "interlock.hold.oldest", attrs{interlockotel.KeyName: "otel:oldest:young"})
				require.Len(t, o, 1)
				require.Len(t, y, 1)
				assert.GreaterOrEqual(t, o[0].Value, 0.3)
				assert.Less(t, y[0].Value, 0.3)
			} else {
				require.Len(t, rl, 1, "one point per kind")
				require.Len(t, fl, 1)
				assert.GreaterOrEqual(t, rl[0].Value, 0.3, "the oldest rlock's age")
				assert.Less(t, fl[0].Value, 0.3)
				_, named := rl[0].Attributes.Value(interlockotel.KeyName)
				assert.False(t, named)
			}

			for _, m := range []interlock.Locker{old, young, fair} {
				require.NoError(t, m.Unlock(ctx))
			}
			assert.Empty(t, gauge(r.collect(), "interlock.hold.oldest", nil), "nothing held")
		})
	}
}

// stalledRenewals is a rueidis client whose DoMulti, the watchdog's
// rounds, fails at once while stalled is set (a script carrying the
// Client's queued deletions passes).
type stalledRenewals struct {
	rueidis.Client
	stalled atomic.Bool
}

func (s *stalledRenewals) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	if s.stalled.Load() && !redistest.CarriesDeletes(cmds) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		ctx = cctx
	}
	return s.Client.DoMulti(ctx, cmds...)
}

// TestRenewalFailuresAndLossesNamed: renewal failures count by kind and
// name; a hold whose renewals keep failing is lost, counted with reason
// not_renewed, and a deleted one with key_gone.
func TestRenewalFailuresAndLossesNamed(t *testing.T) {
	obs := interlockotel.NewObserver()
	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(obs))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	rc := &stalledRenewals{Client: newRC(t)}
	c, err := interlock.New(rc, interlock.WithObserver(obs), interlock.WithWatchdogTimeout(600*time.Millisecond))
	require.NoError(t, err)
	defer c.Close()
	collect := func() metricdata.ResourceMetrics {
		var rm metricdata.ResourceMetrics
		require.NoError(t, reader.Collect(context.Background(), &rm))
		return rm
	}
	ctx := interlock.WithOwner(context.Background(), interlock.NewOwnerID())
	stalled, deleted := rlock.New(c, "otel:failing:stalled"), rlock.New(c, "otel:failing:deleted")
	require.NoError(t, stalled.Lock(ctx))
	require.NoError(t, deleted.Lock(ctx))
	require.NoError(t, rc.Do(ctx, rc.B().Del().Key("otel:failing:deleted").Build()).Error())
	dg := deleted.Guard(ctx)
	<-dg.Done()
	rc.stalled.Store(true)
	g := stalled.Guard(ctx)
	<-g.Done()
	rc.stalled.Store(false)

	rm := collect()
	named := attrs{interlockotel.KeyKind: string(interlock.KindRLock), interlockotel.KeyName: "otel:failing:stalled"}
	assert.Positive(t, sum(rm, "interlock.renewal.failures", named))
	assert.Equal(t, sum(rm, "interlock.renewal.failures", nil), sum(rm, "interlock.renewal.failures", named),
		"every failure is named")
	eventually(t, "both losses", func() bool { return sum(collect(), "interlock.losses", nil) == 2 })
	rm = collect()
	assert.Equal(t, int64(1), sum(rm, "interlock.losses", attrs{interlockotel.KeyName: "otel:failing:stalled",
		interlockotel.KeyReason: interlockotel.ReasonNotRenewed}))
	assert.Equal(t, int64(1), sum(rm, "interlock.losses", attrs{interlockotel.KeyName: "otel:failing:deleted",
		interlockotel.KeyReason: interlockotel.ReasonKeyGone}))
}

// TestScopeVersion: metrics and spans carry the module's version in their
// instrumentation scope (a test binary has no published one).
func TestScopeVersion(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(context.Background())
	obs := interlockotel.NewObserver(interlockotel.WithTracerProvider(tp), interlockotel.WithRootSpans())
	obs.Observe(context.Background(), interlock.Event{Op: interlock.OpAcquire, Kind: interlock.KindRLock,
		Name: "otel:version", Outcome: interlock.OutcomeAcquired})
	sms, err := obs.Produce(context.Background())
	require.NoError(t, err)
	require.Len(t, sms, 1)
	assert.Equal(t, interlockotel.ScopeName, sms[0].Scope.Name)
	assert.Equal(t, "v0.0.0-devel", sms[0].Scope.Version)
	require.Len(t, spans.Ended(), 1)
	assert.Equal(t, sms[0].Scope.Version, spans.Ended()[0].InstrumentationScope().Version)
}

// Dedicate dedicates a connection whose renewal rounds and latch sweeps
// go through stalledRenewals's DoMulti (redistest.Aside).
func (s *stalledRenewals) Dedicate() (rueidis.DedicatedClient, func()) {
	dc, release := s.Client.Dedicate()
	return redistest.Aside(dc, s.DoMulti), release
}
