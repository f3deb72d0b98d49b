package interlockotel_test

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/interlockotel"
)

// rig is one Client observed by one Observer, with a ManualReader for the
// metrics and a SpanRecorder for the spans.
type rig struct {
	t      *testing.T
	rc     rueidis.Client
	c      *interlock.Client
	obs    *interlockotel.Observer
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
}

func newRig(t *testing.T, obsOpts []interlockotel.Option, clientOpts ...interlock.Option) *rig {
	t.Helper()
	r := &rig{t: t, rc: newRC(t), spans: tracetest.NewSpanRecorder()}
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	r.obs = interlockotel.NewObserver(append([]interlockotel.Option{interlockotel.WithTracerProvider(r.tp)}, obsOpts...)...)
	r.reader = sdkmetric.NewManualReader(sdkmetric.WithProducer(r.obs))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	t.Cleanup(func() {
		_ = mp.Shutdown(context.Background())
		_ = r.tp.Shutdown(context.Background())
	})
	c, err := interlock.New(r.rc, append([]interlock.Option{interlock.WithObserver(r.obs)}, clientOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	t.Cleanup(r.obs.Watch(c))
	r.c = c
	return r
}

// collect reads every metric now.
func (r *rig) collect() metricdata.ResourceMetrics {
	r.t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		r.t.Fatal(err)
	}
	return rm
}

// metricNamed returns the metric called name, or ok false.
func metricNamed(rm metricdata.ResourceMetrics, name string) (metricdata.Metrics, bool) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// attrs is a filter on a data point's attributes: every key must have its
// value; "" means the key must be absent.
type attrs map[attribute.Key]string

func (f attrs) match(s attribute.Set) bool {
	for k, want := range f {
		v, ok := s.Value(k)
		if want == "" {
			if ok {
				return false
			}
			continue
		}
		if !ok || v.AsString() != want {
			return false
		}
	}
	return true
}

// sum adds the values of the data points of a sum metric (counter or
// up-down counter) that match f.
func sum(rm metricdata.ResourceMetrics, name string, f attrs) int64 {
	m, ok := metricNamed(rm, name)
	if !ok {
		return 0
	}
	var n int64
	if s, ok := m.Data.(metricdata.Sum[int64]); ok {
		for _, dp := range s.DataPoints {
			if f.match(dp.Attributes) {
				n += dp.Value
			}
		}
	}
	return n
}

// hist merges the data points of a histogram that match f.
func hist(rm metricdata.ResourceMetrics, name string, f attrs) metricdata.HistogramDataPoint[float64] {
	var out metricdata.HistogramDataPoint[float64]
	m, ok := metricNamed(rm, name)
	if !ok {
		return out
	}
	h, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		return out
	}
	for _, dp := range h.DataPoints {
		if !f.match(dp.Attributes) {
			continue
		}
		if out.Bounds == nil {
			out.Bounds = dp.Bounds
			out.BucketCounts = make([]uint64, len(dp.BucketCounts))
		}
		out.Count += dp.Count
		out.Sum += dp.Sum
		for i, c := range dp.BucketCounts {
			out.BucketCounts[i] += c
		}
	}
	return out
}

// quantile estimates the q-quantile of a histogram as Prometheus's
// histogram_quantile does: linear interpolation within the bucket that
// holds rank q·count.
func quantile(dp metricdata.HistogramDataPoint[float64], q float64) float64 {
	rank := q * float64(dp.Count)
	var cum float64
	for i, c := range dp.BucketCounts {
		prev := cum
		cum += float64(c)
		if cum < rank || c == 0 {
			continue
		}
		lo := 0.0
		if i > 0 {
			lo = dp.Bounds[i-1]
		}
		if i == len(dp.Bounds) { // +Inf: the highest finite bound
			return dp.Bounds[i-1]
		}
		hi := dp.Bounds[i]
		return lo + (hi-lo)*(rank-prev)/float64(c)
	}
	return math.NaN()
}

// exactQuantile is the nearest-rank q-quantile of samples.
func exactQuantile(samples []time.Duration, q float64) time.Duration {
	s := slices.Clone(samples)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(i, 0)]
}

// eventually polls cond until it holds or 10s have passed.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
