package prometheus_test

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/interlockotel"
	"github.com/interlock-go/interlock/rlock"
)

// Serving interlock's metrics to Prometheus: the OTel Prometheus exporter
// is a reader of the MeterProvider with the Observer as its producer, and
// promhttp serves its registry on /metrics. The example scrapes it once and prints interlock's metric
// families.
func Example_prometheus() {
	ctx := context.Background()

	obs := interlockotel.NewObserver()
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithProducer(obs))
	if err != nil {
		log.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
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
	defer obs.Watch(c)()

	m := rlock.New(c, "example:prometheus")
	if err := m.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	if err := m.Unlock(ctx); err != nil {
		log.Fatal(err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()

	resp, err := http.Get("http://" + ln.Addr().String() + "/metrics")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	var families []string
	for sc := bufio.NewScanner(resp.Body); sc.Scan(); {
		// "# TYPE interlock_acquisitions_total counter"
		if f := strings.Fields(sc.Text()); len(f) == 4 && f[1] == "TYPE" && strings.HasPrefix(f[2], "interlock_") {
			families = append(families, f[2]+" "+f[3])
		}
	}
	slices.Sort(families)
	for _, f := range families {
		fmt.Println(f)
	}
	// Output:
	// interlock_acquire_duration_seconds histogram
	// interlock_acquisitions_total counter
	// interlock_hold_duration_seconds histogram
	// interlock_holds gauge
	// interlock_pubsub_channels gauge
	// interlock_pubsub_failures_total counter
	// interlock_pubsub_reconnects_total counter
	// interlock_releases_total counter
	// interlock_renewal_failures_total counter
	// interlock_renewals_total counter
	// interlock_undo_pending gauge
	// interlock_waiters gauge
}
