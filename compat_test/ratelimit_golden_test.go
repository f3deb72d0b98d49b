package compat_test

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/redisproc"
	"github.com/interlock-go/interlock/internal/script"
)

// Golden vectors of the rate limiter, recorded from real Redisson JVMs
// (3.52.0 and 4.7.0) and replayed against our scripts.
//
// Recording (INTERLOCK_RECORD_GOLDEN=ratelimit, which needs java and mvn):
// a peer runs a fixed sequence of RRateLimiter calls on a server of the
// test's own while MONITOR watches; each call becomes a step holding the
// KEYS and ARGV Redisson sent (its clock reading and random bytes
// included), the commands its script ran, the reply its API gave, and
// every key of the limiter afterwards. The files are in testdata/.
//
// Replaying (always, no JVM): each step runs the script of ours that does
// what Redisson's did, with the same KEYS (renamed) and ARGV, on a
// standalone server and on a cluster, and must give the same reply, run
// the same writes, in the same order and with the same arguments, and
// leave the same keys. Steps with no script of ours (Redisson's release,
// expire and delete) replay the commands Redisson's ran. The reads differ
// (our scripts read the config with one HMGET) and are not compared.
//
//	INTERLOCK_RECORD_GOLDEN=ratelimit go test -count=1 -run TestRateLimitGoldenRecord ./compat_test/
//	go test -count=1 -run TestRateLimitGolden ./compat_test/

// rlVector is one recording.
type rlVector struct {
	Redisson string   `json:"redisson"`
	ClientID string   `json:"clientId"` // the peer's id, in the per-client keys
	Names    []string `json:"names"`    // the limiters' names, renamed on replay
	Steps    []rlStep `json:"steps"`
}

// rlStep is one Redisson call. Binary strings (ARGV, command arguments,
// values, zset members) are hex.
type rlStep struct {
	Label  string                `json:"label"`
	Call   string                `json:"call"`             // the Java call
	Script string                `json:"script,omitempty"` // ours that replays it; "" replays Cmds
	Keys   []string              `json:"keys,omitempty"`
	Argv   []string              `json:"argv,omitempty"`
	Cmds   [][]string            `json:"cmds"`             // what Redisson's script (or call) ran
	Result json.RawMessage       `json:"result,omitempty"` // the Java API's reply
	Error  string                `json:"error,omitempty"`  // or its exception
	State  map[string]rlKeyState `json:"state"`            // every key of the limiter after it
}

// rlKeyState is one key.
type rlKeyState struct {
	Type  string            `json:"type"`
	Value string            `json:"value,omitempty"` // string: hex
	Hash  map[string]string `json:"hash,omitempty"`
	ZSet  [][2]string       `json:"zset,omitempty"` // member hex, score
	PTTL  int64             `json:"pttl"`           // -1 none
}

const envRecordGolden = "INTERLOCK_RECORD_GOLDEN"

func rlGoldenFile(version string) string {
	return filepath.Join("testdata", "ratelimit-golden-"+version+".json")
}

// rlWrites are the commands the vectors compare; the rest are reads.
var rlWrites = map[string]bool{
	"set": true, "decrby": true, "incrby": true, "zadd": true, "zremrangebyscore": true, "zrem": true,
	"pexpire": true, "del": true, "hset": true, "hsetnx": true,
}

func TestRateLimitGoldenRecord(t *testing.T) {
	if os.Getenv(envRecordGolden) != "ratelimit" {
		t.Skip("records testdata/ratelimit-golden-*.json with " + envRecordGolden + "=ratelimit")
	}
	requireJava(t)
	for _, version := range peerVersions {
		t.Run(version, func(t *testing.T) {
			addr := monitoredStandalone(t)
			p := startJavaPeer(t, version, []string{addr})
			rec := &rlRecorder{t: t, p: p, ctl: dial(t, addr), mon: openMonitor(t, addr)}
			v := rec.record()
			b, err := json.MarshalIndent(v, "", "\t")
			require.NoError(t, err)
			require.NoError(t, os.MkdirAll("testdata", 0o755))
			require.NoError(t, os.WriteFile(rlGoldenFile(version), append(b, '\n'), 0o644))
			t.Logf("wrote %s: %d steps", rlGoldenFile(version), len(v.Steps))
		})
	}
}

// rlRecorder runs the sequence on a peer and records it.
type rlRecorder struct {
	t    *testing.T
	p    *javaPeer
	ctl  *conn
	mon  *monitor
	name string // the limiter of the current step
	v    rlVector
	n    int
}

func (r *rlRecorder) record() rlVector {
	t := r.t
	r.v = rlVector{Redisson: r.p.Version(), ClientID: r.p.ClientID()}
	over, per, none := "rl-golden-overall", "rl-golden-perclient", "rl-golden-unset"
	r.v.Names = []string{over, per, none}
	for _, n := range r.v.Names {
		r.ctl.do("DEL", n, "{"+n+"}:value", "{"+n+"}:permits", "{"+n+"}:value:"+r.p.ClientID(), "{"+n+"}:permits:"+r.p.ClientID())
	}
	set := func(call string, typ string, rate, interval, keep int64) peerReq {
		return peerReq{Thread: 1, Op: call, Kind: "ratelimit", RL: peerRateArgs{RateType: typ, Rate: rate, IntervalMs: interval, KeepAliveMs: keep}}
	}
	acq := func(n int) peerReq {
		return peerReq{Thread: 1, Op: "tryAcquire", Kind: "ratelimit", Wait: peerNoWait, Permits: n}
	}
	plain := func(op string) peerReq { return peerReq{Thread: 1, Op: op, Kind: "ratelimit"} }

	r.name = over
	r.step("trySetRate(OVERALL, 3, 1s)", "rl_try_set", set("trySetRate", "OVERALL", 3, 1000, 0))
	r.step("trySetRate(OVERALL, 5, 2s) on a set limiter", "rl_try_set", set("trySetRate", "OVERALL", 5, 2000, 0))
	r.step("availablePermits, no count yet", "rl_available", plain("availablePermits"))
	r.step("tryAcquire(2)", "rl_acquire", acq(2))
	r.step("tryAcquire(1)", "rl_acquire", acq(1))
	r.step("tryAcquire(1) refused", "rl_acquire", acq(1))
	r.step("tryAcquire(4) above the rate", "rl_acquire", acq(4))
	r.step("availablePermits, nothing to free", "rl_available", plain("availablePermits"))
	time.Sleep(1100 * time.Millisecond)
	r.step("tryAcquire(1) after the interval: frees 3", "rl_acquire", acq(1))
	rel := plain("release")
	rel.Permits = 2
	r.step("release(2): the count capped at the rate", "", rel)
	time.Sleep(1100 * time.Millisecond)
	r.step("tryAcquire(1): frees 1 over the rate, recounts", "rl_acquire", acq(1))
	exp := plain("expire")
	exp.TTL = time.Minute
	r.step("expire(60s)", "", exp)
	r.step("tryAcquire(1): the config's TTL to the state", "rl_acquire", acq(1))
	r.step("availablePermits with a TTL", "rl_available", plain("availablePermits"))
	r.step("setRate(OVERALL, 2, 500ms, keepAlive 5s)", "rl_set", set("setRate", "OVERALL", 2, 500, 5000))
	r.step("tryAcquire(1) with keep-alive", "rl_acquire", acq(1))
	r.step("tryAcquire(2) refused with keep-alive", "rl_acquire", acq(2))
	r.step("delete", "", plain("delete"))

	r.name = per
	r.step("trySetRate(PER_CLIENT, 2, 1s, keepAlive 3s)", "rl_try_set", set("trySetRate", "PER_CLIENT", 2, 1000, 3000))
	r.step("per client: availablePermits", "rl_available", plain("availablePermits"))
	r.step("per client: tryAcquire(2)", "rl_acquire", acq(2))
	r.step("per client: tryAcquire(1) refused", "rl_acquire", acq(1))
	r.step("setRate(PER_CLIENT, 3, 1s)", "rl_set", set("setRate", "PER_CLIENT", 3, 1000, 0))
	r.step("per client: tryAcquire(3) after setRate", "rl_acquire", acq(3))
	r.step("setRate(OVERALL, 1, 1s) over a per-client limiter", "rl_set", set("setRate", "OVERALL", 1, 1000, 0))
	r.step("per client made overall: tryAcquire(1)", "rl_acquire", acq(1))

	r.name = none
	r.step("tryAcquire(1) on an unset limiter", "rl_acquire", acq(1))
	r.step("availablePermits on an unset limiter", "rl_available", plain("availablePermits"))
	require.NotEmpty(t, r.v.Steps)
	return r.v
}

// step runs one call and records it.
func (r *rlRecorder) step(label, ours string, req peerReq) {
	t := r.t
	t.Helper()
	req.Name = r.name
	reply := r.p.Start(t, req)
	var rep peerReply
	select {
	case rep = <-reply:
	case <-time.After(peerDoTimeout):
		t.Fatalf("%s: no reply", label)
	}
	r.n++
	mark := "rl-golden-step-" + strconv.Itoa(r.n)
	r.ctl.do("ECHO", mark)
	lines := r.mon.untilEcho(t, mark)
	s := rlStep{Label: label, Call: req.Op, Script: ours}
	if rep.OK {
		s.Result = rep.Result
	} else {
		s.Error = rep.Err
	}
	// The call's script: an EVAL(SHA) whose KEYS hold the name.
	runs := scriptRuns(lines)
	var mine []scriptRun
	for _, run := range runs {
		for _, k := range run.Keys {
			if strings.Contains(k, r.name) {
				mine = append(mine, run)
				break
			}
		}
	}
	switch {
	case len(mine) == 1:
		s.Keys = mine[0].Keys
		s.Argv = rlHexAll(mine[0].Argv)
		for _, c := range mine[0].Cmds {
			s.Cmds = append(s.Cmds, rlHexAll(c))
		}
	case len(mine) == 0 && ours == "":
		for _, l := range lines { // a plain command (DEL)
			if l.Client != "lua" && len(l.Args) > 1 && strings.Contains(strings.Join(l.Args[1:], " "), r.name) {
				s.Cmds = append(s.Cmds, rlHexAll(l.Args))
			}
		}
	default:
		t.Fatalf("%s: %d script runs on %s: %v", label, len(mine), r.name, lines)
	}
	require.NotEmpty(t, s.Cmds, "%s: Redisson ran nothing", label)
	s.State = rlSnapshot(t, r.ctl, r.name)
	r.v.Steps = append(r.v.Steps, s)
}

func rlHexAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = hex.EncodeToString([]byte(s))
	}
	return out
}

func rlUnhexAll(t *testing.T, ss []string) []string {
	t.Helper()
	out := make([]string, len(ss))
	for i, s := range ss {
		b, err := hex.DecodeString(s)
		require.NoError(t, err)
		out[i] = string(b)
	}
	return out
}

// rlSnapshot reads every key of the limiter called name (they all contain
// it) on the node c is connected to.
func rlSnapshot(t *testing.T, c *conn, name string) map[string]rlKeyState {
	t.Helper()
	out := map[string]rlKeyState{}
	for _, k := range c.scan("*" + name + "*") {
		st := rlKeyState{Type: c.str("TYPE", k), PTTL: c.int("PTTL", k)}
		switch st.Type {
		case "string":
			st.Value = hex.EncodeToString([]byte(c.str("GET", k)))
		case "hash":
			st.Hash = c.hash(k)
		case "zset":
			flat := c.strs("ZRANGE", k, "0", "-1", "WITHSCORES")
			for i := 0; i+1 < len(flat); i += 2 {
				st.ZSet = append(st.ZSet, [2]string{hex.EncodeToString([]byte(flat[i])), flat[i+1]})
			}
		}
		out[k] = st
	}
	return out
}

func TestRateLimitGoldenStandalone(t *testing.T) {
	addr := monitoredStandalone(t)
	rlReplayAll(t, func(string) string { return addr })
}

func TestRateLimitGoldenCluster(t *testing.T) {
	cl := monitoredCluster(t)
	rlReplayAll(t, func(k string) string { return cl.NodeForKey(k).Addr() })
}

func rlReplayAll(t *testing.T, node func(key string) string) {
	for _, version := range peerVersions {
		t.Run(version, func(t *testing.T) {
			b, err := os.ReadFile(rlGoldenFile(version))
			require.NoError(t, err, "the recorded vectors (see %s)", envRecordGolden)
			var v rlVector
			require.NoError(t, json.Unmarshal(b, &v))
			require.Equal(t, version, v.Redisson)
			rlReplay(t, v, node)
		})
	}
}

// rlReplay runs the steps of v on fresh names.
func rlReplay(t *testing.T, v rlVector, node func(key string) string) {
	renames := map[string]string{}
	for _, n := range v.Names {
		renames[n] = unique(n)
	}
	rename := func(s string) string {
		for from, to := range renames {
			s = strings.ReplaceAll(s, from, to)
		}
		return s
	}
	type onNode struct {
		ctl *conn
		mon *monitor
	}
	nodes := map[string]onNode{}
	at := func(name string) onNode {
		addr := node(name)
		if n, ok := nodes[addr]; ok {
			return n
		}
		n := onNode{dial(t, addr), openMonitor(t, addr)}
		for _, s := range script.All() {
			require.Equal(t, s.SHA1(), n.ctl.str("SCRIPT", "LOAD", s.Source()))
		}
		nodes[addr] = n
		return n
	}
	byName := map[string]*script.Script{}
	for _, s := range script.All() {
		byName[s.Name()] = s
	}
	for i, st := range v.Steps {
		label := fmt.Sprintf("%s step %d %q", v.Redisson, i+1, st.Label)
		name := ""
		for from, to := range renames {
			for _, k := range append(append([]string{}, st.Keys...), rlCmdKeys(t, st)...) {
				if strings.Contains(k, from) {
					name = to
				}
			}
		}
		require.NotEmpty(t, name, "%s: which limiter", label)
		n := at(name)
		javaCmds := make([][]string, len(st.Cmds))
		for j, c := range st.Cmds {
			javaCmds[j] = rlUnhexAll(t, c)
			for k := range javaCmds[j] {
				javaCmds[j][k] = rename(javaCmds[j][k])
			}
		}
		if st.Script == "" {
			for _, c := range javaCmds {
				_, err := n.ctl.try(c...)
				require.NoError(t, err, "%s: %v", label, c)
			}
		} else {
			s := byName[st.Script]
			require.NotNil(t, s, "%s: no script %s", label, st.Script)
			ks := make([]string, len(st.Keys))
			for j, k := range st.Keys {
				ks[j] = rename(k)
			}
			argv := rlUnhexAll(t, st.Argv)
			cmd := append([]string{"EVALSHA", s.SHA1(), strconv.Itoa(len(ks))}, ks...)
			got, err := n.ctl.try(append(cmd, argv...)...)
			rlCheckReply(t, label, st, got, err)

			mark := "rl-replay-" + unique("step")
			n.ctl.do("ECHO", mark)
			runs := scriptRuns(n.mon.untilEcho(t, mark, scriptRun{Keys: ks, Argv: argv, Cmds: javaCmds}))
			var ours []scriptRun
			for _, r := range runs {
				if len(r.Keys) > 0 && strings.Contains(r.Keys[0], name) {
					ours = append(ours, r)
				}
			}
			require.Len(t, ours, 1, "%s: our script ran once", label)
			assert.Equal(t, st.Script, ours[0].Script, label)
			rlSameWrites(t, label, rlOnlyWrites(javaCmds), rlOnlyWrites(ours[0].Cmds))
		}
		want := map[string]rlKeyState{}
		for k, ks := range st.State {
			want[rename(k)] = ks
		}
		rlSameState(t, label, want, rlSnapshot(t, n.ctl, name))
	}
}

// rlCmdKeys returns the arguments of a step's commands, for finding its
// limiter when it ran no script.
func rlCmdKeys(t *testing.T, st rlStep) []string {
	var out []string
	for _, c := range st.Cmds {
		out = append(out, rlUnhexAll(t, c)...)
	}
	return out
}

// rlCheckReply compares our script's reply with what Redisson's API gave.
func rlCheckReply(t *testing.T, label string, st rlStep, got any, err error) {
	t.Helper()
	if st.Error != "" {
		var re redisproc.ReplyError
		require.True(t, errors.As(err, &re), "%s: Redisson failed (%s); we replied %v, %v", label, st.Error, got, err)
		for _, text := range []string{"RateLimiter is not initialized", "Requested permits amount cannot exceed defined rate"} {
			if strings.Contains(st.Error, text) {
				assert.Contains(t, re.Error(), text, label)
				return
			}
		}
		t.Fatalf("%s: Redisson's error %q is none the vectors know", label, st.Error)
	}
	require.NoError(t, err, label)
	var java any
	require.NoError(t, json.Unmarshal(st.Result, &java), label)
	switch st.Script {
	case "rl_try_set":
		want := int64(0)
		if java == true {
			want = 1
		}
		assert.Equal(t, want, got, "%s: reply", label)
	case "rl_set":
		assert.Nil(t, got, "%s: reply", label)
	case "rl_available":
		assert.EqualValues(t, java, float64(got.(int64)), "%s: reply", label)
	case "rl_acquire":
		if java == true {
			assert.Nil(t, got, "%s: a grant replies nil", label)
		} else {
			d, ok := got.(int64)
			assert.True(t, ok && d > 0, "%s: a refusal replies a delay, not %#v", label, got)
		}
	}
}

// rlOnlyWrites keeps the writing commands, lower-cased.
func rlOnlyWrites(cmds [][]string) [][]string {
	var out [][]string
	for _, c := range cmds {
		if len(c) == 0 || !rlWrites[strings.ToLower(c[0])] {
			continue
		}
		w := append([]string{strings.ToLower(c[0])}, c[1:]...)
		out = append(out, w)
	}
	return out
}

// rlSameWrites compares the writes; a PEXPIRE whose TTL was read from the
// server (PTTL) may differ by the time between the recording's calls and
// the replay's.
func rlSameWrites(t *testing.T, label string, java, ours [][]string) {
	t.Helper()
	if len(java) == len(ours) {
		for i := range java {
			if len(java[i]) == 3 && len(ours[i]) == 3 && java[i][0] == "pexpire" && ours[i][0] == "pexpire" && java[i][1] == ours[i][1] {
				a, err1 := strconv.ParseInt(java[i][2], 10, 64)
				b, err2 := strconv.ParseInt(ours[i][2], 10, 64)
				if err1 == nil && err2 == nil && a != b && a-b < ttlSlack.Milliseconds()*20 && b-a < ttlSlack.Milliseconds() {
					ours[i][2] = java[i][2]
				}
			}
		}
	}
	assert.Equal(t, java, ours, "%s: the writes", label)
}

// rlSameState compares the limiter's keys; PTTLs within ttlSlack (a key
// that expires must expire in both, one without TTL in neither).
func rlSameState(t *testing.T, label string, want, got map[string]rlKeyState) {
	t.Helper()
	wk, gk := rlKeys(want), rlKeys(got)
	if !assert.Equal(t, wk, gk, "%s: the keys", label) {
		return
	}
	for _, k := range wk {
		w, g := want[k], got[k]
		if w.PTTL > 0 && g.PTTL > 0 && w.PTTL-g.PTTL < ttlSlack.Milliseconds()*20 && g.PTTL <= w.PTTL+ttlSlack.Milliseconds() {
			g.PTTL = w.PTTL
		}
		assert.Equal(t, w, g, "%s: key %s", label, k)
	}
}

func rlKeys(m map[string]rlKeyState) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
