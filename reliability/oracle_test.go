package reliability

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"golang.org/x/sys/unix"

	"github.com/interlock-go/interlock/internal/redistest"
)

// The oracle.
//
// The oracle is the "resource" that critical sections protect, kept on a
// redis-server of its own that no test ever faults. Workers touch it only
// through four scripts, which check what a correct lock guarantees and
// count what went wrong:
//
//	Enter(res, section, token)  occupy res. Another occupant counts one
//	                            overlap; in fenced mode a token below the
//	                            highest seen is refused (stale_rejected),
//	                            and a higher token supersedes (evicts) the
//	                            older occupants instead of overlapping them.
//	Read(res, section, token)   GET c, deliberately apart from the write.
//	Write(res, section, token, v)  SET c v, after the worker slept 1-20 ms.
//	                            In fenced mode a token below the highest
//	                            seen is refused (stale_rejected); otherwise
//	                            the token raises the highest, and an
//	                            accepted token below it counts stale_accepted
//	                            (only possible with fencing off).
//	Exit(res, section)          leave res.
//
// Every call appends an event to the stream oracle:log with the owner,
// section, token, operation, outcome, value and t, the worker's
// CLOCK_MONOTONIC in nanoseconds (monoNow), which is one clock for every
// process on the host. checkIntervals reads the stream afterwards and
// reports critical sections that overlapped in time.
//
// The invariants of a correct run (Oracle.Verify): for every resource, c
// equals the number of accepted writes (each write is c+1 of a read, so a
// lost update leaves c short); overlaps == 0; stale_accepted == 0; and the
// interval checker finds nothing. A canary run, with fencing off under a
// fault that defeats a lease, must break them (Oracle.Violations > 0), or
// the oracle is blind.
//
// Tokens: fenced locks pass their fencing token, every other kind 0. The
// "fence" flag of the worker's oracleClient turns the checks on; with it
// off, tokens are still recorded so that stale_accepted shows what fencing
// would have refused.

// Oracle keys. A resource res has the hash oracle:res:{res} (c, max,
// writes) and the occupancy hash oracle:occ:{res} (section → token);
// oracle:resources lists resources, oracle:stats holds the counters and
// oracle:log the events.
const (
	oracleStats     = "oracle:stats"
	oracleLog       = "oracle:log"
	oracleResources = "oracle:resources"
)

func oracleResKey(res string) string { return "oracle:res:{" + res + "}" }
func oracleOccKey(res string) string { return "oracle:occ:{" + res + "}" }

// Counters in oracle:stats.
const (
	statEnters        = "enters"
	statOverlaps      = "overlaps"
	statSuperseded    = "superseded"
	statStaleRejected = "stale_rejected"
	statStaleAccepted = "stale_accepted"
	statWrites        = "writes"
	statLastOverlap   = "last_overlap"
)

// Operations in oracle:log.
const (
	opEnter = "enter"
	opRead  = "read"
	opWrite = "write"
	opExit  = "exit"
)

// The scripts share their argument layout:
//
//	KEYS: res hash, occupancy hash, oracle:stats, oracle:log, oracle:resources
//	ARGV: res, owner, section, token, fence ("1" or "0"), t, value
//
// and each returns 1 (accepted) or 0 (refused), Read the value of c.
const oracleLogCall = `
local function log(op, ok, v)
  redis.call('XADD', KEYS[4], '*', 'r', ARGV[1], 'o', ARGV[2], 's', ARGV[3],
    'k', ARGV[4], 'op', op, 'ok', ok, 't', ARGV[6], 'v', v)
end
`

var oracleEnter = rueidis.NewLuaScript(oracleEnterSrc)

// oracleEnterSrc is oracleEnter's text, for a client that runs it by its SHA1.
const oracleEnterSrc = oracleLogCall + `
local token = tonumber(ARGV[4])
local fence = ARGV[5] == '1'
local max = tonumber(redis.call('HGET', KEYS[1], 'max') or '0')
if fence and token < max then
  redis.call('HINCRBY', KEYS[3], 'stale_rejected', 1)
  log('enter', 0, '')
  return 0
end
if token > max then redis.call('HSET', KEYS[1], 'max', ARGV[4]) end
redis.call('SADD', KEYS[5], ARGV[1])
local occ = redis.call('HGETALL', KEYS[2])
for i = 1, #occ, 2 do
  if occ[i] ~= ARGV[3] then
    if fence and tonumber(occ[i + 1]) < token then
      redis.call('HDEL', KEYS[2], occ[i])
      redis.call('HINCRBY', KEYS[3], 'superseded', 1)
    else
      redis.call('HINCRBY', KEYS[3], 'overlaps', 1)
      redis.call('HSET', KEYS[3], 'last_overlap', ARGV[1] .. ': ' .. occ[i] .. ' and ' .. ARGV[3])
    end
  end
end
redis.call('HSET', KEYS[2], ARGV[3], ARGV[4])
redis.call('HINCRBY', KEYS[3], 'enters', 1)
log('enter', 1, '')
return 1
`

var oracleRead = rueidis.NewLuaScript(oracleReadSrc)

// oracleReadSrc is oracleRead's text, for a client that runs it by its SHA1.
const oracleReadSrc = oracleLogCall + `
local c = redis.call('HGET', KEYS[1], 'c') or '0'
log('read', 1, c)
return tonumber(c)
`

var oracleWrite = rueidis.NewLuaScript(oracleWriteSrc)

// oracleWriteSrc is oracleWrite's text, for a client that runs it by its SHA1.
const oracleWriteSrc = oracleLogCall + `
local token = tonumber(ARGV[4])
local max = tonumber(redis.call('HGET', KEYS[1], 'max') or '0')
if token < max then
  if ARGV[5] == '1' then
    redis.call('HINCRBY', KEYS[3], 'stale_rejected', 1)
    log('write', 0, ARGV[7])
    return 0
  end
  redis.call('HINCRBY', KEYS[3], 'stale_accepted', 1)
elseif token > max then
  redis.call('HSET', KEYS[1], 'max', ARGV[4])
end
redis.call('SADD', KEYS[5], ARGV[1])
redis.call('HSET', KEYS[1], 'c', ARGV[7])
redis.call('HINCRBY', KEYS[1], 'writes', 1)
redis.call('HINCRBY', KEYS[3], 'writes', 1)
log('write', 1, ARGV[7])
return 1
`

var oracleExit = rueidis.NewLuaScript(oracleExitSrc)

// oracleExitSrc is oracleExit's text, for a client that runs it by its SHA1.
const oracleExitSrc = oracleLogCall + `
redis.call('HDEL', KEYS[2], ARGV[3])
log('exit', 1, '')
return 1
`

// monoNow reads CLOCK_MONOTONIC in nanoseconds: one clock for every
// process of the host, unlike the monotonic reading inside time.Time.
func monoNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic("reliability: clock_gettime(CLOCK_MONOTONIC): " + err.Error()) // cannot fail on Linux
	}
	return ts.Nano()
}

// Oracle is the test's side of the oracle server: it starts it, hands its
// address to workers and reads the verdict.
type Oracle struct {
	srv *redistest.Server
	rc  rueidis.Client
}

// startOracle starts an oracle server for tb, stopped by tb.Cleanup. It is a
// redis-server of its own on a loopback port, apart from the servers the
// test breaks (with REDIS_ADDR set it is that server; use distinct lock
// names then).
func startOracle(tb testing.TB) *Oracle {
	tb.Helper()
	srv := redistest.Standalone(tb)
	return &Oracle{srv: srv, rc: srv.Client(tb)}
}

// Addr is the oracle server's address, for workers (dialOracle).
func (o *Oracle) Addr() string { return o.srv.Addr() }

// OracleStats are the oracle's counters.
type OracleStats struct {
	Enters        int64 // accepted Enters: critical sections begun
	Overlaps      int64 // Enters that found another occupant not superseded
	Superseded    int64 // occupants evicted by a higher fencing token
	StaleRejected int64 // Enters and Writes refused for a stale token
	StaleAccepted int64 // Writes accepted with a token below the highest (fence off)
	Writes        int64 // accepted Writes
	LostUpdates   int64 // sum over resources of writes − c
	LastOverlap   string
}

// Stats reads the counters and computes LostUpdates.
func (o *Oracle) Stats(ctx context.Context) (OracleStats, error) {
	m, err := o.rc.Do(ctx, o.rc.B().Hgetall().Key(oracleStats).Build()).AsStrMap()
	if err != nil {
		return OracleStats{}, fmt.Errorf("oracle stats: %w", err)
	}
	n := func(f string) int64 { v, _ := strconv.ParseInt(m[f], 10, 64); return v }
	s := OracleStats{
		Enters: n(statEnters), Overlaps: n(statOverlaps), Superseded: n(statSuperseded),
		StaleRejected: n(statStaleRejected), StaleAccepted: n(statStaleAccepted),
		Writes: n(statWrites), LastOverlap: m[statLastOverlap],
	}
	res, err := o.rc.Do(ctx, o.rc.B().Smembers().Key(oracleResources).Build()).AsStrSlice()
	if err != nil {
		return s, fmt.Errorf("oracle resources: %w", err)
	}
	for _, r := range res {
		h, err := o.rc.Do(ctx, o.rc.B().Hmget().Key(oracleResKey(r)).Field("c", "writes").Build()).ToArray()
		if err != nil || len(h) != 2 {
			return s, fmt.Errorf("oracle resource %s: %v", r, err)
		}
		c, _ := h[0].AsInt64()
		w, _ := h[1].AsInt64()
		s.LostUpdates += w - c
	}
	return s, nil
}

// String formats the counters on one line.
func (s OracleStats) String() string {
	out := fmt.Sprintf("enters=%d writes=%d overlaps=%d lost_updates=%d stale_accepted=%d stale_rejected=%d superseded=%d",
		s.Enters, s.Writes, s.Overlaps, s.LostUpdates, s.StaleAccepted, s.StaleRejected, s.Superseded)
	if s.LastOverlap != "" {
		out += " last_overlap=" + strconv.Quote(s.LastOverlap)
	}
	return out
}

// Verdict is everything the oracle knows after a run: its counters and
// the interval checker's report.
type Verdict struct {
	Stats OracleStats
	Check CheckReport
}

// Violations counts what a correct lock must never let happen: overlaps
// (online and offline), lost updates and stale writes accepted. It is 0 for
// a correct run and must be positive for a canary.
func (v Verdict) Violations() int64 {
	return v.Stats.Overlaps + v.Stats.LostUpdates + v.Stats.StaleAccepted +
		int64(len(v.Check.Overlaps)) + int64(len(v.Check.LostUpdates))
}

// String summarises the verdict on one line.
func (v Verdict) String() string { return v.Stats.String() + "; " + v.Check.String() }

// Verdict reads the counters and runs the interval checker over the log.
func (o *Oracle) Verdict(ctx context.Context) (Verdict, error) {
	s, err := o.Stats(ctx)
	if err != nil {
		return Verdict{}, err
	}
	evs, err := o.Events(ctx)
	if err != nil {
		return Verdict{}, err
	}
	return Verdict{Stats: s, Check: checkIntervals(evs)}, nil
}

// Verify fails tb unless the run was clean (Violations() == 0) and the
// oracle saw exactly wantWrites accepted writes (wantWrites < 0: any
// number). It returns the verdict.
func (o *Oracle) Verify(tb testing.TB, wantWrites int64) Verdict {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := o.Verdict(ctx)
	if err != nil {
		tb.Fatalf("oracle: %v", err)
	}
	if n := v.Violations(); n != 0 {
		tb.Errorf("oracle: %d violations: %v", n, v)
		for _, ov := range v.Check.Overlaps {
			tb.Errorf("oracle: %v", ov)
		}
		for _, lu := range v.Check.LostUpdates {
			tb.Errorf("oracle: %v", lu)
		}
	}
	if wantWrites >= 0 && v.Stats.Writes != wantWrites {
		tb.Errorf("oracle: %d writes accepted, workers completed %d", v.Stats.Writes, wantWrites)
	}
	return v
}

// Reset deletes everything the oracle recorded, so that one oracle server
// can judge several runs in turn (Verdict then sees only the last).
func (o *Oracle) Reset(ctx context.Context) error {
	return o.rc.Do(ctx, o.rc.B().Flushall().Build()).Error()
}

// oracleClient is the workers' side of the oracle: the resource their
// critical sections touch. It is safe for concurrent use.
type oracleClient struct {
	rc    rueidis.Client
	fence bool
}

// dialOracle connects to the oracle at addr. With fence set, stale
// tokens are refused (fenced mode); without, only recorded (canary).
// Close the returned client when done.
func dialOracle(addr string, fence bool) (*oracleClient, error) {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true})
	if err != nil {
		return nil, fmt.Errorf("oracle %s: %w", addr, err)
	}
	return &oracleClient{rc: rc, fence: fence}, nil
}

// Close closes the connection.
func (o *oracleClient) Close() { o.rc.Close() }

// Section is one critical section on one resource, as the oracle sees it.
// Owner names the lock holder (its owner string) and ID must be unique
// among all sections of a run (newSection makes one). Token is the
// fencing token, 0 for kinds without one.
type Section struct {
	Res, Owner, ID string
	Token          uint64
}

// exec runs one oracle script for s.
func (o *oracleClient) exec(ctx context.Context, script *rueidis.Lua, s Section, v string) rueidis.RedisResult {
	fence := "0"
	if o.fence {
		fence = "1"
	}
	return script.Exec(ctx, o.rc,
		[]string{oracleResKey(s.Res), oracleOccKey(s.Res), oracleStats, oracleLog, oracleResources},
		[]string{s.Res, s.Owner, s.ID, strconv.FormatUint(s.Token, 10), fence, strconv.FormatInt(monoNow(), 10), v})
}

// accepted reads a script's 1/0 answer.
func accepted(op string, r rueidis.RedisResult) (bool, error) {
	n, err := r.AsInt64()
	if err != nil {
		return false, fmt.Errorf("oracle %s: %w", op, err)
	}
	return n == 1, nil
}

// Enter begins s; false means a stale token was refused (fence on).
func (o *oracleClient) Enter(ctx context.Context, s Section) (bool, error) {
	return accepted(opEnter, o.exec(ctx, oracleEnter, s, ""))
}

// Read returns the resource's counter c.
func (o *oracleClient) Read(ctx context.Context, s Section) (int64, error) {
	v, err := o.exec(ctx, oracleRead, s, "").AsInt64()
	if err != nil {
		return 0, fmt.Errorf("oracle read: %w", err)
	}
	return v, nil
}

// Write sets c to v; false means a stale token was refused (fence on).
func (o *oracleClient) Write(ctx context.Context, s Section, v int64) (bool, error) {
	return accepted(opWrite, o.exec(ctx, oracleWrite, s, strconv.FormatInt(v, 10)))
}

// Exit ends s.
func (o *oracleClient) Exit(ctx context.Context, s Section) error {
	_, err := accepted(opExit, o.exec(ctx, oracleExit, s, ""))
	return err
}

// RMW is one read-modify-write step: Read, sleep for pause (the worker's
// 1-20 ms of "work", during which a paused holder may be frozen), Write
// c+1. It reports whether the write was accepted. The sleep ends early
// only if ctx ends.
func (o *oracleClient) RMW(ctx context.Context, s Section, pause time.Duration) (bool, error) {
	v, err := o.Read(ctx, s)
	if err != nil {
		return false, err
	}
	if pause > 0 {
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false, ctx.Err()
		}
	}
	return o.Write(ctx, s, v+1)
}
