package main

import (
	"context"
	"errors"
	"time"
)

// Redisson 4.7.0 in its own JVM: the compat_test peer (javapeer.go). Every
// cell runs inside the JVM through the peer's "bench" op (a CellRunner), so
// neither the JSON pipe nor Go is on the measured path. Open warms the JIT
// with a few seconds of each shape before the harness's own warm-up. The
// peer cannot count its client commands (Commands is false); the table
// still shows the server-side counts. Needs java on PATH, and mvn unless
// compat_test/peer/target/interlock-peer-4.7.0.jar is fresh.
type redissonLib struct{}

func init() { Register(50, redissonLib{}) }

func (redissonLib) Name() string { return "Redisson " + javaPeerVersion + " (JVM)" }

// redissonWarmup is the JIT warm-up per shape (S1, S2, S3) in Open.
const redissonWarmup = 1500 * time.Millisecond

func (redissonLib) Open(ctx context.Context, addr string) (Session, error) {
	p, err := startJavaPeer(ctx, []string{addr}, clusterMode, 0)
	if err != nil {
		return nil, err
	}
	s := &redissonSession{p: p}
	for _, sh := range []struct {
		threads  int
		distinct bool
	}{{1, false}, {64, true}, {16, false}} {
		if err := p.do(map[string]any{
			"op": "bench", "kind": "reentrant", "name": "lockbench:jvmwarm",
			"threads": sh.threads, "distinctKeys": sh.distinct,
			"durationMs": redissonWarmup.Milliseconds(), "warmupMs": 0,
		}, nil); err != nil {
			p.close()
			return nil, err
		}
	}
	if err := warmJVMSemaphores(p); err != nil {
		p.close()
		return nil, err
	}
	return s, nil
}

type redissonSession struct{ p *javaPeer }

// errInJVM is what the Go-side Mutex returns: the cells run in the JVM.
var errInJVM = errors.New("redisson: locks run inside the JVM (RunCell)")

type jvmOnlyMutex struct{}

func (jvmOnlyMutex) Lock(context.Context) error   { return errInJVM }
func (jvmOnlyMutex) Unlock(context.Context) error { return errInJVM }

func (s *redissonSession) Mutex(string) Mutex      { return jvmOnlyMutex{} }
func (s *redissonSession) Commands() (int64, bool) { return 0, false }
func (s *redissonSession) Close() error            { s.p.close(); return nil }

// RunCell runs the cell's loop in the JVM: Workers Java threads, each
// lock(); unlock() until Duration has passed, on c.Key (or c.Key:i with
// Distinct, as the Go side names them).
func (s *redissonSession) RunCell(ctx context.Context, c Cell) (Sample, bool, error) {
	kind := map[LockKind]string{
		KindExclusive: "reentrant", KindFair: "fair", KindRead: "read",
		KindSemaphore: "semaphore", KindExpirable: "expirable",
	}[c.Scenario.Kind]
	if kind == "" {
		return Sample{}, false, nil
	}
	lat := "pair"
	if c.Scenario.Wait {
		lat = "lock"
	}
	var r struct {
		javaBenchResult
		Lat []int64 `json:"lat"`
	}
	if err := s.p.do(map[string]any{
		"op": "bench", "kind": kind, "name": c.Key, "threads": c.Workers,
		"distinctKeys": c.Scenario.Distinct, "durationMs": c.Duration.Milliseconds(),
		"warmupMs": 0, "latencies": lat,
	}, &r); err != nil {
		return Sample{}, true, err
	}
	out := Sample{Ops: r.Ops, Elapsed: time.Duration(r.Seconds * float64(time.Second))}
	out.Lat = make([]time.Duration, len(r.Lat))
	for i, ns := range r.Lat {
		out.Lat[i] = time.Duration(ns)
	}
	return out, true, nil
}
