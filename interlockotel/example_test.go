package interlockotel_test

import (
	"context"
	"fmt"
	"log"
	"slices"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/interlockotel"
	"github.com/interlock-go/interlock/rlock"
)

// In this example redisAddr is the address of a Redis server.

// The Observer as the package documentation sets it up: a lock taken and
// released under an application's span leaves two child spans and counts
// in the metrics a reader collects (here a ManualReader; an exporter's
// periodic reader in production).
func ExampleNewObserver() {
	ctx := context.Background()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(ctx)

	obs := interlockotel.NewObserver(
		interlockotel.WithTracerProvider(tp), // default: otel's global one
		interlockotel.WithNames(interlockotel.HashNames),
	)
	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(obs))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(ctx)

	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{redisAddr}})
	if err != nil {
		log.Fatal(err)
	}
	defer rc.Close()
	c, err := interlock.New(rc, interlock.WithObserver(obs))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	defer obs.Watch(c)() // the holds, waiters, undo and channel counts

	ctx, span := tp.Tracer("orders").Start(ctx, "handle order")
	m := rlock.New(c, "example:otel:orders:42")
	if err := m.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	if err := m.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	span.End()

	for _, s := range spans.Ended() {
		fmt.Println("span:", s.Name())
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		log.Fatal(err)
	}
	for _, name := range []string{"interlock.acquisitions", "interlock.releases"} {
		fmt.Println(name+":", counted(rm, name))
	}
	// Output:
	// span: acquire rlock
	// span: release rlock
	// span: handle order
	// interlock.acquisitions: [outcome=acquired 1]
	// interlock.releases: [outcome=released 1]
}

// counted returns a counter's data points as "outcome=... n", sorted.
func counted(rm metricdata.ResourceMetrics, name string) []string {
	var out []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if s, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == name {
				for _, dp := range s.DataPoints {
					outcome, _ := dp.Attributes.Value("interlock.outcome")
					out = append(out, fmt.Sprintf("outcome=%s %d", outcome.AsString(), dp.Value))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}
