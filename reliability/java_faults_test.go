package reliability

// T24 (docs/reliability.md): Java interop under faults. Two Go worker
// processes ("t24-go", 8 goroutines per kind each) and one Redisson 4.7.0
// JVM (8 logical threads per kind, driven from the test process) contend
// for the same lock names of every kind the JVM peer shares with interlock
// (reentrant, fair, the write half of read/write, fenced) through fault
// phases, each followed by a healthy one:
//
//   - standalone, classic publish: the subscription connections of both
//     sides killed every 200 ms; every pub/sub message dropped; the
//     replies to Go acquisitions and unlocks lost (the Go processes' proxy);
//     the server killed and restarted empty after more than a lease (the
//     delayed restart of T2: a short empty restart hands the lock out by
//     design). Before the kill the Go holders turn "sticky": they keep
//     their holds, as a long critical section would, so that the kill
//     finds them holding and their loss is timed.
//   - a 3+3 cluster, sharded and classic publish on both sides (Redisson's
//     shardedSubscriptionMode ON and OFF): CLUSTER FAILOVER of each master
//     in turn.
//   - Sentinel (nightly only: one failover takes 10-15 s): a master, one
//     replica and three sentinels, the Go workers on rueidis sentinel
//     clients and the JVM on Redisson's useSentinelServers; each failover
//     freezes the master (SIGSTOP) until the sentinels promoted the
//     replica, resumes it, and waits until they made it a replica of the
//     new master. The rule is T8's: both sides in safe mode, Go with
//     WithReplicaAcks(1, 500 ms) and Redisson with its default
//     checkLockSyncedSlaves (WAIT for the replicas it knows, failing with
//     NoSyncedSlavesException when none acknowledged), so that an
//     acquisition the promoted replica may lack is taken back, not used;
//     and the master frozen, not left running, so that no renewal is
//     acknowledged by a master that is being replaced (renewals are not
//     followed by WAIT). Under that rule T8 requires 0 overlaps, and so
//     does this test of every overlap between Go sections and of every
//     one outside a failover window. Redisson's safe mode is weaker: it
//     waits only for the replicas it counts as available (and not at all
//     when it counts none), and fails an acquisition only when none
//     acknowledged, so a failover can lose a Java hold it reported. An
//     overlap with a Java section whose later section began in a failover
//     phase or within t24After of its end, its lost update, and a fenced
//     token not above the previous Java one in that window, are therefore
//     logged and counted, not failed (t24Verify, t24Analyse).
//
// In the standalone variant Go and Java also share a plain semaphore
// (Redisson's RSemaphore; semaphore.Semaphore) of t24SemPermits permits:
// t24SemWorkers goroutines of the test process (a Client on the Go proxy)
// and as many Java threads take one permit, hold it briefly and release
// it, and a gauge of the permits held, raised after an acquire's reply
// and lowered before the release is sent, must never exceed the permits;
// once the run is over and the Client's clean-up is done the free count
// must be the permits again, less at most the releases that ended without
// an answer. A plain semaphore has no lease, so of the standalone faults
// it takes those T27 and T28 apply to it and that leave its count
// meaningful: killed subscribers, dropped messages and lost Go replies
// (its acquire and release scripts too; their receipts make the resends
// count once). The empty restart erases the count, and releases after it
// would rebuild it short, so the semaphore sits that phase out: its
// workers stop before it, and the count is set again after it.
//
// Every critical section goes to the oracle, unfenced (an empty restart
// resets the token counter; tokens are checked apart, within one server
// life). A Go holder steps while its hold is valid for a step
// (hold.Valid), one step, or 20 in one hold of 16; a Java holder takes its
// lock with tryLock(wait, lease) and the driver enters the oracle only
// after the reply came and while the lease, counted from the send, leaves
// a step budget, and leaves it before it sends the unlock. Judged: 0
// oracle violations; no acquire call past its bound; every Go loss (guard
// ended with ErrLockLost) reported within one renewal interval of the
// hold's deadline (plus t24LossSlack of timer latency); fenced tokens
// rising within a server life; hand-offs in the healthy phases after the
// faults, from the releaser's unlock reply to the next waiter's acquire
// reply, p99 <= 50 ms, across languages too; and in the nightly tier at
// least 10,000 faulted hand-offs per variant.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/faultproxy"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/script"
	"github.com/interlock-go/interlock/semaphore"
)

const (
	t24Lease        = time.Second            // Go watchdog lease and Java explicit lease
	t24Workers      = 8                      // per kind, per process
	t24GoTimeout    = 10 * time.Second       // a Go Lock's context
	t24GoSlack      = 200 * time.Millisecond // a Go Lock past its context by more is hung
	t24JavaWait     = 3 * time.Second        // a Java tryLock's wait
	t24JavaSlack    = 15 * time.Second       // Redisson's own command retries when the server is gone
	t24HealthyP99   = 50 * time.Millisecond
	t24ResetEvery   = 200 * time.Millisecond
	t24LoseEvery    = 50 * time.Millisecond
	t24After        = time.Second // hand-offs this long after a fault count as faulted
	t24LossInterval = t24Lease / 3
	// t24LossSlack is the timer and scheduling latency allowed on top of
	// t24LossInterval: a hold whose renewal round is unanswered is lost
	// one interval after its validity at most (renewal's Entry.lostAt),
	// and the timer that ends it fires a little later on a busy machine.
	t24LossSlack   = 50 * time.Millisecond
	t24LongEvery   = 16                     // one Go hold in this many is long,
	t24LongSteps   = 20                     // this many steps, so that faults find Go holders holding
	t24StickyLead  = 300 * time.Millisecond // Go holders turn sticky this long before a kill
	t24InvalidWait = 5 * time.Second        // a holder short of validity waits this long (past the downtime) for a renewal or the loss
	t24AckWait     = 500 * time.Millisecond // Sentinel: the Go side's WithReplicaAcks(1, t24AckWait), as T8's

	t24SemName    = "t24-sem"
	t24SemPermits = 3
	t24SemWorkers = 4                      // per side
	t24SemWait    = 500 * time.Millisecond // an acquire's wait, short so that the semaphore stops quickly
	t24SemHold    = 5 * time.Millisecond   // a permit's hold, at most
	t24SemSettle  = 5 * time.Second        // the Client's clean-up of lost attempts, at most
)

// t24CrossBound bounds the healthy hand-off p99 across languages:
// t24HealthyP99 in the nightly tier; in the PR gate, beside other packages
// and JVMs on two cores, half a lease (a lost wake-up costs a waiter up to
// a lease), which a CI run beside other builds reached a third of (338 ms).
func t24CrossBound() time.Duration {
	if isNightly() {
		return t24HealthyP99
	}
	return max(latencyBound(t24HealthyP99), t24Lease/2)
}

// t24JavaKinds maps the Go kinds to the peer's.
var t24JavaKinds = map[lockKind]string{kindRLock: "reentrant", kindFair: "fair", kindWrite: "write", kindFenced: "fenced"}

// t24Name is lock i of kind k, the same in every process.
func t24Name(k lockKind, i int) string { return fmt.Sprintf("t24-%s-%d", k, i) }

// t24Sec is one acquire call and, when it acquired, its section and
// release; times are monoNow, 0 for never.
type t24Sec struct {
	Lang      string   `json:"lang"` // "go" or "java"
	Kind      lockKind `json:"kind"`
	Name      string   `json:"name"`
	Start     int64    `json:"start"`    // the acquire call began
	Returned  int64    `json:"returned"` // it returned
	Acquired  bool     `json:"acquired"`
	Err       string   `json:"err"`       // why it did not acquire: "timeout" or the error
	Token     uint64   `json:"token"`     // fenced: the fencing token
	Unlocking int64    `json:"unlocking"` // the unlock was sent
	Released  int64    `json:"released"`  // the unlock returned
	UnlockErr string   `json:"unlock_err"`
	Wrote     bool     `json:"wrote"`    // the section reached the oracle
	Deadline  int64    `json:"deadline"` // Go: the hold's last deadline seen (renewal send + lease)
	Lost      int64    `json:"lost"`     // Go: the guard ended with ErrLockLost
	Bound     int64    `json:"bound"`    // the longest the call may take, ns
}

// t24GoConfig is the worker's configuration.
type t24GoConfig struct {
	Addrs       []string             `json:"addrs"`
	PubSub      interlock.PubSubMode `json:"pubsub"`
	OracleAddr  string               `json:"oracle"`
	Lease       time.Duration        `json:"lease"`
	Kinds       []lockKind           `json:"kinds"`
	Names       int                  `json:"names"`
	Workers     int                  `json:"workers"`
	MasterSet   string               `json:"master_set"`   // Sentinel: Addrs are the sentinels'
	ReplicaAcks int                  `json:"replica_acks"` // safe mode: WithReplicaAcks(ReplicaAcks, t24AckWait)
}

var _ = register("t24-go", t24GoWorker)

// t24Sticky is, in a worker, the monoNow until which holders keep their
// holds (step on while valid, wait for the loss when not), so that a
// fault finds Go holders holding. The test sets it ("sticky" d) before
// it kills the server.
var t24Sticky atomic.Int64

// t24GoWorker runs cfg.Workers goroutines per kind from "run" to "stop",
// reports every acquire call as "sec" and, after "stop", "stopped".
func t24GoWorker() error {
	var cfg t24GoConfig
	if err := workerConfig(&cfg); err != nil {
		return err
	}
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: cfg.Addrs, Sentinel: rueidis.SentinelOption{MasterSet: cfg.MasterSet}})
	if err != nil {
		return err
	}
	defer rc.Close()
	opts := []interlock.Option{interlock.WithWatchdogTimeout(cfg.Lease), interlock.WithPubSubMode(cfg.PubSub)}
	if cfg.ReplicaAcks > 0 {
		opts = append(opts, interlock.WithReplicaAcks(cfg.ReplicaAcks, t24AckWait))
	}
	c, err := interlock.New(rc, opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	o, err := dialOracle(cfg.OracleAddr, false)
	if err != nil {
		return err
	}
	defer o.Close()
	cmds := workerCommands()
	workerSay("ready", nil)
	if m, err := awaitCommand(cmds, time.Minute); err != nil || m.Verb != "run" {
		return fmt.Errorf("waiting for run: %v %v", m, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for ki, k := range cfg.Kinds {
		for g := range cfg.Workers {
			rnd := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(ki*100+g)))
			wg.Go(func() { t24GoLoop(ctx, c, o, cfg, k, t24Name(k, g%cfg.Names), rnd) })
		}
	}
	for {
		m, err := awaitCommand(cmds, 30*time.Minute)
		if err == nil && m.Verb == "sticky" {
			var d time.Duration
			if err := m.Decode(&d); err != nil {
				cancel()
				return err
			}
			t24Sticky.Store(monoNow() + int64(d))
			continue
		}
		cancel()
		wg.Wait()
		if err != nil || m.Verb != "stop" {
			return fmt.Errorf("waiting for stop: %v %v", m, err)
		}
		break
	}
	workerSay("stopped", nil)
	return nil
}

// t24GoLoop acquires, works and releases name until ctx ends.
func t24GoLoop(ctx context.Context, c *interlock.Client, o *oracleClient, cfg t24GoConfig, k lockKind, name string, rnd *rand.Rand) {
	lcfg := lockConfig{Kind: k, Watchdog: cfg.Lease, FairWait: 2 * time.Second}
	lk, err := newLocker(c, lcfg, name)
	if err != nil {
		workerSay("error", err.Error())
		return
	}
	w := workload{Lock: lcfg}.withDefaults()
	budget := w.stepBudget()
	octx := interlock.WithOwner(context.Background(), interlock.NewOwnerID())
	for ctx.Err() == nil {
		s := t24Sec{Lang: "go", Kind: k, Name: name, Start: monoNow(), Bound: int64(t24GoTimeout + t24GoSlack)}
		actx, cancel := context.WithTimeout(octx, t24GoTimeout)
		stopOnEnd := context.AfterFunc(ctx, cancel) // the run's end cancels a waiting Lock
		h, err := acquireHold(actx, c, lk, name, cfg.Lease)
		stopOnEnd()
		cancel()
		s.Returned = monoNow()
		if err != nil {
			if ctx.Err() != nil {
				return // cancelled by the stop, not a result
			}
			s.Err = err.Error()
			if errors.Is(err, context.DeadlineExceeded) {
				s.Err = "timeout"
			}
			if errors.Is(err, interlock.ErrReplication) {
				s.Err = "replication: " + s.Err
			}
			workerSay("sec", s)
			netWait(ctx, 20*time.Millisecond)
			continue
		}
		s.Acquired = true
		t24GoHold(o, h, w, budget, rnd, &s)
		workerSay("sec", s)
	}
}

// t24GoHold works one step under h if it is valid for one, releases it,
// and records the release, the hold's deadline and a loss in s.
func t24GoHold(o *oracleClient, h *hold, w workload, budget time.Duration, rnd *rand.Rand, s *t24Sec) {
	var mu sync.Mutex
	done := make(chan struct{})
	var watcher sync.WaitGroup
	watcher.Go(func() { // samples the deadline until the release, and times a loss
		tick := time.NewTicker(procWatchEvery)
		defer tick.Stop()
		for {
			now, rem := monoNow(), h.Remaining()
			mu.Lock()
			if rem > 0 {
				s.Deadline = max(s.Deadline, now+int64(rem))
			}
			mu.Unlock()
			select {
			case <-done:
				return
			case <-h.Guard.Done():
				if errors.Is(context.Cause(h.Guard), interlock.ErrLockLost) {
					mu.Lock()
					s.Lost = monoNow()
					mu.Unlock()
				}
				return
			case <-tick.C:
			}
		}
	})
	ctx := context.Background()
	sec := newSection(h, h.Name)
	sec.Token = 0 // unfenced oracle: an empty restart resets the counter (tokens are checked apart)
	steps := 1
	if rnd.IntN(t24LongEvery) == 0 {
		steps = t24LongSteps
	}
	entered := false
	var invalidSince time.Time
	for step := 0; (step < steps || monoNow() < t24Sticky.Load()) && h.Guard.Err() == nil; {
		if ok, _ := h.Valid(budget); !ok {
			// Too little validity for a step: wait for a renewal or the
			// loss, as a holder that respects its guard does.
			if invalidSince.IsZero() {
				invalidSince = time.Now()
			} else if time.Since(invalidSince) > t24InvalidWait {
				break
			}
			netWait(h.Guard, procWatchEvery)
			continue
		}
		invalidSince = time.Time{}
		if !entered {
			if ok, err := o.Enter(ctx, sec); err != nil || !ok {
				break
			}
			entered = true
		}
		if ok, err := o.RMW(ctx, sec, w.jitter(rnd)); err != nil || !ok {
			break
		}
		s.Wrote = true
		step++
	}
	if entered {
		_ = o.Exit(ctx, sec)
	}
	s.Token = h.Token
	uctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	mu.Lock()
	s.Unlocking = monoNow()
	mu.Unlock()
	err := h.Unlock(uctx)
	cancel()
	released := monoNow()
	close(done)
	watcher.Wait()
	s.Released = released
	if err != nil {
		s.UnlockErr = err.Error()
	}
}

// t24JavaLoop is one Java thread's loop, driven from the test: tryLock
// with a lease, a step in the oracle while the lease allows, unlock.
func t24JavaLoop(ctx context.Context, p *jvmPeer, o *oracleClient, thread int, k lockKind, name string, rnd *rand.Rand, report func(t24Sec)) {
	w := workload{Lock: lockConfig{Watchdog: t24Lease}}.withDefaults()
	budget := w.stepBudget()
	op := "tryLock"
	if k.hasToken() {
		op = "tryLockToken"
	}
	owner := fmt.Sprintf("%s:java-thread-%d", p.clientID, thread)
	seq := 0
	for ctx.Err() == nil {
		s := t24Sec{Lang: "java", Kind: k, Name: name, Start: monoNow(), Bound: int64(t24JavaWait + t24JavaSlack)}
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		r, err := p.Do(dctx, jvmReq{Thread: thread, Op: op, Kind: t24JavaKinds[k], Name: name, Wait: t24JavaWait, Lease: t24Lease})
		cancel()
		s.Returned = monoNow()
		switch {
		case err != nil:
			s.Err = "peer: " + err.Error()
			report(s)
			return
		case !r.OK:
			s.Err = r.Err
		case string(r.Result) == "false" || string(r.Result) == "null":
			s.Err = "timeout"
		default:
			s.Acquired = true
		}
		if !s.Acquired {
			report(s)
			netWait(ctx, 20*time.Millisecond)
			continue
		}
		if k.hasToken() {
			_ = json.Unmarshal(r.Result, &s.Token)
		}
		// The lease runs from no earlier than the send.
		if monoNow()+int64(budget) < s.Start+int64(t24Lease) {
			seq++
			sec := Section{Res: name, Owner: owner, ID: fmt.Sprintf("%s#%d", owner, seq)}
			bg := context.Background()
			if ok, err := o.Enter(bg, sec); err == nil && ok {
				if ok, err := o.RMW(bg, sec, w.jitter(rnd)); err == nil && ok {
					s.Wrote = true
				}
				_ = o.Exit(bg, sec)
			}
		}
		dctx, cancel = context.WithTimeout(context.Background(), time.Minute)
		s.Unlocking = monoNow()
		r, err = p.Do(dctx, jvmReq{Thread: thread, Op: "unlock", Kind: t24JavaKinds[k], Name: name})
		cancel()
		s.Released = monoNow()
		if err != nil {
			s.UnlockErr = "peer: " + err.Error()
		} else if !r.OK {
			s.UnlockErr = r.Err
		}
		report(s)
	}
}

// t24Phase is one phase of the schedule, in monoNow time.
type t24Phase struct {
	what       string
	start, end int64
	kill       int64 // the delayed restart: the server was killed
}

// t24Fault is one fault phase: run injects the fault and returns once it
// is healed, with the time a server was killed (0 for none). sticky makes
// the Go holders keep their holds for a while (see t24Sticky). The shared
// semaphore, where there is one, sits out a phase with semOff.
type t24Fault struct {
	what   string
	run    func(ctx context.Context, sticky func(time.Duration)) (kill int64, err error)
	semOff bool
}

// t24Env is where a variant runs: the addresses the Go workers dial and
// their publish mode (and, for Sentinel, the master set and safe mode),
// the JVM's server arguments, the fault phases, the address a Go Client
// of the shared semaphore dials ("" for no semaphore), and the variant's
// own counters for the log.
type t24Env struct {
	goAddrs     []string
	pubsub      interlock.PubSubMode
	masterSet   string
	replicaAcks int
	jvmArgs     []string
	faults      []t24Fault
	semAddr     string
	redissonGap bool // Sentinel: Java sections may overlap within a failover window (see t24Verify)
	notes       func() string
}

func TestT24JavaFaults(t *testing.T) {
	redistest.RequireProcess(t)
	t.Run("standalone", func(t *testing.T) { t24Run(t, t24Standalone(t)) })
	for _, v := range []struct {
		name string
		mode interlock.PubSubMode
		jvm  string // Redisson's shardedSubscriptionMode
	}{{"cluster-sharded", interlock.PubSubSharded, "ON"}, {"cluster-classic", interlock.PubSubClassic, "OFF"}} {
		t.Run(v.name, func(t *testing.T) { t24Run(t, t24Cluster(t, v.mode, v.jvm)) })
	}
	t.Run("sentinel", func(t *testing.T) {
		nightlyOnly(t) // a failover takes 10-15 s, too long for the PR gate's budget
		t24Run(t, t24Sentinel(t))
	})
}

// t24FaultFor is how long a timed fault phase lasts.
func t24FaultFor() time.Duration { return time.Duration(sized(2, 4)) * time.Second }

// t24Standalone is one server with a proxy for the Go processes and one
// for the JVM, and the faults of the proxies and the delayed restart.
func t24Standalone(t *testing.T) t24Env {
	srv := redistest.Standalone(t)
	goProxy, err := faultproxy.Start(srv.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = goProxy.Close() })
	javaProxy, err := faultproxy.Start(srv.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = javaProxy.Close() })
	faultFor := t24FaultFor()
	var resets, lostReplies atomic.Int64
	var downtimes []time.Duration
	lose := netScripts(script.Acquire(), script.FairAcquire(), script.FairTryAcquire(), script.RWWriteAcquire(), script.FencedAcquire(),
		script.Unlock(), script.FairUnlock(), script.RWWriteUnlock(), script.SemAcquire(), script.SemRelease())
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 24))
	return t24Env{
		goAddrs: []string{goProxy.Addr()},
		pubsub:  interlock.PubSubClassic,
		jvmArgs: []string{"--redis", "redis://" + javaProxy.Addr()},
		semAddr: goProxy.Addr(),
		faults: []t24Fault{
			{"subscribers killed", func(context.Context, func(time.Duration)) (int64, error) {
				t24Every(faultFor, t24ResetEvery, func() {
					resets.Add(int64(goProxy.ResetSubscribers() + javaProxy.ResetSubscribers()))
				})
				return 0, nil
			}, false},
			{"messages dropped", func(ctx context.Context, _ func(time.Duration)) (int64, error) {
				goProxy.DropPushes(true)
				javaProxy.DropPushes(true)
				netWait(ctx, faultFor)
				goProxy.DropPushes(false)
				javaProxy.DropPushes(false)
				return 0, nil
			}, false},
			{"Go replies lost", func(context.Context, func(time.Duration)) (int64, error) {
				before := goProxy.Stats().RepliesDropped
				t24Every(faultFor, t24LoseEvery, func() { goProxy.DropReplyTo(lose, 1) })
				goProxy.DropReplyTo(nil, 0)
				lostReplies.Add(goProxy.Stats().RepliesDropped - before)
				return 0, nil
			}, false},
			{"delayed empty restart", func(ctx context.Context, sticky func(time.Duration)) (int64, error) {
				down := t24Lease + time.Second + time.Duration(rnd.Int64N(int64(500*time.Millisecond)))
				downtimes = append(downtimes, down)
				sticky(t24StickyLead + down + time.Second)
				netWait(ctx, t24StickyLead)
				kill := monoNow()
				rctx, cancel := context.WithTimeout(ctx, down+30*time.Second)
				defer cancel()
				return kill, srv.RestartAfter(rctx, down)
			}, true},
		},
		notes: func() string {
			return fmt.Sprintf("%d subscriber resets, %d Go replies lost, downtimes %s", resets.Load(), lostReplies.Load(), procDurations(downtimes))
		},
	}
}

// t24Cluster is a 3+3 cluster, the Go side publishing in mode and the
// JVM's shardedSubscriptionMode jvmMode, and one fault, CLUSTER FAILOVER
// of the masters in turn: one per cycle in the PR gate, three (every
// master) in the nightly tier.
func t24Cluster(t *testing.T, mode interlock.PubSubMode, jvmMode string) t24Env {
	cluster := redistest.ClusterWith(t, redistest.WithReplicas(1))
	var failovers []time.Duration
	turn := 0
	failover := t24Fault{"cluster failover", func(ctx context.Context, _ func(time.Duration)) (int64, error) {
		masters := cluster.Masters()
		victim := masters[turn%len(masters)]
		turn++
		var replica *redistest.Server
		for _, r := range cluster.Replicas() {
			if cluster.MasterOf(r) == victim {
				replica = r
			}
		}
		if replica == nil {
			return 0, fmt.Errorf("no replica of %s", victim.Addr())
		}
		start := time.Now()
		err := cluster.Failover(ctx, replica)
		failovers = append(failovers, time.Since(start))
		return 0, err
	}, false}
	var faults []t24Fault
	for range sized(1, 3) { // a cycle fails every master over in the nightly tier
		faults = append(faults, failover)
	}
	return t24Env{
		goAddrs: cluster.Addrs(),
		pubsub:  mode,
		jvmArgs: []string{"--cluster", strings.Join(cluster.Addrs(), ","), "--sharded-subscription", jvmMode},
		faults:  faults,
		notes:   func() string { return "failovers took " + procDurations(failovers) },
	}
}

// t24Sentinel is a master, one replica and three sentinels, both sides in
// safe mode (see the file comment), and one fault, a failover as T8 makes
// it: the master frozen until the sentinels promoted the replica, then
// resumed, and the phase ends once they made it a replica of the new
// master (until then the Go side's acquisitions find no replica to
// acknowledge them). Two failovers per cycle, so that each server is
// failed over from in each cycle. Before the freeze the Go holders turn
// sticky, so that it finds them holding and their loss is timed.
func t24Sentinel(t *testing.T) t24Env {
	g := redistest.Sentinels(t, 3)
	t.Cleanup(func() {
		for _, s := range g.Servers() {
			_ = s.Resume()
		}
	})
	var promoted, rejoined []time.Duration
	failover := t24Fault{"sentinel failover", func(ctx context.Context, sticky func(time.Duration)) (int64, error) {
		sticky(t24StickyLead + 2*t24Lease)
		netWait(ctx, t24StickyLead)
		old := g.Master()
		if err := old.Pause(); err != nil {
			return 0, err
		}
		paused := time.Now()
		fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := g.WaitFailover(fctx)
		cancel()
		promoted = append(promoted, time.Since(paused))
		if rerr := old.Resume(); err == nil {
			err = rerr
		}
		if err != nil {
			return 0, err
		}
		resumed := time.Now()
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		err = g.WaitReplicaOfMaster(rctx, old)
		rejoined = append(rejoined, time.Since(resumed))
		return 0, err
	}, false}
	return t24Env{
		goAddrs:     g.SentinelAddrs(),
		pubsub:      interlock.PubSubClassic,
		masterSet:   g.MasterSet(),
		replicaAcks: 1,
		jvmArgs:     []string{"--sentinel", strings.Join(g.SentinelAddrs(), ","), "--master-name", g.MasterSet()},
		faults:      []t24Fault{failover, failover},
		redissonGap: true,
		notes: func() string {
			return fmt.Sprintf("replica promoted %s after the freeze; old master a replica again %s after its resume", procDurations(promoted), procDurations(rejoined))
		},
	}
}

// t24Sem is the semaphore Go and Java share in the standalone variant:
// t24SemWorkers Go goroutines (on c) and as many Java threads each take a
// permit, hold it for up to t24SemHold and release it. gauge counts the
// permits held as the holders see them (raised after the acquire's reply,
// lowered before the release is sent), so it can only lag the server's
// count: above t24SemPermits it is a permit counted twice.
type t24Sem struct {
	c    *interlock.Client
	sem  *semaphore.Semaphore
	peer *jvmPeer

	gauge, maxGauge, over atomic.Int64
	active                atomic.Int64 // loops in an iteration
	off                   atomic.Bool  // the loops are to stop between iterations
	wg                    sync.WaitGroup

	mu                     sync.Mutex
	acquired, busy, failed map[string]int
	releaseErrs            map[string]int // releases without an answer: maybe applied, maybe not
	longest                map[string]time.Duration
	hung                   int
	errSamples             map[string]string
	resets                 int // the count set again after the empty restart
}

// t24StartSem opens the semaphore through addr, sets its permits and
// starts the loops, which run until ctx ends; finish joins them.
func t24StartSem(t *testing.T, ctx context.Context, addr string, peer *jvmPeer) *t24Sem {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	c, err := interlock.New(rc, interlock.WithWatchdogTimeout(t24Lease))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	s := &t24Sem{
		c: c, sem: semaphore.New(c, t24SemName), peer: peer,
		acquired: map[string]int{}, busy: map[string]int{}, failed: map[string]int{}, releaseErrs: map[string]int{},
		longest: map[string]time.Duration{}, errSamples: map[string]string{},
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = s.sem.Delete(sctx)
	require.NoError(t, err)
	ok, err := s.sem.TrySetPermits(sctx, t24SemPermits)
	require.NoError(t, err)
	require.True(t, ok)
	for i := range t24SemWorkers {
		rnd := rand.New(rand.NewPCG(uint64(i), 2424))
		s.wg.Go(func() { s.loop(ctx, "go", rnd, s.goAcquire, s.goRelease) })
		thread := 9000 + i
		jrnd := rand.New(rand.NewPCG(uint64(thread), 2424))
		s.wg.Go(func() {
			s.loop(ctx, "java", jrnd, func(ctx context.Context) (bool, error) { return s.javaAcquire(ctx, thread) },
				func(ctx context.Context) error { return s.javaRelease(ctx, thread) })
		})
	}
	return s
}

// loop acquires one permit, holds it and releases it until ctx ends,
// between iterations waiting while the semaphore is off.
func (s *t24Sem) loop(ctx context.Context, lang string, rnd *rand.Rand, acquire func(context.Context) (bool, error), release func(context.Context) error) {
	bound := t24GoTimeout + t24GoSlack
	if lang == "java" {
		bound = t24SemWait + t24JavaSlack
	}
	for ctx.Err() == nil {
		s.active.Add(1) // before the check, so that pause sees the iteration or the iteration sees off
		if s.off.Load() {
			s.active.Add(-1)
			netWait(ctx, 10*time.Millisecond)
			continue
		}
		start := time.Now()
		ok, err := acquire(ctx)
		took := time.Since(start)
		if ctx.Err() != nil {
			if ok {
				_ = release(context.Background())
			}
			s.active.Add(-1)
			return // cancelled by the end of the run, not a result
		}
		s.mu.Lock()
		s.longest[lang] = max(s.longest[lang], took)
		if took > bound {
			s.hung++
		}
		switch {
		case err != nil:
			s.failed[lang]++
			if _, ok := s.errSamples[lang+" acquire"]; !ok {
				s.errSamples[lang+" acquire"] = err.Error()
			}
		case !ok:
			s.busy[lang]++
		default:
			s.acquired[lang]++
		}
		s.mu.Unlock()
		if ok {
			g := s.gauge.Add(1)
			for m := s.maxGauge.Load(); g > m && !s.maxGauge.CompareAndSwap(m, g); m = s.maxGauge.Load() {
			}
			if g > t24SemPermits {
				s.over.Add(1)
			}
			netWait(ctx, time.Duration(rnd.Int64N(int64(t24SemHold))))
			s.gauge.Add(-1)
			if err := release(context.Background()); err != nil {
				s.mu.Lock()
				s.releaseErrs[lang]++
				if _, ok := s.errSamples[lang+" release"]; !ok {
					s.errSamples[lang+" release"] = err.Error()
				}
				s.mu.Unlock()
			}
		} else if err != nil {
			netWait(ctx, 20*time.Millisecond)
		}
		s.active.Add(-1)
	}
}

func (s *t24Sem) goAcquire(ctx context.Context) (bool, error) {
	actx, cancel := context.WithTimeout(ctx, t24GoTimeout)
	defer cancel()
	return s.sem.TryAcquire(actx, 1, t24SemWait)
}

func (s *t24Sem) goRelease(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return s.sem.Release(rctx, 1)
}

func (s *t24Sem) javaAcquire(ctx context.Context, thread int) (bool, error) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	r, err := s.peer.Do(dctx, jvmReq{Thread: thread, Op: "tryAcquire", Kind: "semaphore", Name: t24SemName, Permits: 1, Wait: t24SemWait})
	switch {
	case err != nil:
		return false, err
	case !r.OK:
		return false, errors.New(r.Err)
	}
	return string(r.Result) == "true", nil
}

func (s *t24Sem) javaRelease(ctx context.Context, thread int) error {
	dctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	r, err := s.peer.Do(dctx, jvmReq{Thread: thread, Op: "release", Kind: "semaphore", Name: t24SemName, Permits: 1})
	if err == nil && !r.OK {
		err = errors.New(r.Err)
	}
	return err
}

// pause stops the loops between iterations and returns once none is in
// one: no permit is held or being acquired or released.
func (s *t24Sem) pause(ctx context.Context) {
	s.off.Store(true)
	for s.active.Load() > 0 && ctx.Err() == nil {
		netWait(ctx, 5*time.Millisecond)
	}
}

// reset, after the empty restart, waits for the Client's clean-up, sets
// the permits again (the restart erased them; a semaphore that survived
// must have them all free) and resumes the loops.
func (s *t24Sem) reset(ctx context.Context) error {
	got, err := sfSettle(s.c, s.sem.Available, 0, t24SemSettle) // the erased count, or what survived
	if err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ok, err := s.sem.TrySetPermits(sctx, t24SemPermits)
	if err != nil {
		return err
	}
	if !ok && got.got != t24SemPermits {
		return fmt.Errorf("semaphore survived the restart with %d of %d permits free and none held", got.got, t24SemPermits)
	}
	if ok {
		s.resets++
	}
	s.off.Store(false)
	return nil
}

// finish joins the loops (their ctx has ended) and waits for the free
// count to settle at the permits, reporting what it came to.
func (s *t24Sem) finish() (sfSettled, error) {
	s.wg.Wait()
	return sfSettle(s.c, s.sem.Available, t24SemPermits, t24SemSettle)
}

// t24Run runs the Go processes and the JVM in env through the fault
// phases and judges them.
func t24Run(t *testing.T, env t24Env) {
	cycles := sized(1, 6)
	// Hand-offs within t24After of a fault count as faulted, so a heal of
	// 3 s leaves 2 s of healthy ones: enough, even at PR size on a loaded
	// machine, for Redisson to take the lock from Go after a failover.
	healFor := 3 * time.Second
	names := sized(1, 4) // per kind

	oracle := startOracle(t)
	peer := startJVMPeer(t, env.jvmArgs)
	oc, err := dialOracle(oracle.Addr(), false)
	require.NoError(t, err)
	t.Cleanup(oc.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cfg := t24GoConfig{Addrs: env.goAddrs, PubSub: env.pubsub, OracleAddr: oracle.Addr(), Lease: t24Lease, Kinds: allKinds, Names: names, Workers: t24Workers,
		MasterSet: env.masterSet, ReplicaAcks: env.replicaAcks}
	var ws []*workerProc
	for range 2 {
		w := startWorker(t, "t24-go", cfg)
		_, err := w.Expect(ctx, "ready")
		require.NoError(t, err)
		ws = append(ws, w)
	}

	var (
		mu   sync.Mutex
		secs []t24Sec
	)
	report := func(s t24Sec) {
		mu.Lock()
		secs = append(secs, s)
		mu.Unlock()
	}
	var collectors sync.WaitGroup
	collectErrs := make([]error, len(ws))
	for i, w := range ws {
		collectors.Go(func() {
			for {
				m, err := w.Next(ctx)
				if err != nil {
					collectErrs[i] = err
					return
				}
				switch m.Verb {
				case "sec":
					var s t24Sec
					if err := m.Decode(&s); err != nil {
						collectErrs[i] = err
						return
					}
					report(s)
				case "stopped":
					return
				case "error":
					collectErrs[i] = fmt.Errorf("worker %v: %s", w, m.Payload)
				}
			}
		})
	}
	runCtx, endRun := context.WithCancel(ctx)
	var java sync.WaitGroup
	for ki, k := range allKinds {
		for g := range t24Workers {
			thread := 1 + ki*100 + g
			rnd := rand.New(rand.NewPCG(uint64(thread), 24))
			java.Go(func() { t24JavaLoop(runCtx, peer, oc, thread, k, t24Name(k, g%names), rnd, report) })
		}
	}
	var sem *t24Sem
	if env.semAddr != "" {
		sem = t24StartSem(t, runCtx, env.semAddr, peer)
	}
	for _, w := range ws {
		require.NoError(t, w.Send("run"))
	}
	sticky := func(d time.Duration) {
		for _, w := range ws {
			require.NoError(t, w.SendJSON("sticky", d))
		}
	}

	// The schedule: a healthy warm-up, then each fault and a healthy phase.
	start := time.Now()
	var phases []t24Phase
	netWait(ctx, healFor)
	for range cycles {
		for _, f := range env.faults {
			semOff := f.semOff && sem != nil
			if semOff {
				sem.pause(ctx)
			}
			ph := t24Phase{what: f.what, start: monoNow()}
			ph.kill, err = f.run(ctx, sticky)
			require.NoError(t, err, f.what)
			if semOff {
				require.NoError(t, sem.reset(ctx), "the semaphore after %s", f.what)
			}
			ph.end = monoNow()
			phases = append(phases, ph)
			netWait(ctx, healFor)
		}
	}
	endAll := monoNow()
	endRun()
	java.Wait()
	var semEnd sfSettled
	if sem != nil {
		semEnd, err = sem.finish()
		require.NoError(t, err, "the semaphore's count at the end")
	}
	for _, w := range ws {
		require.NoError(t, w.Send("stop"))
	}
	collectors.Wait()
	for _, err := range collectErrs {
		require.NoError(t, err)
	}
	elapsed := time.Since(start)

	v := t24Verify(t, oracle, phases, env.redissonGap)
	r := t24Analyse(secs, phases, endAll, env.redissonGap)
	t.Logf("T24 %s: %d cycles of %d fault phases (%v healing after each), %d names per kind, %d Go workers x 2 processes + %d Java threads per kind, in %v; %s",
		t.Name(), cycles, len(env.faults), healFor, names, t24Workers, t24Workers, elapsed.Round(time.Millisecond), env.notes())
	t.Logf("T24 oracle: %v", v)
	t.Logf("T24 acquisitions: go %d, java %d; failed: go %d (%d timeouts, %d too few replicas), java %d (%d timeouts, %d too few replicas); hung %d (longest go %v, java %v); unlock errors go %d, java %d",
		r.acquired["go"], r.acquired["java"], r.failed["go"], r.timeouts["go"], r.replication["go"], r.failed["java"], r.timeouts["java"], r.replication["java"],
		r.hung, r.longest["go"].Round(time.Millisecond), r.longest["java"].Round(time.Millisecond), r.unlockErrs["go"], r.unlockErrs["java"])
	if env.replicaAcks > 0 {
		t.Logf("T24 rule (T8's): both sides in safe mode (Go WithReplicaAcks(%d, %v), Redisson checkLockSyncedSlaves), the master frozen through each promotion; an acquisition too few replicas acknowledged is taken back and counted above as too few replicas; overlaps fail except those with a Java section in a failover window (Redisson waits only for the replicas it counts as available), counted above",
			env.replicaAcks, t24AckWait)
	}
	if sem != nil {
		t.Logf("T24 semaphore (%d permits, %d Go + %d Java workers): acquired go %d, java %d; busy go %d, java %d; failed go %d, java %d; gauge max %d, %d over the permits; releases without an answer go %d, java %d; set again after %d empty restarts; at the end %d free after %v; hung %d (longest go %v, java %v)",
			t24SemPermits, t24SemWorkers, t24SemWorkers, sem.acquired["go"], sem.acquired["java"], sem.busy["go"], sem.busy["java"],
			sem.failed["go"], sem.failed["java"], sem.maxGauge.Load(), sem.over.Load(), sem.releaseErrs["go"], sem.releaseErrs["java"],
			sem.resets, semEnd.got, semEnd.waited.Round(time.Millisecond), sem.hung, sem.longest["go"].Round(time.Millisecond), sem.longest["java"].Round(time.Millisecond))
		for k, e := range sem.errSamples {
			t.Logf("T24 semaphore first %s error: %s", k, e)
		}
	}
	t.Logf("T24 hand-offs: %d faulted (%d across languages), %d healthy after healing (%d across languages)",
		len(r.faulted), r.faultedCross, len(r.healthy), len(r.healthyCross))
	t.Logf("T24 healthy hand-off latency: all p50 %v p99 %v max %v; across languages p50 %v p99 %v max %v; faulted p50 %v p99 %v max %v",
		t24Pct(r.healthy, 0.5), t24Pct(r.healthy, 0.99), t24Pct(r.healthy, 1),
		t24Pct(r.healthyCross, 0.5), t24Pct(r.healthyCross, 0.99), t24Pct(r.healthyCross, 1),
		t24Pct(r.faulted, 0.5), t24Pct(r.faulted, 0.99), t24Pct(r.faulted, 1))
	t.Logf("T24 Go losses while holding: %d, reported after the deadline: %s; during Unlock: %d, reported after the deadline: %s (bound %v)",
		len(r.lossDelays), procDurations(r.lossDelays), len(r.lossDelaysUnlocking), procDurations(r.lossDelaysUnlocking), t24LossInterval+t24LossSlack)
	t.Logf("T24 fenced tokens (Go and Java share the counter): %d hand-overs within a server life, %d not above the previous; across an empty restart %d/%d not above (the counter restarts with the server)",
		r.tokenPairs, r.tokenRegressions, r.tokenRestartLower, r.tokenRestartPairs)
	if env.redissonGap {
		t.Logf("T24 fenced tokens not above the previous after a Java acquisition, within a failover window (Redisson's gap, not failed): %d; first: %s", len(r.gapRegressions), strings.Join(r.gapRegressions[:min(1, len(r.gapRegressions))], ""))
	}
	for k, e := range r.errSamples {
		t.Logf("T24 first %s error: %s", k, e)
	}

	if r.hung > 0 {
		t.Errorf("%d acquire calls past their bound; first: %+v", r.hung, r.firstHung)
	}
	if len(r.healthy) == 0 || len(r.healthyCross) == 0 {
		t.Errorf("no healthy hand-offs (%d) or none across languages (%d)", len(r.healthy), len(r.healthyCross))
	}
	if p, bound := t24Pct(r.healthyCross, 0.99), t24CrossBound(); p > bound {
		t.Errorf("healthy hand-off p99 across languages %v, want <= %v", p, bound)
	}
	// The acceptance is the wake-ups across languages; the p99 of all
	// hand-offs is judged at nightly size, where one slow second of a
	// shared CI machine weighs less.
	if p := t24Pct(r.healthy, 0.99); p > t24HealthyP99 && isNightly() {
		t.Errorf("healthy hand-off p99 %v, want <= %v", p, t24HealthyP99)
	}
	for _, d := range append(slices.Clone(r.lossDelays), r.lossDelaysUnlocking...) {
		if d > t24LossInterval+t24LossSlack {
			t.Errorf("a Go loss was reported %v after its deadline, want <= %v (while holding: %s; during Unlock: %s)",
				d, t24LossInterval+t24LossSlack, procDurations(r.lossDelays), procDurations(r.lossDelaysUnlocking))
			break
		}
	}
	if r.tokenRegressions > 0 {
		t.Errorf("%d of %d fenced hand-overs within a server life got a token not above the previous; first: %s", r.tokenRegressions, r.tokenPairs, r.firstRegression)
	}
	if want := sized(0, 10000); len(r.faulted) < want {
		t.Errorf("%d faulted hand-offs, want at least %d", len(r.faulted), want)
	}
	if r.acquired["java"] == 0 || r.acquired["go"] == 0 {
		t.Errorf("a side never acquired: %v", r.acquired)
	}
	if sem != nil {
		t24JudgeSem(t, sem, semEnd)
	}
}

// t24JudgeSem fails t if the semaphore's gauge went over the permits, a
// call hung, a side never acquired, or the free count at the end is not
// the permits less at most the releases that got no answer.
func t24JudgeSem(t *testing.T, sem *t24Sem, end sfSettled) {
	if n := sem.over.Load(); n > 0 {
		t.Errorf("semaphore: %d acquisitions raised the gauge over %d permits (max %d)", n, t24SemPermits, sem.maxGauge.Load())
	}
	if sem.hung > 0 {
		t.Errorf("semaphore: %d acquire calls past their bound", sem.hung)
	}
	if sem.acquired["go"] == 0 || sem.acquired["java"] == 0 {
		t.Errorf("semaphore: a side never acquired: %v", sem.acquired)
	}
	unanswered := int64(sem.releaseErrs["go"] + sem.releaseErrs["java"])
	if end.over || end.got > t24SemPermits || end.got < t24SemPermits-unanswered {
		t.Errorf("semaphore: %d permits free at the end, want %d (less at most %d releases without an answer)", end.got, t24SemPermits, unanswered)
	}
}

// t24Every calls f every period for d.
func t24Every(d, period time.Duration, f func()) {
	end := time.Now().Add(d)
	tick := time.NewTicker(period)
	defer tick.Stop()
	for time.Now().Before(end) {
		f()
		<-tick.C
	}
}

// t24Result is what t24Analyse found.
type t24Result struct {
	acquired, failed, timeouts, unlockErrs map[string]int
	replication                            map[string]int // failed: too few replicas acknowledged (safe mode)
	longest                                map[string]time.Duration
	hung                                   int
	firstHung                              t24Sec
	faulted, healthy, healthyCross         []time.Duration
	faultedCross                           int
	lossDelays, lossDelaysUnlocking        []time.Duration // losses while holding, and during Unlock
	tokenPairs, tokenRegressions           int             // fenced hand-overs within one server life
	tokenRestartPairs, tokenRestartLower   int             // and across an empty restart
	firstRegression                        string
	gapRegressions                         []string // excused: see t24Verify
	errSamples                             map[string]string
}

// t24Analyse counts the calls, times the hand-offs by phase and the Go
// losses. A hand-off is an acquisition whose call began before the
// previous holder of the name released it: its latency runs from that
// release's reply to this acquire's (0 when the acquire came first). It is
// faulted when it came during a fault phase or within t24After of its end,
// healthy when it came later, before the next fault.
//
// With redissonGap, a token not above the previous within a failover
// window (t24InWindow) is counted apart, not as a regression, when the
// previous hold was Java's: an acquisition Redisson made without a
// replica's acknowledgement (see t24Verify).
func t24Analyse(secs []t24Sec, phases []t24Phase, end int64, redissonGap bool) t24Result {
	r := t24Result{
		acquired: map[string]int{}, failed: map[string]int{}, timeouts: map[string]int{}, unlockErrs: map[string]int{}, replication: map[string]int{},
		longest: map[string]time.Duration{}, errSamples: map[string]string{},
	}
	byName := map[string][]t24Sec{}
	for _, s := range secs {
		took := time.Duration(s.Returned - s.Start)
		r.longest[s.Lang] = max(r.longest[s.Lang], took)
		if took > time.Duration(s.Bound) {
			if r.hung == 0 {
				r.firstHung = s
			}
			r.hung++
		}
		if !s.Acquired {
			r.failed[s.Lang]++
			if strings.HasPrefix(s.Err, "replication: ") || strings.Contains(s.Err, "NoSyncedSlavesException") {
				r.replication[s.Lang]++
			}
			if s.Err == "timeout" {
				r.timeouts[s.Lang]++
			} else if _, ok := r.errSamples[s.Lang+" acquire"]; !ok {
				r.errSamples[s.Lang+" acquire"] = s.Err
			}
			continue
		}
		r.acquired[s.Lang]++
		if s.UnlockErr != "" {
			r.unlockErrs[s.Lang]++
			if _, ok := r.errSamples[s.Lang+" unlock"]; !ok {
				r.errSamples[s.Lang+" unlock"] = s.UnlockErr
			}
		}
		if s.Lost != 0 && s.Deadline != 0 {
			if s.Lost < s.Unlocking {
				r.lossDelays = append(r.lossDelays, time.Duration(s.Lost-s.Deadline))
			} else {
				r.lossDelaysUnlocking = append(r.lossDelaysUnlocking, time.Duration(s.Lost-s.Deadline))
			}
		}
		byName[s.Name] = append(byName[s.Name], s)
	}
	phaseOf := func(t int64) (faulted, healthy bool) {
		for i, p := range phases {
			if t >= p.start && t < p.end+int64(t24After) {
				return true, false
			}
			next := end
			if i+1 < len(phases) {
				next = phases[i+1].start
			}
			if t >= p.end+int64(t24After) && t < next {
				return false, true
			}
		}
		return false, false // the warm-up
	}
	epoch := func(t int64) int { // server lives: restarts begun before t
		n := 0
		for _, p := range phases {
			if p.kill != 0 && p.kill < t {
				n++
			}
		}
		return n
	}
	for _, ss := range byName {
		slices.SortFunc(ss, func(a, b t24Sec) int { return int(a.Returned - b.Returned) })
		for i := 1; i < len(ss); i++ {
			a, b := ss[i-1], ss[i]
			if a.Kind.hasToken() {
				if epoch(a.Returned) == epoch(b.Returned) {
					r.tokenPairs++
					switch {
					case b.Token > a.Token:
					case redissonGap && a.Lang == "java" && t24InWindow(phases, b.Returned):
						r.gapRegressions = append(r.gapRegressions, fmt.Sprintf("%s: %s token %d then %s token %d", a.Name, a.Lang, a.Token, b.Lang, b.Token))
					default:
						r.tokenRegressions++
						if r.firstRegression == "" {
							r.firstRegression = fmt.Sprintf("%s: %s token %d (acquired at %d) then %s token %d (at %d)", a.Name, a.Lang, a.Token, a.Returned, b.Lang, b.Token, b.Returned)
						}
					}
				} else {
					r.tokenRestartPairs++
					if b.Token <= a.Token {
						r.tokenRestartLower++
					}
				}
			}
			if b.Start >= a.Released {
				continue // nobody was waiting
			}
			d := max(0, time.Duration(b.Returned-a.Released))
			faulted, healthy := phaseOf(b.Returned)
			cross := a.Lang != b.Lang
			switch {
			case faulted:
				r.faulted = append(r.faulted, d)
				if cross {
					r.faultedCross++
				}
			case healthy:
				r.healthy = append(r.healthy, d)
				if cross {
					r.healthyCross = append(r.healthyCross, d)
				}
			}
		}
	}
	return r
}

// t24InWindow reports whether t falls in a fault phase or within
// t24After of its end.
func t24InWindow(phases []t24Phase, t int64) bool {
	for _, p := range phases {
		if t >= p.start && t < p.end+int64(t24After) {
			return true
		}
	}
	return false
}

// t24Verify is oracle.Verify, except that with redissonGap (the Sentinel
// variant) an overlap is excused, logged and counted, but not failed, when
// one of its sections is Java's and the later one began within a failover
// window (t24InWindow), and so are the lost updates of its sections:
// Redisson follows an acquisition with WAIT only for the replicas it
// counts as available, and fails it only when none acknowledged, so a
// failover can lose a Java hold it reported, and hand the lock out again.
// Every other overlap or lost update fails t, Go's above all: Go waits
// for one acknowledgement and takes back an acquisition without it.
func t24Verify(t *testing.T, oracle *Oracle, phases []t24Phase, redissonGap bool) Verdict {
	if !redissonGap {
		return oracle.Verify(t, -1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := oracle.Verdict(ctx)
	require.NoError(t, err)
	java := func(iv Interval) bool { return strings.Contains(iv.Owner, ":java-thread-") }
	excused := map[string]bool{} // sections of excused overlaps
	bad, excusedOverlaps := 0, 0
	for _, ov := range v.Check.Overlaps {
		freeze := ""
		for _, p := range phases {
			if ov.Next.Start >= p.start && ov.Next.Start < p.end+int64(t24After) {
				freeze = fmt.Sprintf("%v into the failover phase", time.Duration(ov.Next.Start-p.start).Round(time.Millisecond))
			}
		}
		if freeze != "" && (java(ov.First) || java(ov.Next)) {
			excused[ov.First.Section], excused[ov.Next.Section] = true, true
			excusedOverlaps++
			t.Logf("T24 excused (Redisson's gap): %v, %s", ov, freeze)
			continue
		}
		bad++
		t.Errorf("oracle: %v (%s)", ov, cmp.Or(freeze, "outside any failover window"))
	}
	lostExcused := 0
	for _, lu := range v.Check.LostUpdates {
		if excused[lu.Section] {
			lostExcused++
			continue
		}
		bad++
		t.Errorf("oracle: %v", lu)
	}
	switch {
	case v.Stats.StaleAccepted != 0:
		t.Errorf("oracle: %d stale writes accepted: %v", v.Stats.StaleAccepted, v)
	case v.Stats.Overlaps > int64(len(v.Check.Overlaps)) || v.Stats.LostUpdates > int64(len(v.Check.LostUpdates)):
		t.Errorf("oracle: the online counts exceed the checker's: %v", v)
	}
	t.Logf("T24 oracle overlaps excused as Redisson's gap: %d (and %d lost updates of theirs); not excused: %d", excusedOverlaps, lostExcused, bad)
	return v
}

// t24Pct is netPercentile on a copy, rounded for the log.
func t24Pct(ds []time.Duration, p float64) time.Duration {
	return netPercentile(slices.Clone(ds), p).Round(100 * time.Microsecond)
}
