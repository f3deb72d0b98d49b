package compat_test

import (
	"encoding/hex"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redisproc"
	"github.com/interlock-go/interlock/internal/script"
)

// Golden replays of the semaphore, expirable semaphore and count-down
// latch vectors of reference/redisson-synchronizers.md §11.1-§11.3. Each
// step runs one of our scripts with EVALSHA and the exact KEYS and ARGV
// Redisson sends (no receipt), and checks byte for byte the commands the
// script ran (MONITOR), its raw reply, the messages it published and the
// state it left. Clock readings are ARGV values, so the vectors that wait
// for a lease to run out only move "now" forward. What Java's waiters do
// between script calls (subscribing, timers) is client behaviour and is
// not replayed here.

// sgNever is the score of a permit without a lease (§3.1).
const sgNever = "922337203685477"

// sgAnyMillis stands, in an expected command, for a TTL in ms that the
// script read from Redis; step returns the values it matched.
const sgAnyMillis = "\x00ms"

var sgDigitsRE = regexp.MustCompile(`^[0-9]+$`)

// sgID decodes a 16-byte permit id from 32 hex characters.
func sgID(t *testing.T, s string) string {
	t.Helper()
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	require.Len(t, b, 16)
	return string(b)
}

// sgEnv is where a replay runs.
type sgEnv struct {
	pub     string // PUBLISH or SPUBLISH, as Java would pass it
	cluster bool
	sharded bool                    // pub is SPUBLISH (a cluster of servers with sharded pub/sub)
	node    func(key string) string // the node that owns key's slot
}

func sgStandalone() sgEnv {
	return sgEnv{pub: "PUBLISH", node: func(string) string { return standaloneAddr }}
}

func sgCluster(t *testing.T) sgEnv {
	cl := sharedCluster(t)
	env := sgEnv{pub: "PUBLISH", cluster: true, node: func(k string) string { return cl.NodeForKey(k).Addr() }}
	// Redis 6 has no sharded pub/sub: Java and Go publish with PUBLISH.
	if shardedPubSub(t, cl.Addrs()[0]) {
		env.pub, env.sharded = "SPUBLISH", true
	}
	return env
}

// sgRec watches one object: a control connection to the node that owns
// its slot, a MONITOR connection and a pub/sub tap on its channels.
type sgRec struct {
	t        *testing.T
	name     string // every key and channel of the object contains it
	ctl      *conn
	mon      *monitor
	tap      *stream
	kind     string // the kind its messages arrive as
	markCmd  string
	markChan string
	n        int
}

// newSgRec prepares a recorder for the object whose keys contain name,
// where channels are the channels it publishes on (all in name's slot in
// a cluster). Every script is loaded first, so EVALSHA never answers
// NOSCRIPT.
func newSgRec(t *testing.T, env sgEnv, name string, channels ...string) *sgRec {
	t.Helper()
	addr := env.node(name)
	r := &sgRec{t: t, name: name, ctl: dial(t, addr)}
	for _, s := range script.All() {
		require.Equal(t, s.SHA1(), r.ctl.str("SCRIPT", "LOAD", s.Source()))
	}
	if env.sharded {
		r.kind, r.markCmd, r.markChan = "smessage", "SPUBLISH", keys.Suffix(name, "compat-mark")
		args := append(append([]string{"SSUBSCRIBE"}, channels...), r.markChan)
		r.tap = openStream(t, addr, len(args)-1, args...)
	} else {
		r.kind, r.markCmd, r.markChan = "pmessage", "PUBLISH", "compat-mark:"+name
		r.tap = openStream(t, addr, 1, "PSUBSCRIBE", "*"+name+"*")
	}
	r.mon = openMonitor(t, addr)
	return r
}

// eval runs s with EVALSHA and returns its raw reply; an error reply is
// returned as a redisproc.ReplyError value.
func (r *sgRec) eval(s *script.Script, keys []string, args ...string) any {
	r.t.Helper()
	cmd := append([]string{"EVALSHA", s.SHA1(), strconv.Itoa(len(keys))}, keys...)
	v, err := r.ctl.try(append(cmd, args...)...)
	var re redisproc.ReplyError
	if errors.As(err, &re) {
		return re
	}
	require.NoError(r.t, err, "EVALSHA %s", s.Name())
	return v
}

// msg is a message the object's tap must receive.
func (r *sgRec) msg(channel, payload string) pubMsg {
	return pubMsg{Kind: r.kind, Channel: channel, Payload: payload}
}

// step checks everything since the previous step: the messages the tap
// received, then the script runs MONITOR saw (those touching the object's
// keys). It returns the values that matched sgAnyMillis, in order.
func (r *sgRec) step(label string, msgs []pubMsg, want ...scriptRun) []string {
	t := r.t
	t.Helper()
	r.n++
	mark := strconv.Itoa(r.n)
	r.ctl.do(r.markCmd, r.markChan, mark)
	var got []pubMsg
	for _, v := range r.tap.until(t, markerTimeout, func(v any) bool {
		m, ok := asPubMsg(v)
		return ok && m.Channel == r.markChan && m.Payload == mark
	}) {
		m, ok := asPubMsg(v)
		require.True(t, ok, "%s: unexpected push %#v", label, v)
		got = append(got, m)
	}
	assert.Equal(t, msgs, got, "%s: messages published", label)

	echo := "compat-sync-step-" + r.name + "-" + mark
	r.ctl.do("ECHO", echo)
	lines := r.mon.untilEcho(t, echo, want...)
	var runs []scriptRun
	for _, run := range scriptRuns(lines) {
		for _, k := range run.Keys {
			if strings.Contains(k, r.name) {
				runs = append(runs, run)
				break
			}
		}
	}

	var matched []string
	resolved := make([]scriptRun, len(want))
	for i, w := range want {
		resolved[i] = scriptRun{Script: w.Script, Keys: w.Keys, Argv: w.Argv}
		for j, c := range w.Cmds {
			out := append([]string(nil), c...)
			for k, a := range out {
				if a != sgAnyMillis {
					continue
				}
				if i < len(runs) && j < len(runs[i].Cmds) && k < len(runs[i].Cmds[j]) && sgDigitsRE.MatchString(runs[i].Cmds[j][k]) {
					out[k] = runs[i].Cmds[j][k]
					matched = append(matched, out[k])
				} else {
					out[k] = "<a TTL in ms>"
				}
			}
			resolved[i].Cmds = append(resolved[i].Cmds, out)
		}
	}
	if len(resolved) == 0 && len(runs) == 0 {
		return matched
	}
	if !assert.Equal(t, resolved, runs, "%s: commands run by scripts", label) {
		for _, l := range lines {
			t.Logf("  MONITOR %s", l)
		}
	}
	return matched
}

// get returns GET key, or "<nil>" for a missing key.
func (r *sgRec) get(key string) string {
	r.t.Helper()
	v := r.ctl.do("GET", key)
	if v == nil {
		return "<nil>"
	}
	s, ok := v.(string)
	require.True(r.t, ok, "GET %s: %#v", key, v)
	return s
}

// pttl returns PTTL key.
func (r *sgRec) pttl(key string) int64 {
	r.t.Helper()
	return r.ctl.int("PTTL", key)
}

// pttlWithin asserts that key expires within (ms - ttlSlack, ms].
func (r *sgRec) pttlWithin(key string, ms int64) {
	r.t.Helper()
	got := r.pttl(key)
	assert.True(r.t, got <= ms && got > ms-ttlSlack.Milliseconds(), "PTTL %s = %d, want within (%d, %d]", key, got, ms-ttlSlack.Milliseconds(), ms)
}

// zset returns ZRANGE key 0 -1 WITHSCORES: member, score, member, score...
func (r *sgRec) zset(key string) []string {
	r.t.Helper()
	return r.ctl.strs("ZRANGE", key, "0", "-1", "WITHSCORES")
}

// sgNames spells out the keys and channel of a semaphore by hand (§1.1).
func sgNames(t *testing.T, name string) (ch, timeout string) {
	t.Helper()
	ch, timeout = "redisson_sc:{"+name+"}", "{"+name+"}:timeout"
	require.Equal(t, ch, keys.Prefix("redisson_sc", name))
	require.Equal(t, timeout, keys.Suffix(name, "timeout"))
	return ch, timeout
}

// sgLatchChannel is a latch's channel, braces always added (§4.1).
func sgLatchChannel(name string) string {
	return "redisson_countdownlatch__channel__{" + name + "}"
}

// TestSyncGoldenStandalone replays §11.1-§11.3 on a standalone server with
// PUBLISH, seen by a PSUBSCRIBE tap.
func TestSyncGoldenStandalone(t *testing.T) {
	parallel(t)
	env := sgStandalone()
	t.Run("semaphore", func(t *testing.T) { sgSemaphore(t, env) })
	t.Run("expirable", func(t *testing.T) { sgExpirable(t, env) })
	t.Run("latch", func(t *testing.T) { sgLatch(t, env) })
	t.Run("latch-braced", func(t *testing.T) { sgLatchBraced(t, env) })
}

// TestSyncGoldenCluster replays the same vectors on a three-master cluster
// with SPUBLISH, seen by an SSUBSCRIBE tap on the node that owns each
// object (§11.3 V3.8), and checks that a braced latch name is refused
// with CROSSSLOT there.
func TestSyncGoldenCluster(t *testing.T) {
	parallel(t)
	env := sgCluster(t)
	t.Run("semaphore", func(t *testing.T) { sgSemaphore(t, env) })
	t.Run("expirable", func(t *testing.T) { sgExpirable(t, env) })
	t.Run("latch", func(t *testing.T) { sgLatch(t, env) })
	t.Run("latch-braced", func(t *testing.T) { sgLatchBraced(t, env) })
}

// sgSemaphore replays §11.1, V1.1-V1.8, as far as one process can.
func sgSemaphore(t *testing.T, env sgEnv) {
	pub := env.pub

	// V1.1-V1.4 on one semaphore.
	sem := unique("sem")
	S, _ := sgNames(t, sem)
	r := newSgRec(t, env, sem, S)
	t.Cleanup(func() { r.ctl.try("DEL", sem) })
	trySet := func(p string) scriptRun { return run(script.SemTrySet(), ks(sem, S), argv(p, pub), cmd("get", sem)) }
	acq := func(p string, cmds ...[]string) scriptRun {
		return run(script.SemAcquire(), ks(sem), argv(p), append([][]string{cmd("get", sem)}, cmds...)...)
	}
	rel := func(p, now string) scriptRun {
		return run(script.SemRelease(), ks(sem, S), argv(p, pub), cmd("incrby", sem, p), cmd(pub, S, now))
	}

	// V1.1 trySetPermits(2), then (5).
	assert.Equal(t, int64(1), r.eval(script.SemTrySet(), ks(sem, S), "2", pub))
	set := trySet("2")
	set.Cmds = append(set.Cmds, cmd("set", sem, "2"), cmd(pub, S, "2"))
	r.step("V1.1 trySetPermits(2)", []pubMsg{r.msg(S, "2")}, set)
	assert.Equal(t, "2", r.get(sem))
	assert.Equal(t, int64(-1), r.pttl(sem))
	assert.Equal(t, int64(0), r.eval(script.SemTrySet(), ks(sem, S), "5", pub))
	r.step("V1.1 trySetPermits(5) again", nil, trySet("5"))
	assert.Equal(t, "2", r.get(sem))

	// V1.2 tryAcquire(1), tryAcquire(2); acquire(2) that waits for a release(1).
	assert.Equal(t, int64(1), r.eval(script.SemAcquire(), ks(sem), "1"))
	assert.Equal(t, int64(0), r.eval(script.SemAcquire(), ks(sem), "2"))
	r.step("V1.2 tryAcquire(1), tryAcquire(2)", nil, acq("1", cmd("decrby", sem, "1")), acq("2"))
	assert.Equal(t, "1", r.get(sem))
	assert.Equal(t, int64(0), r.eval(script.SemAcquire(), ks(sem), "2"))
	assert.Nil(t, r.eval(script.SemRelease(), ks(sem, S), "1", pub))
	assert.Equal(t, int64(1), r.eval(script.SemAcquire(), ks(sem), "2"))
	r.step("V1.2 acquire(2) around release(1)", []pubMsg{r.msg(S, "2")},
		acq("2"), rel("1", "2"), acq("2", cmd("decrby", sem, "2")))
	assert.Equal(t, "0", r.get(sem))

	// V1.3 tryAcquire(1, 400 ms) at count 0: two failed attempts.
	assert.Equal(t, int64(0), r.eval(script.SemAcquire(), ks(sem), "1"))
	assert.Equal(t, int64(0), r.eval(script.SemAcquire(), ks(sem), "1"))
	r.step("V1.3 tryAcquire at 0", nil, acq("1"), acq("1"))

	// V1.4 addPermits(3), drainPermits(), addPermits(-2), release(1).
	add := func(p, total string) scriptRun {
		return run(script.SemAdd(), ks(sem, S), argv(p, pub), cmd("get", sem), cmd("set", sem, total), cmd(pub, S, total))
	}
	drain := run(script.SemDrain(), ks(sem), []string{}, cmd("get", sem), cmd("set", sem, "0"))
	assert.Nil(t, r.eval(script.SemAdd(), ks(sem, S), "3", pub))
	assert.Equal(t, "3", r.eval(script.SemDrain(), ks(sem)), "drain replies with a bulk string")
	assert.Nil(t, r.eval(script.SemAdd(), ks(sem, S), "-2", pub))
	assert.Nil(t, r.eval(script.SemRelease(), ks(sem, S), "1", pub))
	r.step("V1.4 add, drain, add(-2), release", []pubMsg{r.msg(S, "3"), r.msg(S, "-2"), r.msg(S, "-1")},
		add("3", "3"), drain, add("-2", "-2"), rel("1", "-1"))
	assert.Equal(t, "-1", r.get(sem))

	// §11.0: draining a missing key replies with the integer 0.
	semnone := unique("semdrain")
	rn := newSgRec(t, env, semnone)
	assert.Equal(t, int64(0), rn.eval(script.SemDrain(), ks(semnone)))
	rn.step("drain of a missing key", nil, run(script.SemDrain(), ks(semnone), []string{}, cmd("get", semnone)))
	assert.Equal(t, "<nil>", rn.get(semnone))

	// V1.5 trySetPermits(4, 60 s): INCRBY/DECRBY keep the TTL, SET drops it.
	semttl := unique("semttl")
	St, _ := sgNames(t, semttl)
	rt := newSgRec(t, env, semttl, St)
	t.Cleanup(func() { rt.ctl.try("DEL", semttl) })
	assert.Equal(t, int64(1), rt.eval(script.SemTrySet(), ks(semttl, St), "4", pub, "60000"))
	rt.step("V1.5 trySetPermits(4, 60 s)", []pubMsg{rt.msg(St, "4")}, run(script.SemTrySet(), ks(semttl, St), argv("4", pub, "60000"),
		cmd("get", semttl), cmd("set", semttl, "4", "px", "60000"), cmd(pub, St, "4")))
	rt.pttlWithin(semttl, 60000)
	assert.Equal(t, int64(1), rt.eval(script.SemAcquire(), ks(semttl), "1"))
	rt.step("V1.5 tryAcquire(1)", nil, run(script.SemAcquire(), ks(semttl), argv("1"), cmd("get", semttl), cmd("decrby", semttl, "1")))
	rt.pttlWithin(semttl, 60000)
	assert.Nil(t, rt.eval(script.SemRelease(), ks(semttl, St), "1", pub))
	rt.step("V1.5 release(1)", []pubMsg{rt.msg(St, "4")}, run(script.SemRelease(), ks(semttl, St), argv("1", pub),
		cmd("incrby", semttl, "1"), cmd(pub, St, "4")))
	rt.pttlWithin(semttl, 60000)
	assert.Nil(t, rt.eval(script.SemAdd(), ks(semttl, St), "1", pub))
	rt.step("V1.5 addPermits(1)", []pubMsg{rt.msg(St, "5")}, run(script.SemAdd(), ks(semttl, St), argv("1", pub),
		cmd("get", semttl), cmd("set", semttl, "5"), cmd(pub, St, "5")))
	assert.Equal(t, "5", rt.get(semttl))
	assert.Equal(t, int64(-1), rt.pttl(semttl), "addPermits keeps the TTL")
	rt.ctl.do("PEXPIRE", semttl, "60000")
	assert.Equal(t, "5", rt.eval(script.SemDrain(), ks(semttl)))
	rt.step("V1.5 drain of a TTL'd key", nil, run(script.SemDrain(), ks(semttl), []string{}, cmd("get", semttl), cmd("set", semttl, "0")))
	assert.Equal(t, "0", rt.get(semttl))
	assert.Equal(t, int64(-1), rt.pttl(semttl), "drainPermits keeps the TTL")

	// V1.6 release(1) on a missing key creates it; V1.7 releaseIfExists.
	semnew := unique("semnew")
	Sn, _ := sgNames(t, semnew)
	rw := newSgRec(t, env, semnew, Sn)
	t.Cleanup(func() { rw.ctl.try("DEL", semnew) })
	assert.Nil(t, rw.eval(script.SemRelease(), ks(semnew, Sn), "1", pub))
	rw.step("V1.6 release on a missing key", []pubMsg{rw.msg(Sn, "1")}, run(script.SemRelease(), ks(semnew, Sn), argv("1", pub),
		cmd("incrby", semnew, "1"), cmd(pub, Sn, "1")))
	assert.Equal(t, "1", rw.get(semnew))
	assert.Equal(t, int64(-1), rw.pttl(semnew))
	missing := unique("semnone")
	Sm, _ := sgNames(t, missing)
	rm := newSgRec(t, env, missing, Sm)
	assert.Equal(t, int64(0), rm.eval(script.SemReleaseIfExists(), ks(missing, Sm), "1", pub))
	rm.step("V1.7 releaseIfExists on a missing key", nil, run(script.SemReleaseIfExists(), ks(missing, Sm), argv("1", pub),
		cmd("exists", missing)))
	assert.Zero(t, rm.ctl.int("EXISTS", missing))
	assert.Equal(t, int64(1), rw.eval(script.SemReleaseIfExists(), ks(semnew, Sn), "2", pub))
	rw.step("V1.7 releaseIfExists(2)", []pubMsg{rw.msg(Sn, "3")}, run(script.SemReleaseIfExists(), ks(semnew, Sn), argv("2", pub),
		cmd("exists", semnew), cmd("incrby", semnew, "2"), cmd(pub, Sn, "3")))
	assert.Equal(t, "3", rw.get(semnew))

	// V1.8 three acquirers at 0 free; release(2) lets two in, release(1) the third.
	semw := unique("semw")
	Sw, _ := sgNames(t, semw)
	rv := newSgRec(t, env, semw, Sw)
	t.Cleanup(func() { rv.ctl.try("DEL", semw) })
	acqW := func(cmds ...[]string) scriptRun {
		return run(script.SemAcquire(), ks(semw), argv("1"), append([][]string{cmd("get", semw)}, cmds...)...)
	}
	assert.Equal(t, int64(1), rv.eval(script.SemTrySet(), ks(semw, Sw), "0", pub))
	for range 3 {
		assert.Equal(t, int64(0), rv.eval(script.SemAcquire(), ks(semw), "1"))
	}
	rv.step("V1.8 three attempts at 0", []pubMsg{rv.msg(Sw, "0")},
		run(script.SemTrySet(), ks(semw, Sw), argv("0", pub), cmd("get", semw), cmd("set", semw, "0"), cmd(pub, Sw, "0")),
		acqW(), acqW(), acqW())
	assert.Nil(t, rv.eval(script.SemRelease(), ks(semw, Sw), "2", pub))
	for _, want := range []int64{1, 1, 0} {
		assert.Equal(t, want, rv.eval(script.SemAcquire(), ks(semw), "1"))
	}
	assert.Nil(t, rv.eval(script.SemRelease(), ks(semw, Sw), "1", pub))
	assert.Equal(t, int64(1), rv.eval(script.SemAcquire(), ks(semw), "1"))
	take := acqW(cmd("decrby", semw, "1"))
	rv.step("V1.8 release(2), release(1)", []pubMsg{rv.msg(Sw, "2"), rv.msg(Sw, "1")},
		run(script.SemRelease(), ks(semw, Sw), argv("2", pub), cmd("incrby", semw, "2"), cmd(pub, Sw, "2")),
		take, take, acqW(),
		run(script.SemRelease(), ks(semw, Sw), argv("1", pub), cmd("incrby", semw, "1"), cmd(pub, Sw, "1")),
		take)
	assert.Equal(t, "0", rv.get(semw))
}

// sgExpirable replays §11.2, V2.1-V2.13, with the permit ids and clock
// readings of the captures where they are given.
func sgExpirable(t *testing.T, env sgEnv) {
	pub := env.pub
	idA := sgID(t, "f931c493916289a8b33eefa41cfb0ce3")
	// §3.2: how MONITOR shows <A>.
	l, err := parseMonitor(`1796116175.242000 [0 lua] "zadd" "T" "1796116185241" "\xf91\xc4\x93\x91b\x89\xa8\xb3>\xef\xa4\x1c\xfb\x0c\xe3"`)
	require.NoError(t, err)
	require.Equal(t, idA, l.Args[3])
	idB := sgID(t, "00225c200a0d097f80ff2a3f5b5d7b7d") // NUL, quote, backslash, space, control bytes
	idC := sgID(t, "0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c")
	idU := sgID(t, "5555555555555555aaaaaaaaaaaaaaaa") // never acquired
	idX := sgID(t, "0123456789abcdef0123456789abcdef")

	pes := unique("pes")
	S, T := sgNames(t, pes)
	r := newSgRec(t, env, pes, S)
	t.Cleanup(func() { r.ctl.try("DEL", pes, T) })
	reclaimAll := func(now string) []string { return cmd("zrangebyscore", T, "0", now, "limit", "0", "-1") }
	pacq := func(p, expiry, now string, ids ...string) (keys, args []string) {
		return ks(pes, T, S), append(argv(p, expiry, now, sgNever, pub), ids...)
	}

	// V2.1 trySetPermits(2): RSemaphore's script.
	assert.Equal(t, int64(1), r.eval(script.SemTrySet(), ks(pes, S), "2", pub))
	r.step("V2.1 trySetPermits(2)", []pubMsg{r.msg(S, "2")}, run(script.SemTrySet(), ks(pes, S), argv("2", pub),
		cmd("get", pes), cmd("set", pes, "2"), cmd(pub, S, "2")))
	assert.Equal(t, "2", r.get(pes))
	assert.Zero(t, r.ctl.int("EXISTS", T))

	// V2.2 tryAcquire(0, lease 10000) -> <A>.
	k, a := pacq("1", "1796116185241", "1796116175242", idA)
	assert.Equal(t, "OK", r.eval(script.PESAcquire(), k, a...))
	r.step("V2.2 acquire <A>", nil, run(script.PESAcquire(), k, a,
		cmd("zrangebyscore", T, "0", "1796116175242", "limit", "0", "1"), cmd("get", pes), cmd("decrby", pes, "1"),
		cmd("zadd", T, "1796116185241", idA), cmd("pttl", pes)))

	// V2.3 tryAcquire(0, lease -1) -> <B>, scored NEVER.
	k, a = pacq("1", sgNever, "1796116175300", idB)
	assert.Equal(t, "OK", r.eval(script.PESAcquire(), k, a...))
	r.step("V2.3 acquire <B> without a lease", nil, run(script.PESAcquire(), k, a,
		cmd("zrangebyscore", T, "0", "1796116175300", "limit", "0", "1"), cmd("get", pes), cmd("decrby", pes, "1"),
		cmd("zadd", T, sgNever, idB), cmd("pttl", pes)))
	assert.Equal(t, []string{idA, "1796116185241", idB, sgNever}, r.zset(T))
	assert.Equal(t, "0", r.get(pes))
	assert.Equal(t, int64(-1), r.pttl(T))

	// V2.4 none free: the nearest expiry.
	k, a = pacq("1", "1796116185320", "1796116175320", idX)
	assert.Equal(t, ":1796116185241", r.eval(script.PESAcquire(), k, a...))
	r.step("V2.4 acquire with none free", nil, run(script.PESAcquire(), k, a,
		cmd("zrangebyscore", T, "0", "1796116175320", "limit", "0", "1"), cmd("get", pes),
		cmd("zrange", T, "0", "0", "WITHSCORES")))

	// V2.5 updateLeaseTime(<A>, 20000), then an unknown id.
	upd := func(id, expiry, now string, cmds ...[]string) scriptRun {
		return run(script.PESUpdateLease(), ks(pes, T, S), argv(id, expiry, now, pub),
			append([][]string{reclaimAll(now), cmd("zscore", T, id)}, cmds...)...)
	}
	assert.Equal(t, int64(1), r.eval(script.PESUpdateLease(), ks(pes, T, S), idA, "1796116195365", "1796116175365", pub))
	assert.Equal(t, int64(0), r.eval(script.PESUpdateLease(), ks(pes, T, S), idU, "1796116195370", "1796116175370", pub))
	r.step("V2.5 updateLeaseTime", nil,
		upd(idA, "1796116195365", "1796116175365", cmd("zadd", T, "1796116195365", idA)),
		upd(idU, "1796116195370", "1796116175370"))
	assert.Equal(t, []string{idA, "1796116195365", idB, sgNever}, r.zset(T))

	// V2.6 getLeaseTime of <A>, <B> and an unknown id.
	lease := func(id string) scriptRun {
		return run(script.PESLease(), ks(pes, T, S), argv(id, sgNever, "1796116175394", pub),
			reclaimAll("1796116175394"), cmd("zscore", T, id))
	}
	assert.Equal(t, int64(19971), r.eval(script.PESLease(), ks(pes, T, S), idA, sgNever, "1796116175394", pub))
	assert.Equal(t, int64(-1), r.eval(script.PESLease(), ks(pes, T, S), idB, sgNever, "1796116175394", pub))
	assert.Equal(t, int64(0), r.eval(script.PESLease(), ks(pes, T, S), idU, sgNever, "1796116175394", pub))
	r.step("V2.6 getLeaseTime", nil, lease(idA), lease(idB), lease(idU))

	// V2.7 release(<A>), then again.
	rel1 := func(id, now string, cmds ...[]string) scriptRun {
		return run(script.PESReleaseOne(), ks(pes, S, T), argv(id, "1", now, pub),
			append([][]string{cmd("zscore", T, id), cmd("zrem", T, id)}, cmds...)...)
	}
	assert.Equal(t, int64(1), r.eval(script.PESReleaseOne(), ks(pes, S, T), idA, "1", "1796116175400", pub))
	assert.Equal(t, int64(0), r.eval(script.PESReleaseOne(), ks(pes, S, T), idA, "1", "1796116175410", pub))
	r.step("V2.7 release <A>, twice", []pubMsg{r.msg(S, "1")},
		rel1(idA, "1796116175400", cmd("incrby", pes, "1"), cmd(pub, S, "1")),
		rel1(idA, "1796116175410"))
	assert.Equal(t, "1", r.get(pes))
	assert.Equal(t, []string{idB, sgNever}, r.zset(T))

	// §11.0: nil when only NEVER permits are out.
	k, a = pacq("2", "1796116185420", "1796116175420", idX, idU)
	assert.Nil(t, r.eval(script.PESAcquire(), k, a...))
	r.step("acquire(2) with only a NEVER permit out", nil, run(script.PESAcquire(), k, a,
		cmd("zrangebyscore", T, "0", "1796116175420", "limit", "0", "2"), cmd("get", pes),
		cmd("zrange", T, "0", "0", "WITHSCORES")))

	// V2.8 lease 300 -> <C>; 600 ms later availablePermits() reclaims it.
	k, a = pacq("1", "1796116175800", "1796116175500", idC)
	assert.Equal(t, "OK", r.eval(script.PESAcquire(), k, a...))
	r.step("V2.8 acquire <C> for 300 ms", nil, run(script.PESAcquire(), k, a,
		cmd("zrangebyscore", T, "0", "1796116175500", "limit", "0", "1"), cmd("get", pes), cmd("decrby", pes, "1"),
		cmd("zadd", T, "1796116175800", idC), cmd("pttl", pes)))
	assert.Equal(t, int64(1), r.eval(script.PESAvailable(), ks(pes, T, S), "1796116176100", pub), "a reclaim replies with an integer")
	assert.Equal(t, "1", r.eval(script.PESAvailable(), ks(pes, T, S), "1796116176110", pub), "no reclaim: a bulk string")
	r.step("V2.8 availablePermits", []pubMsg{r.msg(S, "1")},
		run(script.PESAvailable(), ks(pes, T, S), argv("1796116176100", pub),
			reclaimAll("1796116176100"), cmd("zrem", T, idC), cmd("incrby", pes, "1"), cmd(pub, S, "1")),
		run(script.PESAvailable(), ks(pes, T, S), argv("1796116176110", pub), reclaimAll("1796116176110"), cmd("get", pes)))
	assert.Equal(t, []string{idB, sgNever}, r.zset(T))

	// V2.9 acquiredPermits, getPermits, setPermits(5) twice, addPermits(2) and (-1).
	const now9 = "1796116176200"
	assert.Equal(t, int64(1), r.eval(script.PESAcquired(), ks(pes, T, S), now9, pub))
	assert.Equal(t, int64(2), r.eval(script.PESPermits(), ks(pes, T, S), now9, pub))
	r.step("V2.9 acquiredPermits, getPermits", nil,
		run(script.PESAcquired(), ks(pes, T, S), argv(now9, pub), reclaimAll(now9), cmd("zcount", T, "0", "+inf")),
		run(script.PESPermits(), ks(pes, T, S), argv(now9, pub), reclaimAll(now9), cmd("get", pes), cmd("zcount", T, "0", "+inf")))
	setp := func(cmds ...[]string) scriptRun {
		return run(script.PESSetPermits(), ks(pes, S, T), argv("5", pub),
			append([][]string{cmd("get", pes), cmd("zcount", T, "0", "+inf")}, cmds...)...)
	}
	assert.Nil(t, r.eval(script.PESSetPermits(), ks(pes, S, T), "5", pub))
	assert.Nil(t, r.eval(script.PESSetPermits(), ks(pes, S, T), "5", pub))
	r.step("V2.9 setPermits(5), twice", []pubMsg{r.msg(S, "5")}, setp(cmd("incrby", pes, "3"), cmd(pub, S, "5")), setp())
	assert.Equal(t, "4", r.get(pes))
	assert.Nil(t, r.eval(script.PESAdd(), ks(pes, S), "2", pub))
	assert.Nil(t, r.eval(script.PESAdd(), ks(pes, S), "-1", pub))
	r.step("V2.9 addPermits(2), addPermits(-1)", []pubMsg{r.msg(S, "2")},
		run(script.PESAdd(), ks(pes, S), argv("2", pub), cmd("get", pes), cmd("set", pes, "6"), cmd(pub, S, "2")),
		run(script.PESAdd(), ks(pes, S), argv("-1", pub), cmd("get", pes), cmd("set", pes, "5")))
	assert.Equal(t, "5", r.get(pes))

	// V2.10 `pes4`, made by setPermits on a missing key: a lease of 200;
	// 400 ms later tryRelease gives the permit back yet replies 0.
	idE := sgID(t, "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee")
	pes4 := unique("pes4")
	S4, T4 := sgNames(t, pes4)
	r4 := newSgRec(t, env, pes4, S4)
	t.Cleanup(func() { r4.ctl.try("DEL", pes4, T4) })
	assert.Nil(t, r4.eval(script.PESSetPermits(), ks(pes4, S4, T4), "1", pub))
	a = append(argv("1", "1796116180200", "1796116180000", sgNever, pub), idE)
	assert.Equal(t, "OK", r4.eval(script.PESAcquire(), ks(pes4, T4, S4), a...))
	assert.Equal(t, int64(0), r4.eval(script.PESReleaseOne(), ks(pes4, S4, T4), idE, "1", "1796116180400", pub))
	r4.step("V2.10 expired release", []pubMsg{r4.msg(S4, "1"), r4.msg(S4, "1")},
		run(script.PESSetPermits(), ks(pes4, S4, T4), argv("1", pub), cmd("get", pes4), cmd("set", pes4, "1"), cmd(pub, S4, "1")),
		run(script.PESAcquire(), ks(pes4, T4, S4), a,
			cmd("zrangebyscore", T4, "0", "1796116180000", "limit", "0", "1"), cmd("get", pes4), cmd("decrby", pes4, "1"),
			cmd("zadd", T4, "1796116180200", idE), cmd("pttl", pes4)),
		run(script.PESReleaseOne(), ks(pes4, S4, T4), argv(idE, "1", "1796116180400", pub),
			cmd("zscore", T4, idE), cmd("zrem", T4, idE), cmd("incrby", pes4, "1"), cmd(pub, S4, "1")))
	assert.Equal(t, "1", r4.get(pes4))
	assert.Zero(t, r4.ctl.int("EXISTS", T4))

	// V2.11 `pes2` (1 permit) leased to <D> for 1500 ms; a waiter's attempts
	// at +14 and +18 see <D>'s expiry, its attempt at +1511 reclaims <D>.
	idD := sgID(t, "dddddddddddddddddddddddddddddddd")
	idF := sgID(t, "f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0")
	idG := sgID(t, "9090909090909090909090909090909a")
	idH := sgID(t, "0000000000000000000000000000001f")
	pes2 := unique("pes2")
	S2, T2 := sgNames(t, pes2)
	r2 := newSgRec(t, env, pes2, S2)
	t.Cleanup(func() { r2.ctl.try("DEL", pes2, T2) })
	assert.Equal(t, int64(1), r2.eval(script.SemTrySet(), ks(pes2, S2), "1", pub))
	a = append(argv("1", "1796116191500", "1796116190000", sgNever, pub), idD)
	assert.Equal(t, "OK", r2.eval(script.PESAcquire(), ks(pes2, T2, S2), a...))
	r2.step("V2.11 <D> leased", []pubMsg{r2.msg(S2, "1")},
		run(script.SemTrySet(), ks(pes2, S2), argv("1", pub), cmd("get", pes2), cmd("set", pes2, "1"), cmd(pub, S2, "1")),
		run(script.PESAcquire(), ks(pes2, T2, S2), a,
			cmd("zrangebyscore", T2, "0", "1796116190000", "limit", "0", "1"), cmd("get", pes2), cmd("decrby", pes2, "1"),
			cmd("zadd", T2, "1796116191500", idD), cmd("pttl", pes2)))
	busy := func(now, expiry, id string) scriptRun {
		return run(script.PESAcquire(), ks(pes2, T2, S2), append(argv("1", expiry, now, sgNever, pub), id),
			cmd("zrangebyscore", T2, "0", now, "limit", "0", "1"), cmd("get", pes2), cmd("zrange", T2, "0", "0", "WITHSCORES"))
	}
	for _, w := range []struct{ now, expiry, id string }{
		{"1796116190014", "1796116195014", idF}, {"1796116190018", "1796116195018", idG},
	} {
		assert.Equal(t, ":1796116191500", r2.eval(script.PESAcquire(), ks(pes2, T2, S2), append(argv("1", w.expiry, w.now, sgNever, pub), w.id)...))
	}
	r2.step("V2.11 the waiter's attempts at +14, +18", nil,
		busy("1796116190014", "1796116195014", idF), busy("1796116190018", "1796116195018", idG))
	a = append(argv("1", "1796116196511", "1796116191511", sgNever, pub), idH)
	assert.Equal(t, "OK", r2.eval(script.PESAcquire(), ks(pes2, T2, S2), a...))
	r2.step("V2.11 the waiter's attempt at +1511", []pubMsg{r2.msg(S2, "1")}, run(script.PESAcquire(), ks(pes2, T2, S2), a,
		cmd("zrangebyscore", T2, "0", "1796116191511", "limit", "0", "1"), cmd("zrem", T2, idD), cmd("incrby", pes2, "1"),
		cmd(pub, S2, "1"), cmd("get", pes2), cmd("decrby", pes2, "1"), cmd("zadd", T2, "1796116196511", idH), cmd("pttl", pes2)))
	assert.Equal(t, []string{idH, "1796116196511"}, r2.zset(T2))
	assert.Equal(t, "0", r2.get(pes2))

	// V2.12 `pes3` (3): acquire 2, an all-or-nothing release that fails on an
	// unknown id, the release of both; then one that fails on an expired id.
	i1 := sgID(t, "11111111111111111111111111111111")
	i2 := sgID(t, "22222222222222222222222222222222")
	i3 := sgID(t, "33333333333333333333333333333333")
	pes3 := unique("pes3")
	S3, T3 := sgNames(t, pes3)
	r3 := newSgRec(t, env, pes3, S3)
	t.Cleanup(func() { r3.ctl.try("DEL", pes3, T3) })
	assert.Equal(t, int64(1), r3.eval(script.SemTrySet(), ks(pes3, S3), "3", pub))
	a = append(argv("2", "1796116210000", "1796116200000", sgNever, pub), i1, i2)
	assert.Equal(t, "OK", r3.eval(script.PESAcquire(), ks(pes3, T3, S3), a...))
	r3.step("V2.12 acquire 2", []pubMsg{r3.msg(S3, "3")},
		run(script.SemTrySet(), ks(pes3, S3), argv("3", pub), cmd("get", pes3), cmd("set", pes3, "3"), cmd(pub, S3, "3")),
		run(script.PESAcquire(), ks(pes3, T3, S3), a,
			cmd("zrangebyscore", T3, "0", "1796116200000", "limit", "0", "2"), cmd("get", pes3), cmd("decrby", pes3, "2"),
			cmd("zadd", T3, "1796116210000", i1), cmd("zadd", T3, "1796116210000", i2), cmd("pttl", pes3)))
	a = append(argv("3", "1796116200050", pub), i1, i2, idU)
	assert.Equal(t, int64(0), r3.eval(script.PESRelease(), ks(pes3, S3, T3), a...))
	r3.step("V2.12 tryRelease with an unknown id", nil, run(script.PESRelease(), ks(pes3, S3, T3), a,
		cmd("zscore", T3, i1), cmd("zscore", T3, i2), cmd("zscore", T3, idU)))
	assert.Equal(t, []string{i1, "1796116210000", i2, "1796116210000"}, r3.zset(T3))
	a = append(argv("2", "1796116200060", pub), i1, i2)
	assert.Equal(t, int64(2), r3.eval(script.PESRelease(), ks(pes3, S3, T3), a...))
	r3.step("V2.12 release both", []pubMsg{r3.msg(S3, "2")}, run(script.PESRelease(), ks(pes3, S3, T3), a,
		cmd("zscore", T3, i1), cmd("zscore", T3, i2), cmd("zrangebyscore", T3, "0", "1796116200060", "limit", "0", "-1"),
		cmd("zrem", T3, i1, i2), cmd("incrby", pes3, "2"), cmd(pub, S3, "2")))
	assert.Equal(t, "3", r3.get(pes3))
	assert.Zero(t, r3.ctl.int("EXISTS", T3))
	ka := append(argv("1", "1796116200100", "1796116200000", sgNever, pub), i3)
	assert.Equal(t, "OK", r3.eval(script.PESAcquire(), ks(pes3, T3, S3), ka...))
	a = append(argv("1", "1796116200100", pub), i3)
	assert.Equal(t, int64(0), r3.eval(script.PESRelease(), ks(pes3, S3, T3), a...))
	r3.step("tryRelease of an expired id", nil,
		run(script.PESAcquire(), ks(pes3, T3, S3), ka,
			cmd("zrangebyscore", T3, "0", "1796116200000", "limit", "0", "1"), cmd("get", pes3), cmd("decrby", pes3, "1"),
			cmd("zadd", T3, "1796116200100", i3), cmd("pttl", pes3)),
		run(script.PESRelease(), ks(pes3, S3, T3), a, cmd("zscore", T3, i3)))
	assert.Equal(t, "2", r3.get(pes3))
	assert.Equal(t, []string{i3, "1796116200100"}, r3.zset(T3))

	// V2.13 trySetPermits(2, 60 s), then an acquire copies the TTL to the zset.
	pes5 := unique("pes5")
	S5, T5 := sgNames(t, pes5)
	r5 := newSgRec(t, env, pes5, S5)
	t.Cleanup(func() { r5.ctl.try("DEL", pes5, T5) })
	assert.Equal(t, int64(1), r5.eval(script.SemTrySet(), ks(pes5, S5), "2", pub, "60000"))
	a = append(argv("1", "1796116230000", "1796116220000", sgNever, pub), idX)
	assert.Equal(t, "OK", r5.eval(script.PESAcquire(), ks(pes5, T5, S5), a...))
	ms := r5.step("V2.13 acquire on a TTL'd semaphore", []pubMsg{r5.msg(S5, "2")},
		run(script.SemTrySet(), ks(pes5, S5), argv("2", pub, "60000"),
			cmd("get", pes5), cmd("set", pes5, "2", "px", "60000"), cmd(pub, S5, "2")),
		run(script.PESAcquire(), ks(pes5, T5, S5), a,
			cmd("zrangebyscore", T5, "0", "1796116220000", "limit", "0", "1"), cmd("get", pes5), cmd("decrby", pes5, "1"),
			cmd("zadd", T5, "1796116230000", idX), cmd("pttl", pes5), cmd("pexpire", T5, sgAnyMillis)))
	if assert.Len(t, ms, 1) {
		v, err := strconv.ParseInt(ms[0], 10, 64)
		require.NoError(t, err)
		assert.True(t, v <= 60000 && v > 60000-ttlSlack.Milliseconds(), "pexpire %s", ms[0])
		r5.pttlWithin(T5, v)
	}
	r5.pttlWithin(pes5, 60000)
}

// sgLatch replays §11.3 V3.1-V3.3, V3.6 and V3.7.
func sgLatch(t *testing.T, env sgEnv) {
	pub := env.pub

	// V3.1 trySetCount(2), twice; V3.2 countDown twice; V3.3 on a missing key.
	lat := unique("lat")
	C := sgLatchChannel(lat)
	r := newSgRec(t, env, lat, C)
	t.Cleanup(func() { r.ctl.try("DEL", lat) })
	assert.Equal(t, int64(1), r.eval(script.LatchTrySet(), ks(lat, C), "1", "2", pub))
	assert.Equal(t, int64(0), r.eval(script.LatchTrySet(), ks(lat, C), "1", "2", pub))
	r.step("V3.1 trySetCount(2), twice", []pubMsg{r.msg(C, "1")},
		run(script.LatchTrySet(), ks(lat, C), argv("1", "2", pub), cmd("exists", lat), cmd("set", lat, "2"), cmd(pub, C, "1")),
		run(script.LatchTrySet(), ks(lat, C), argv("1", "2", pub), cmd("exists", lat)))
	assert.Equal(t, "2", r.get(lat))
	assert.Equal(t, int64(-1), r.pttl(lat))
	down := func(cmds ...[]string) scriptRun {
		return run(script.LatchCountDown(), ks(lat, C), argv("0", pub), append([][]string{cmd("decr", lat)}, cmds...)...)
	}
	assert.Nil(t, r.eval(script.LatchCountDown(), ks(lat, C), "0", pub))
	r.step("V3.2 countDown 2 -> 1", nil, down())
	assert.Equal(t, "1", r.get(lat))
	assert.Nil(t, r.eval(script.LatchCountDown(), ks(lat, C), "0", pub))
	r.step("V3.2 countDown 1 -> 0", []pubMsg{r.msg(C, "0")}, down(cmd("del", lat), cmd(pub, C, "0")))
	assert.Zero(t, r.ctl.int("EXISTS", lat))
	assert.Nil(t, r.eval(script.LatchCountDown(), ks(lat, C), "0", pub))
	r.step("V3.3 countDown on a missing key", nil, down(cmd("del", lat)))
	assert.Zero(t, r.ctl.int("EXISTS", lat))

	// V3.6 delete(), twice.
	lat2 := unique("lat2")
	C2 := sgLatchChannel(lat2)
	r2 := newSgRec(t, env, lat2, C2)
	assert.Equal(t, int64(1), r2.eval(script.LatchTrySet(), ks(lat2, C2), "1", "1", pub))
	assert.Equal(t, int64(1), r2.eval(script.LatchDelete(), ks(lat2, C2), "1", pub))
	assert.Equal(t, int64(0), r2.eval(script.LatchDelete(), ks(lat2, C2), "1", pub))
	r2.step("V3.6 delete, twice", []pubMsg{r2.msg(C2, "1"), r2.msg(C2, "1")},
		run(script.LatchTrySet(), ks(lat2, C2), argv("1", "1", pub), cmd("exists", lat2), cmd("set", lat2, "1"), cmd(pub, C2, "1")),
		run(script.LatchDelete(), ks(lat2, C2), argv("1", pub), cmd("del", lat2), cmd(pub, C2, "1")),
		run(script.LatchDelete(), ks(lat2, C2), argv("1", pub), cmd("del", lat2)))
	assert.Zero(t, r2.ctl.int("EXISTS", lat2))

	// V3.7 trySetCount(0) is stored as is.
	lat0 := unique("lat0")
	C0 := sgLatchChannel(lat0)
	r0 := newSgRec(t, env, lat0, C0)
	t.Cleanup(func() { r0.ctl.try("DEL", lat0) })
	assert.Equal(t, int64(1), r0.eval(script.LatchTrySet(), ks(lat0, C0), "1", "0", pub))
	r0.step("V3.7 trySetCount(0)", []pubMsg{r0.msg(C0, "1")},
		run(script.LatchTrySet(), ks(lat0, C0), argv("1", "0", pub), cmd("exists", lat0), cmd("set", lat0, "0"), cmd(pub, C0, "1")))
	assert.Equal(t, "0", r0.get(lat0))
}

// sgLatchBraced replays §11.3 V3.4 on a standalone server, and on a
// cluster V3.8's CROSSSLOT for a braced name, which changes nothing.
func sgLatchBraced(t *testing.T, env sgEnv) {
	pub := env.pub
	tag := unique("g")
	lat := "{" + tag + "}:lat"
	C := "redisson_countdownlatch__channel__{{" + tag + "}:lat}"
	require.Equal(t, C, sgLatchChannel(lat))
	if env.cluster {
		r := newSgRec(t, env, tag)
		for _, c := range []struct {
			s    *script.Script
			args []string
		}{{script.LatchTrySet(), argv("1", "1", pub)}, {script.LatchCountDown(), argv("0", pub)}, {script.LatchDelete(), argv("1", pub)}} {
			got := r.eval(c.s, ks(lat, C), c.args...)
			re, ok := got.(redisproc.ReplyError)
			if assert.True(t, ok, "%s on a braced latch: %#v", c.s.Name(), got) {
				assert.Equal(t, "CROSSSLOT Keys in request don't hash to the same slot", string(re))
			}
		}
		r.step("V3.8 braced latch in a cluster", nil)
		assert.Equal(t, "<nil>", r.get(lat))
		return
	}
	r := newSgRec(t, env, tag, C)
	t.Cleanup(func() { r.ctl.try("DEL", lat) })
	assert.Equal(t, int64(1), r.eval(script.LatchTrySet(), ks(lat, C), "1", "1", pub))
	assert.Nil(t, r.eval(script.LatchCountDown(), ks(lat, C), "0", pub))
	r.step("V3.4 braced latch", []pubMsg{r.msg(C, "1"), r.msg(C, "0")},
		run(script.LatchTrySet(), ks(lat, C), argv("1", "1", pub), cmd("exists", lat), cmd("set", lat, "1"), cmd(pub, C, "1")),
		run(script.LatchCountDown(), ks(lat, C), argv("0", pub), cmd("decr", lat), cmd("del", lat), cmd(pub, C, "0")))
	assert.Zero(t, r.ctl.int("EXISTS", lat))
}

// TestSyncReceipts checks our receipt variants: a resend with the same
// receipt changes nothing and replies as the first call did; an undo gives
// back exactly one acquisition and fences off a late acquire; and the
// permit watchdog's script extends only live permits.
func TestSyncReceipts(t *testing.T) {
	parallel(t)
	env := sgStandalone()
	pub := env.pub
	const ttl = "60000"
	rcpt := func(name, op string) string {
		k := keys.Prefix("interlock_receipt", name) + ":" + op
		require.Equal(t, keys.Slot(name), keys.Slot(k))
		return k
	}

	sem := unique("semrcpt")
	S, _ := sgNames(t, sem)
	r := newSgRec(t, env, sem, S)
	t.Cleanup(func() { r.ctl.try("DEL", sem) })
	R1, R2, R3, R4 := rcpt(sem, "op1"), rcpt(sem, "op2"), rcpt(sem, "op3"), rcpt(sem, "op4")
	t.Cleanup(func() { r.ctl.try("DEL", R1, R2, R3, R4) })
	r.ctl.do("SET", sem, "3")

	// sem_acquire: a resend replies 1 again and takes nothing more.
	{
		assert.Equal(t, int64(1), r.eval(script.SemAcquire(), ks(sem, R1), "2", ttl))
		assert.Equal(t, int64(1), r.eval(script.SemAcquire(), ks(sem, R1), "2", ttl), "resend")
		r.step("acquire, resent", nil,
			run(script.SemAcquire(), ks(sem, R1), argv("2", ttl),
				cmd("get", R1), cmd("get", sem), cmd("decrby", sem, "2"), cmd("set", R1, "1", "px", ttl)),
			run(script.SemAcquire(), ks(sem, R1), argv("2", ttl), cmd("get", R1)))
		assert.Equal(t, "1", r.get(sem))
		assert.Equal(t, "1", r.get(R1))
		r.pttlWithin(R1, 60000)
		// A failed acquire leaves no receipt, so a resend may still succeed.
		assert.Equal(t, int64(0), r.eval(script.SemAcquire(), ks(sem, R2), "2", ttl))
		r.step("failed acquire", nil, run(script.SemAcquire(), ks(sem, R2), argv("2", ttl), cmd("get", R2), cmd("get", sem)))
		assert.Zero(t, r.ctl.int("EXISTS", R2))
	}

	// sem_undo_acquire gives back one acquisition, once, and fences off
	// the acquire it undoes.
	{
		undo := func(R string, cmds ...[]string) scriptRun {
			return run(script.SemUndoAcquire(), ks(sem, S, R), argv("2", pub, ttl), append([][]string{cmd("get", R)}, cmds...)...)
		}
		assert.Equal(t, int64(1), r.eval(script.SemUndoAcquire(), ks(sem, S, R1), "2", pub, ttl))
		assert.Equal(t, int64(0), r.eval(script.SemUndoAcquire(), ks(sem, S, R1), "2", pub, ttl), "second undo")
		assert.Equal(t, int64(0), r.eval(script.SemAcquire(), ks(sem, R1), "2", ttl), "acquire after its undo")
		r.step("undo, undo again, acquire again", []pubMsg{r.msg(S, "3")},
			undo(R1, cmd("incrby", sem, "2"), cmd(pub, S, "3"), cmd("set", R1, "u", "px", ttl)),
			undo(R1),
			run(script.SemAcquire(), ks(sem, R1), argv("2", ttl), cmd("get", R1)))
		assert.Equal(t, "3", r.get(sem))
		assert.Equal(t, "u", r.get(R1))
		// The undo of an acquire that has not arrived yet fences it off.
		assert.Equal(t, int64(0), r.eval(script.SemUndoAcquire(), ks(sem, S, R3), "2", pub, ttl))
		assert.Equal(t, int64(0), r.eval(script.SemAcquire(), ks(sem, R3), "2", ttl), "late acquire")
		r.step("undo first, acquire late", nil,
			undo(R3, cmd("set", R3, "u", "px", ttl)),
			run(script.SemAcquire(), ks(sem, R3), argv("2", ttl), cmd("get", R3)))
		assert.Equal(t, "3", r.get(sem))
		assert.Equal(t, "u", r.get(R3))
		r.pttlWithin(R3, 60000)
	}

	// sem_release: a resend adds nothing and publishes nothing.
	{
		R := rcpt(sem, "rel")
		t.Cleanup(func() { r.ctl.try("DEL", R) })
		assert.Nil(t, r.eval(script.SemRelease(), ks(sem, S, R), "1", pub, ttl))
		assert.Nil(t, r.eval(script.SemRelease(), ks(sem, S, R), "1", pub, ttl))
		r.step("release, resent", []pubMsg{r.msg(S, "4")},
			run(script.SemRelease(), ks(sem, S, R), argv("1", pub, ttl),
				cmd("exists", R), cmd("incrby", sem, "1"), cmd(pub, S, "4"), cmd("set", R, "1", "px", ttl)),
			run(script.SemRelease(), ks(sem, S, R), argv("1", pub, ttl), cmd("exists", R)))
		assert.Equal(t, "4", r.get(sem))
		r.pttlWithin(R, 60000)
	}

	// sem_release_if_exists: a resend replies as the first call did.
	{
		R, Rm := rcpt(sem, "rie"), rcpt(sem, "rie-missing")
		missing := "{" + sem + "}:missing" // same slot, never created
		t.Cleanup(func() { r.ctl.try("DEL", R, Rm, missing) })
		rie := func(n, R string, cmds ...[]string) scriptRun {
			return run(script.SemReleaseIfExists(), ks(n, S, R), argv("1", pub, ttl), append([][]string{cmd("get", R)}, cmds...)...)
		}
		assert.Equal(t, int64(1), r.eval(script.SemReleaseIfExists(), ks(sem, S, R), "1", pub, ttl))
		assert.Equal(t, int64(1), r.eval(script.SemReleaseIfExists(), ks(sem, S, R), "1", pub, ttl))
		assert.Equal(t, int64(0), r.eval(script.SemReleaseIfExists(), ks(missing, S, Rm), "1", pub, ttl))
		r.ctl.do("SET", missing, "0")
		assert.Equal(t, int64(0), r.eval(script.SemReleaseIfExists(), ks(missing, S, Rm), "1", pub, ttl), "resend after the key appeared")
		r.step("releaseIfExists, resent", []pubMsg{r.msg(S, "5")},
			rie(sem, R, cmd("exists", sem), cmd("incrby", sem, "1"), cmd(pub, S, "5"), cmd("set", R, "1", "px", ttl)),
			rie(sem, R),
			rie(missing, Rm, cmd("exists", missing), cmd("set", Rm, "0", "px", ttl)),
			rie(missing, Rm))
		assert.Equal(t, "5", r.get(sem))
		assert.Equal(t, "0", r.get(missing))
	}

	// sem_add: a resend adds nothing.
	{
		R := rcpt(sem, "add")
		t.Cleanup(func() { r.ctl.try("DEL", R) })
		r.ctl.do("PEXPIRE", sem, "60000")
		assert.Nil(t, r.eval(script.SemAdd(), ks(sem, S, R), "-2", pub, ttl))
		assert.Nil(t, r.eval(script.SemAdd(), ks(sem, S, R), "-2", pub, ttl))
		r.step("add, resent", []pubMsg{r.msg(S, "3")},
			run(script.SemAdd(), ks(sem, S, R), argv("-2", pub, ttl),
				cmd("exists", R), cmd("get", sem), cmd("set", sem, "3"), cmd(pub, S, "3"), cmd("set", R, "1", "px", ttl)),
			run(script.SemAdd(), ks(sem, S, R), argv("-2", pub, ttl), cmd("exists", R)))
		assert.Equal(t, "3", r.get(sem))
		assert.Equal(t, int64(-1), r.pttl(sem))
	}

	// pes_add: a resend adds nothing.
	{
		pes := "{" + sem + "}:pes"
		R := rcpt(sem, "padd")
		t.Cleanup(func() { r.ctl.try("DEL", R, pes) })
		assert.Nil(t, r.eval(script.PESAdd(), ks(pes, S, R), "2", pub, ttl))
		assert.Nil(t, r.eval(script.PESAdd(), ks(pes, S, R), "2", pub, ttl))
		r.step("expirable add, resent", []pubMsg{r.msg(S, "2")},
			run(script.PESAdd(), ks(pes, S, R), argv("2", pub, ttl),
				cmd("exists", R), cmd("get", pes), cmd("set", pes, "2"), cmd(pub, S, "2"), cmd("set", R, "1", "px", ttl)),
			run(script.PESAdd(), ks(pes, S, R), argv("2", pub, ttl), cmd("exists", R)))
		assert.Equal(t, "2", r.get(pes))
	}

	// latch_count_down: a resend decrements nothing.
	t.Run("countDown", func(t *testing.T) {
		lat := unique("latrcpt")
		C := sgLatchChannel(lat)
		rl := newSgRec(t, env, lat, C)
		R1, R2 := rcpt(lat, "d1"), rcpt(lat, "d2")
		t.Cleanup(func() { rl.ctl.try("DEL", lat, R1, R2) })
		rl.ctl.do("SET", lat, "2")
		down := func(R string, cmds ...[]string) scriptRun {
			return run(script.LatchCountDown(), ks(lat, C, R), argv("0", pub, ttl), append([][]string{cmd("exists", R)}, cmds...)...)
		}
		for range 2 {
			assert.Nil(t, rl.eval(script.LatchCountDown(), ks(lat, C, R1), "0", pub, ttl))
		}
		rl.step("countDown, resent", nil, down(R1, cmd("decr", lat), cmd("set", R1, "1", "px", ttl)), down(R1))
		assert.Equal(t, "1", rl.get(lat))
		for range 2 {
			assert.Nil(t, rl.eval(script.LatchCountDown(), ks(lat, C, R2), "0", pub, ttl))
		}
		rl.step("last countDown, resent", []pubMsg{rl.msg(C, "0")},
			down(R2, cmd("decr", lat), cmd("del", lat), cmd(pub, C, "0"), cmd("set", R2, "1", "px", ttl)), down(R2))
		assert.Zero(t, rl.ctl.int("EXISTS", lat))
		rl.pttlWithin(R2, 60000)
	})

	// pes_renew extends live permits only.
	t.Run("renew", func(t *testing.T) {
		tag := unique("pesrenew")
		T1, T2 := "{"+tag+"}:a:timeout", "{"+tag+"}:b:timeout"
		rr := newSgRec(t, env, tag)
		t.Cleanup(func() { rr.ctl.try("DEL", T1, T2) })
		live, dead, other, gone := sgID(t, "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1"), sgID(t, "d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0"),
			sgID(t, "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2"), sgID(t, "c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3")
		const now, expiry = "1796116300000", "1796116330000"
		rr.ctl.do("ZADD", T1, "1796116301000", live, "1796116300000", dead)
		rr.ctl.do("ZADD", T2, "1796116300001", other)
		got := rr.eval(script.PESRenew(), ks(T1, T1, T2, T1), expiry, now, live, dead, other, gone)
		assert.Equal(t, []any{int64(1), int64(0), int64(1), int64(0)}, got)
		rr.step("renew", nil, run(script.PESRenew(), ks(T1, T1, T2, T1), argv(append([]string{expiry, now}, live, dead, other, gone)...),
			cmd("zscore", T1, live), cmd("zadd", T1, expiry, live), cmd("zscore", T1, dead),
			cmd("zscore", T2, other), cmd("zadd", T2, expiry, other), cmd("zscore", T1, gone)))
		assert.Equal(t, []string{dead, now, live, expiry}, rr.zset(T1))
		assert.Equal(t, []string{other, expiry}, rr.zset(T2))
	})
}
