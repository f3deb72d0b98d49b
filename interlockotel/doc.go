// Package interlockotel reports what interlock's synchronizers do as
// OpenTelemetry metrics and spans, and puts trace ids into interlock's logs.
// It is a module of its own, so that interlock's go.mod does not carry
// OpenTelemetry.
//
//	obs := interlockotel.NewObserver(
//		interlockotel.WithTracerProvider(tp), // default: otel's global one
//		interlockotel.WithNames(interlockotel.HashNames),
//	)
//	reader := sdkmetric.NewPeriodicReader(exporter, sdkmetric.WithProducer(obs))
//	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
//	...
//	c, err := interlock.New(rc, interlock.WithObserver(obs))
//	...
//	defer obs.Watch(c)() // the holds, waiters, undo and channel counts, the oldest holds
//
// # Metrics
//
// The Observer aggregates its metrics itself and is a Producer for the
// SDK's readers (sdkmetric.WithProducer; the Prometheus exporter has its
// own WithProducer): a lock operation then costs a few atomic adds, where
// recording into SDK instruments cost bench S2 (64 goroutines locking
// distinct keys) about 6 % of its rate on a 2-core machine. The readers'
// MeterProvider gives the metrics their resource; its Views do not apply
// to them, and they are cumulative.
//
// Every acquisition of every kind (locks, semaphores, latch awaits) counts
// in interlock.acquisitions and records its wait in
// interlock.acquire.duration, both with interlock.kind, interlock.name and
// interlock.outcome (acquired, busy, timed_out, cancelled, error); every
// release counts in interlock.releases (released, transferred,
// decremented, not_held, error), and a release that ends its owner's hold
// records how long it was held in interlock.hold.duration. A transferred
// release ended its owner's last hold as a released one does, and passed
// the lock to a waiter of the same Client in its own round trip: count
// the holds that ended as released plus transferred, never released
// alone. The watchdog's ticks count the holds they renew
// (interlock.renewals) and the renewals that fail
// (interlock.renewal.failures, by kind and name); interlock.losses counts
// holds that ended without their owner's release, with interlock.reason
// saying why (lease_expired, not_renewed, key_gone, force_unlocked,
// max_hold; unknown for a cause with none of them); interlock.hold.oldest is the age of the oldest hold the
// watched Clients keep, per kind and name: the signal of a stuck holder.
// interlock.undos counts the tries to take back an acquisition whose reply
// was lost (ok, error). Observer lists every metric.
//
// The wait histograms (acquisitions, renewal ticks) have 13 bucket
// boundaries from 0.5ms to 10s and the hold histogram 12 from 10ms to an
// hour, about one per factor of 2.5: a quantile read from them tells which
// bucket it is in, not much finer. WithWaitBuckets and WithHoldBuckets set others,
// finer where the service's waits and holds are.
//
// Durations are in seconds ("s"), counts in curly-brace units
// ("{acquisition}"); the Prometheus exporter turns them into
// interlock_acquire_duration_seconds, interlock_acquisitions_total and so
// on.
//
// # Cardinality
//
// Each distinct attribute set is a series, and each histogram series is
// one per bucket in Prometheus. Kinds and outcomes are few; names are as
// many as the application makes. WithNames(DropNames) leaves the name out,
// WithNameFunc maps names to a few classes, and WithNames(HashNames) keeps
// one series per name but hides the name behind a stable hash (HashName).
// Past 4096 names, the metrics of further names carry no name.
//
// # Spans
//
// An acquisition or release whose context carries a sampled span becomes
// a child span of it, "acquire rlock" or "release semaphore", timed from
// the call to the outcome (it is made when the event arrives, with the
// start time set back by the operation's duration). Its status is Error
// when the outcome is "error". Under an unsampled span none is made, since
// its trace is not recorded; operations without a span in their context
// make none either, unless WithRootSpans.
//
// # Logs
//
// LogHandler wraps a slog.Handler so that records logged with a context
// that carries a span get trace_id and span_id: give
// slog.New(interlockotel.LogHandler(h)) to interlock.WithLogger, or use it
// for the application's own logs around its locks.
package interlockotel
