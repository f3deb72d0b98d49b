package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/election"
	"github.com/interlock-go/interlock/internal/redistest"
)

// The election under chaos (docs/reliability.md, "Election"): two Go
// worker processes and one Redisson JVM campaign for one election for the
// whole run, each leader writing to a fenced resource every writeEvery and
// resigning after a term of electionHoldMin to electionHoldMax, while the
// test kills the current leader (SIGKILL, then starts a new process) or
// freezes it (SIGSTOP for 1.5 watchdog timeouts, then SIGCONT), in turn,
// every third fault aimed at the JVM. Every Go process, and the test
// itself, observes the election (election.Observe).
//
// The resource is a script on the election's server that admits a write
// only if its token is at least the highest it admitted (a fence), and
// that checks it against the ground truth, the lock's token counter: an
// admitted write whose token is below the counter came from a leader that
// had been deposed (a newer term had begun), which is a stale accept. So 0
// stale accepts means that at no moment did two processes act as leaders.
//
// Acceptance: 0 stale accepts; after each kill, the next term's first
// write comes within one watchdog timeout (plus the scheduling slack of
// the tier); every observer saw every term, by token, between the first
// and the last it saw, and the test's own observer every term of the run.

// Sizes.
const (
	electionWriteEvery = 50 * time.Millisecond
	electionHoldMin    = 300 * time.Millisecond
	electionHoldMax    = 1000 * time.Millisecond
	// electionRestMax bounds the rest a Go candidate takes after a term
	// before it campaigns again, so that the JVM, slower to react to a
	// release than the Go processes, leads too.
	electionRestMax = 1500 * time.Millisecond
)

// electionFence is the fenced resource. KEYS: the fence hash (max), the
// lock's token counter, the stats hash, the list of terms (one entry per
// token's first admitted write: "token writer t"). ARGV: token, writer,
// the writer's CLOCK_MONOTONIC in ns.
const electionFence = `
local token = tonumber(ARGV[1])
local max = tonumber(redis.call('HGET', KEYS[1], 'max') or '0')
if token < max then
  redis.call('HINCRBY', KEYS[3], 'stale_rejected', 1)
  return 0
end
local current = tonumber(redis.call('GET', KEYS[2]) or '0')
if token < current then
  redis.call('HINCRBY', KEYS[3], 'stale_accepted', 1)
  redis.call('HSET', KEYS[3], 'last_stale', ARGV[2] .. ' wrote with token ' .. ARGV[1] .. ' while the counter was ' .. current)
end
if token > max then
  redis.call('HSET', KEYS[1], 'max', ARGV[1])
  redis.call('RPUSH', KEYS[4], ARGV[1] .. ' ' .. ARGV[2] .. ' ' .. ARGV[3])
end
redis.call('HINCRBY', KEYS[3], 'accepted', 1)
return 1
`

// electionRes is the oracle's resource that leaders work on.
const electionRes = "election"

// electionKeys are the resource's keys for the election called name.
func electionKeys(name string) []string {
	return []string{"chaos:fence", "redisson_lock_token:{" + name + "}", "chaos:stats", "chaos:terms"}
}

// electionWorkerConfig configures a Go candidate process.
type electionWorkerConfig struct {
	Addr     string
	Name     string
	Writer   string
	Watchdog time.Duration
}

// electionMsg is what a candidate process reports: "ready" (Client),
// "lead", "lost" and "resigned" (Token, T, Accepted, Rejected) and
// "observed" (Token, Owner, T).
type electionMsg struct {
	Client   string `json:"client,omitempty"`
	Token    uint64 `json:"token,omitempty"`
	Owner    string `json:"owner,omitempty"`
	T        int64  `json:"t,omitempty"`
	Accepted int    `json:"accepted,omitempty"`
	Rejected int    `json:"rejected,omitempty"`
	Cause    string `json:"cause,omitempty"`
}

var _ = register("election-candidate", electionCandidate)

// electionCandidate campaigns until stdin closes: each term writes to the
// resource every electionWriteEvery while its context lives, for a random
// hold, then resigns. An Observe reports every leader it sees.
func electionCandidate() error {
	var cfg electionWorkerConfig
	if err := workerConfig(&cfg); err != nil {
		return err
	}
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{cfg.Addr}, ForceSingleClient: true})
	if err != nil {
		return err
	}
	defer rc.Close()
	c, err := interlock.New(rc, interlock.WithWatchdogTimeout(cfg.Watchdog))
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // the parent closes stdin to stop us
		for range workerCommands() {
		}
		cancel()
	}()
	e := election.New(c, cfg.Name, election.WithRecheck(cfg.Watchdog))
	var observing sync.WaitGroup
	observing.Go(func() {
		for ld := range e.Observe(ctx) {
			workerSay("observed", electionMsg{Token: ld.Token, Owner: ld.Owner, T: monoNow()})
		}
	})
	defer observing.Wait()
	workerSay("ready", electionMsg{Client: c.ID()})
	fence := rueidis.NewLuaScript(electionFence)
	ks := electionKeys(cfg.Name)
	oracle := &oracleClient{rc: rc, fence: true}
	for ctx.Err() == nil {
		lead, err := e.Campaign(ctx, cfg.Writer)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("campaign: %w", err)
		}
		m := electionMsg{Token: lead.Token(), T: monoNow()}
		workerSay("lead", m)
		// A term runs its course even when the parent asks us to stop, so
		// that no term is too short for the observers.
		term := lead.Context()
		sec := Section{Res: electionRes, Owner: cfg.Writer, ID: fmt.Sprintf("%s:%d", cfg.Writer, lead.Token()), Token: lead.Token()}
		octx, ocancel := context.WithTimeout(context.Background(), 5*time.Second)
		in, err := oracle.Enter(octx, sec)
		ocancel()
		if err != nil {
			return err
		}
		hold := time.NewTimer(electionHoldMin + rand.N(electionHoldMax-electionHoldMin))
		tick := time.NewTicker(electionWriteEvery)
	writing:
		for {
			// Write only while this process believes it leads.
			if term.Err() != nil {
				break
			}
			wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
			ok, err := fence.Exec(wctx, rc, ks, []string{strconv.FormatUint(lead.Token(), 10), cfg.Writer, strconv.FormatInt(monoNow(), 10)}).AsInt64()
			wcancel()
			switch {
			case err != nil:
				return fmt.Errorf("fenced write: %w", err)
			case ok == 1:
				m.Accepted++
			default:
				m.Rejected++
			}
			if in {
				// The oracle's section ends at its last accepted write: it
				// never exits, so that an exit recorded after a stop
				// cannot look like an overlap.
				octx, ocancel := context.WithTimeout(context.Background(), 5*time.Second)
				in, err = oracle.RMW(octx, sec, time.Duration(1+rand.N(4))*time.Millisecond)
				ocancel()
				if err != nil {
					return err
				}
			}
			select {
			case <-tick.C:
			case <-hold.C:
				break writing
			case <-term.Done():
			}
		}
		hold.Stop()
		tick.Stop()
		m.T = monoNow()
		if term.Err() != nil {
			m.Cause = context.Cause(term).Error()
			workerSay("lost", m)
			continue
		}
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = e.Resign(rctx)
		rcancel()
		if err != nil {
			m.Cause = err.Error()
			workerSay("lost", m)
			continue
		}
		workerSay("resigned", m)
		rest := time.NewTimer(rand.N(electionRestMax))
		select {
		case <-rest.C:
		case <-ctx.Done():
			rest.Stop()
		}
	}
	return nil
}

// electionProc is one candidate process of the test: a Go worker or the
// JVM.
type electionProc struct {
	label  string // go-1, jvm, ...
	client string // its Client id: owner strings start with it
	pid    int
	kill   func() error
	signal func(syscall.Signal) error
	stop   func()          // asks it to end its term and exit (nil: the run's context does)
	done   <-chan struct{} // closed once it exited and its reader ended
}

// electionRun is the state of one run, shared by the test's goroutines.
type electionRun struct {
	t        *testing.T
	addr     string
	name     string
	watchdog time.Duration

	oracle struct {
		enter, read, write string
		keys               []any
	} // the oracle's scripts by SHA1, for the JVM

	mu        sync.Mutex
	procs     map[string]*electionProc // by label
	observers []*electionObserver
	goTerms   int
	jvmTerms  int
	jvmLost   int
	rejected  int // writes refused to deposed leaders, as they counted them
	errs      []string
}

// electionObserver is what one Observe reported: tokens in order.
type electionObserver struct {
	label  string
	tokens []uint64
	at     map[uint64]int64 // when each token was seen (CLOCK_MONOTONIC ns)
}

func (r *electionRun) fail(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *electionRun) newObserver(label string) *electionObserver {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := &electionObserver{label: label}
	r.observers = append(r.observers, o)
	return o
}

func (r *electionRun) saw(o *electionObserver, token uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o.tokens = append(o.tokens, token)
	if o.at == nil {
		o.at = map[uint64]int64{}
	}
	o.at[token] = monoNow()
}

// startGo starts Go candidate number n (a new process each time, gen).
func (r *electionRun) startGo(n, gen int) {
	label := fmt.Sprintf("go-%d.%d", n, gen)
	w := startWorker(r.t, "election-candidate", electionWorkerConfig{Addr: r.addr, Name: r.name, Writer: label, Watchdog: r.watchdog})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ready electionMsg
	if err := w.ExpectJSON(ctx, "ready", &ready); err != nil {
		r.t.Fatalf("%s: %v", label, err)
	}
	done := make(chan struct{})
	p := &electionProc{label: label, client: ready.Client, pid: w.Pid(), kill: w.Kill, signal: w.signal,
		stop: func() { _ = w.CloseStdin() }, done: done}
	obs := r.newObserver(label)
	go func() {
		defer close(done)
		for m := range w.msgs {
			var em electionMsg
			if m.Payload != "" {
				if err := m.Decode(&em); err != nil {
					r.fail("%s: %v", label, err)
					continue
				}
			}
			switch m.Verb {
			case "observed":
				r.saw(obs, em.Token)
			case "lead":
				r.mu.Lock()
				r.goTerms++
				r.mu.Unlock()
			case "lost", "resigned":
				r.mu.Lock()
				r.rejected += em.Rejected
				r.mu.Unlock()
			case "error":
				r.fail("%s: %s", label, m.Payload)
			}
		}
	}()
	r.mu.Lock()
	r.procs[label] = p
	r.mu.Unlock()
}

// startJVM starts the JVM candidate (a new JVM each time, gen), whose
// terms a goroutine requests one after another until it dies or ctx ends.
func (r *electionRun) startJVM(ctx context.Context, gen int, sha string) {
	label := fmt.Sprintf("jvm.%d", gen)
	peer := startJVMPeer(r.t, []string{"--redis", "redis://" + r.addr, "--watchdog-ms", strconv.FormatInt(r.watchdog.Milliseconds(), 10)})
	done := make(chan struct{})
	p := &electionProc{label: label, client: peer.clientID, pid: peer.cmd.Process.Pid, kill: peer.cmd.Process.Kill,
		signal: func(s syscall.Signal) error { return peer.cmd.Process.Signal(s) }, done: done}
	keys := make([]any, 0, 4)
	for _, k := range electionKeys(r.name) {
		keys = append(keys, k)
	}
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			hold := electionHoldMin + rand.N(electionHoldMax-electionHoldMin)
			rep, err := peer.Do(ctx, jvmReq{Thread: 1, Op: "term", Kind: "election", Name: r.name, Extra: map[string]any{
				"holdMs": hold.Milliseconds(), "writeMs": electionWriteEvery.Milliseconds(), "sha": sha, "keys": keys, "writer": label,
				"oEnter": r.oracle.enter, "oRead": r.oracle.read, "oWrite": r.oracle.write, "oKeys": r.oracle.keys, "oRes": electionRes,
			}})
			if err != nil {
				return // killed, or the run is over
			}
			if !rep.OK {
				r.fail("%s: term: %s", label, rep.Err)
				return
			}
			var res struct {
				Rejected int  `json:"rejected"`
				Lost     bool `json:"lost"`
			}
			if err := json.Unmarshal(rep.Result, &res); err != nil {
				r.fail("%s: term reply %s: %v", label, rep.Result, err)
				return
			}
			r.mu.Lock()
			r.jvmTerms++
			r.rejected += res.Rejected
			if res.Lost {
				r.jvmLost++
			}
			r.mu.Unlock()
		}
	}()
	r.mu.Lock()
	r.procs[label] = p
	r.mu.Unlock()
}

// leaderProc returns the process that leads, and the term's token, once a
// process whose label starts with prefix leads (any process after
// within), or nil when nobody led meanwhile.
func (r *electionRun) leaderProc(ctx context.Context, e *election.Election, prefix string, within time.Duration) (*electionProc, uint64) {
	deadline := time.Now().Add(within)
	var other *electionProc
	var otherToken uint64
	for ctx.Err() == nil {
		ld, err := e.Leader(ctx)
		if err == nil {
			r.mu.Lock()
			for _, p := range r.procs {
				if strings.HasPrefix(ld.Owner, p.client+":") {
					if strings.HasPrefix(p.label, prefix) {
						r.mu.Unlock()
						return p, ld.Token
					}
					other, otherToken = p, ld.Token
				}
			}
			r.mu.Unlock()
		}
		if time.Now().After(deadline) && other != nil {
			return other, otherToken
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil, 0
}

// TestElectionChaos is the election's row of the fault suite.
func TestElectionChaos(t *testing.T) {
	redistest.RequireProcess(t)
	runFor := time.Duration(sized(7, 60)) * time.Second
	watchdog := time.Duration(sized(1000, 2000)) * time.Millisecond
	srv := redistest.Standalone(t)
	rc := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), runFor+2*time.Minute)
	defer cancel()
	sha, err := rc.Do(ctx, rc.B().ScriptLoad().Script(electionFence).Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	r := &electionRun{t: t, addr: srv.Addr(), name: "chaos-election", watchdog: watchdog, procs: map[string]*electionProc{}}
	// The oracle lives on the election's server, which no fault touches,
	// so that the JVM reaches it too.
	oracle := &Oracle{srv: srv, rc: rc}
	for _, sc := range []struct {
		src string
		sha *string
	}{{oracleEnterSrc, &r.oracle.enter}, {oracleReadSrc, &r.oracle.read}, {oracleWriteSrc, &r.oracle.write}} {
		if *sc.sha, err = rc.Do(ctx, rc.B().ScriptLoad().Script(sc.src).Build()).ToString(); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{oracleResKey(electionRes), oracleOccKey(electionRes), oracleStats, oracleLog, oracleResources} {
		r.oracle.keys = append(r.oracle.keys, k)
	}

	// The test's own observer, which lives through the whole run.
	c, err := interlock.New(rc, interlock.WithWatchdogTimeout(watchdog))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	el := election.New(c, r.name, election.WithRecheck(watchdog))
	obsCtx, stopObs := context.WithCancel(ctx)
	main := r.newObserver("test")
	var observing sync.WaitGroup
	observing.Go(func() {
		for ld := range el.Observe(obsCtx) {
			r.saw(main, ld.Token)
		}
	})

	// The JVM first, and its first term before the Go candidates start:
	// slower to react to a release than they are, it might otherwise not
	// lead at all in a short run.
	runCtx, stopRun := context.WithCancel(ctx)
	r.startJVM(runCtx, 0, sha)
	if p, _ := r.leaderProc(ctx, el, "jvm", 30*time.Second); p == nil || !strings.HasPrefix(p.label, "jvm") {
		t.Fatal("the JVM did not lead")
	}
	r.startGo(1, 0)
	r.startGo(2, 0)

	// The faults, in turn: the JVM is killed in the nightly tier only,
	// where a new JVM's start fits the run.
	schedule := []electionFault{{kind: "pause", target: "jvm"}, {kind: "kill", target: "go-"}, {kind: "pause", target: "go-"}, {kind: "kill", target: "jvm"}}
	if !isNightly() {
		schedule[3].target = "go-"
	}
	var faults []electionFault
	gens := map[string]int{}
	start := time.Now()
	for i := 0; time.Since(start) < runFor; i++ {
		kind, prefix := schedule[i%len(schedule)].kind, schedule[i%len(schedule)].target
		p, token := r.leaderProc(ctx, el, prefix, 3*watchdog)
		if p == nil {
			t.Fatal("nobody led")
		}
		f := electionFault{kind: kind, target: p.label, token: token, at: monoNow()}
		switch kind {
		case "kill":
			if err := p.kill(); err != nil {
				t.Fatalf("killing %s: %v", p.label, err)
			}
			<-p.done
			r.mu.Lock()
			delete(r.procs, p.label)
			r.mu.Unlock()
			base, _, _ := strings.Cut(p.label, ".")
			gens[base]++
			if base == "jvm" {
				r.startJVM(runCtx, gens[base], sha)
			} else {
				n, _ := strconv.Atoi(strings.TrimPrefix(base, "go-"))
				r.startGo(n, gens[base])
			}
		case "pause":
			if err := p.signal(syscall.SIGSTOP); err != nil {
				t.Fatalf("stopping %s: %v", p.label, err)
			}
			time.Sleep(watchdog + watchdog/2)
			// The pause ends when the signal goes: taken after it, the
			// resumed process's first sighting may be recorded before.
			f.until = monoNow()
			if err := p.signal(syscall.SIGCONT); err != nil {
				t.Fatalf("resuming %s: %v", p.label, err)
			}
		}
		faults = append(faults, f)
		time.Sleep(time.Duration(200+rand.N(600)) * time.Millisecond)
	}

	// Stop: the Go candidates resign and exit when their stdin closes, the
	// JVM finishes its term and quits.
	stopRun()
	r.mu.Lock()
	var procs []*electionProc
	for _, p := range r.procs {
		procs = append(procs, p)
	}
	r.mu.Unlock()
	for _, p := range procs {
		_ = p.signal(syscall.SIGCONT)
		if p.stop != nil {
			p.stop()
		}
	}
	for _, p := range procs {
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			t.Errorf("%s did not stop", p.label)
		}
	}
	final, err := rc.Do(ctx, rc.B().Get().Key(electionKeys(r.name)[1]).Build()).AsUint64()
	if err != nil {
		t.Fatal(err)
	}
	// The test's observer sees the last term, or the vacancy after it.
	deadline := time.Now().Add(2 * watchdog)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		n := len(main.tokens)
		last := uint64(0)
		if n > 0 {
			last = main.tokens[n-1]
		}
		r.mu.Unlock()
		if last == final {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopObs()
	observing.Wait()

	// The verdict.
	stats, err := rc.Do(ctx, rc.B().Hgetall().Key("chaos:stats").Build()).AsStrMap()
	if err != nil {
		t.Fatal(err)
	}
	terms, err := rc.Do(ctx, rc.B().Lrange().Key("chaos:terms").Start(0).Stop(-1).Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	firstWrite := map[uint64]int64{}
	for _, line := range terms {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		tok, _ := strconv.ParseUint(f[0], 10, 64)
		at, _ := strconv.ParseInt(f[2], 10, 64)
		firstWrite[tok] = at
	}
	// A term began by the time its leader first wrote or the test's
	// observer saw it, whichever came first (a leader stopped at once
	// never writes).
	r.mu.Lock()
	began := map[uint64]int64{}
	for tok, at := range main.at {
		began[tok] = at
	}
	r.mu.Unlock()
	for tok, at := range firstWrite {
		if b, ok := began[tok]; !ok || at < b {
			began[tok] = at
		}
	}
	bound := watchdog + latencyBound(200*time.Millisecond)
	var killLat, pauseLat []time.Duration
	for _, f := range faults {
		next := uint64(0)
		for tok := range began {
			if tok > f.token && (next == 0 || tok < next) {
				next = tok
			}
		}
		if next == 0 {
			t.Errorf("%s of %s (token %d): no later term", f.kind, f.target, f.token)
			continue
		}
		lat := time.Duration(began[next] - f.at)
		if f.kind == "kill" {
			killLat = append(killLat, lat)
			if lat > bound {
				t.Errorf("kill of %s (token %d): the next term (%d) began %v later, beyond one watchdog timeout (%v) and the slack (bound %v)",
					f.target, f.token, next, lat, watchdog, bound)
			}
		} else {
			pauseLat = append(pauseLat, lat)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.errs {
		t.Error(e)
	}
	if n := stats["stale_accepted"]; n != "" && n != "0" {
		t.Errorf("%s stale accepts: %s", n, stats["last_stale"])
	}
	verdict := oracle.Verify(t, -1)
	seenAll := 0
	for _, o := range r.observers {
		if len(o.tokens) == 0 {
			continue
		}
		lo, hi := o.tokens[0], o.tokens[len(o.tokens)-1]
		if o == main {
			lo, hi = 1, final
		}
		have := map[uint64]bool{}
		// A frozen process observes nothing: a term between its
		// observer's last read before the process was stopped and its
		// first read once it ran again is not asked of it (a term between
		// two reads, as the package documents), nor the process's own term
		// that the stop cut short (the test stops a leader as soon as it
		// reads it, which may be before the observer of its process did).
		for _, f := range faults {
			if f.kind != "pause" || f.target != o.label {
				continue
			}
			have[f.token] = true
			// The terms between the last one the observer saw before the
			// process ran again and the first one after: its own two
			// reads around the stop, by token, not by the test's clock
			// for when a term began, which the test's observer may learn
			// late or the stop may follow late.
			last, first := uint64(0), uint64(math.MaxUint64)
			for tok, seen := range o.at {
				if seen < f.until {
					last = max(last, tok)
				} else {
					first = min(first, tok)
				}
			}
			for tok := range began {
				if tok > last && tok < first {
					have[tok] = true
				}
			}
		}
		for i, tok := range o.tokens {
			if i > 0 && tok <= o.tokens[i-1] {
				t.Errorf("observer %s: token %d after %d", o.label, tok, o.tokens[i-1])
			}
			have[tok] = true
		}
		var missed []uint64
		for tok := lo; tok <= hi; tok++ {
			if !have[tok] {
				missed = append(missed, tok)
			}
		}
		if len(missed) > 0 {
			t.Errorf("observer %s saw %d of the terms %d..%d; missed %v", o.label, int(hi-lo)+1-len(missed), lo, hi, missed)
		} else {
			seenAll++
		}
	}
	if r.jvmTerms == 0 {
		t.Error("the JVM never led")
	}
	kills, pauses := 0, 0
	for _, f := range faults {
		if f.kind == "kill" {
			kills++
		} else {
			pauses++
		}
	}
	for _, f := range faults {
		t.Logf("fault: %s %s, term %d", f.kind, f.target, f.token)
	}
	slices.Sort(killLat)
	slices.Sort(pauseLat)
	t.Logf("election chaos: %v, watchdog %v: %d terms (tokens 1..%d; Go %d, JVM %d reported), %d kills, %d pauses (%d aimed at the JVM), %s accepted writes, %s stale accepts, %s stale writes refused (%d counted by their writers), JVM terms ended lost %d",
		runFor, watchdog, final, final, r.goTerms, r.jvmTerms, kills, pauses, jvmFaults(faults), stats["accepted"], orZero(stats["stale_accepted"]), orZero(stats["stale_rejected"]), r.rejected, r.jvmLost)
	t.Logf("election chaos: takeover after a kill %v (bound %v); after a pause %v", killLat, bound, pauseLat)
	t.Logf("election chaos: oracle %v", verdict)
	t.Logf("election chaos: %d observers (%d Go processes and the test's), %d saw every term in their span (but those that began and ended while their process was stopped); the test's saw %d of %d",
		len(r.observers), len(r.observers)-1, seenAll, len(main.tokens), final)
}

// electionFault is one fault: its kind ("kill" or "pause"), the process
// it hit (in the schedule: a label prefix), the token of the term it hit,
// and when (CLOCK_MONOTONIC ns).
type electionFault struct {
	kind, target string
	token        uint64
	at, until    int64 // a pause ends at until
}

func jvmFaults(fs []electionFault) int {
	n := 0
	for _, f := range fs {
		if strings.HasPrefix(f.target, "jvm") {
			n++
		}
	}
	return n
}

func orZero(s string) string {
	if s == "" {
		return "0"
	}
	return s
}
