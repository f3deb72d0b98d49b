package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/report"
	"github.com/interlock-go/interlock/internal/script"
)

// Acks is what the WAIT (or WAITAOF) after the last script Exec ran for it
// answered, in safe mode (interlock.WithReplicaAcks) or replica-sync mode
// (interlock.WithReplicaSync).
type Acks struct {
	ran   bool  // the script went out in one of those modes
	want  int64 // the WAIT's replica count; 0: no WAIT was sent
	got   int64
	aof   bool // the wait was WAITAOF 1 want timeout
	probe bool // err is that of reading the replica count, not of WAIT
	err   error
}

// Exec runs one acquire or unlock script: EVALSHA, then EVAL after
// NOSCRIPT. In safe mode and replica-sync mode the script is pipelined with
// WAIT (or WAITAOF), and a records the answer. rueidis sends a DoMulti
// holding a blocking command (WAIT and WAITAOF are) on one dedicated
// connection, and a cluster client sends the keyless commands of a DoMulti
// to the node of its keyed ones, so the wait counts the replicas that have
// this script's writes.
func (r *Runtime) Exec(ctx context.Context, a *Acks, s *script.Script, ks, args []string) rueidis.RedisResult {
	switch {
	case r.Cfg.ReplicaAcks > 0:
		res, _ := r.execWait(ctx, a, s, ks, args, int64(r.Cfg.ReplicaAcks), false, false)
		return res
	case r.Cfg.ReplicaSync:
		return r.execSynced(ctx, a, s, ks, args)
	}
	return r.Send(ctx, s, ks, args)
}

// execSynced is Exec in replica-sync mode: WAIT for as many replicas as the
// master of the keys' slot has, read with INFO replication before the first
// call (on a cluster, from the node of that slot) and after a WAIT answered
// another number, and re-read in the script's pipeline once the count is
// replicaRecheck old; no WAIT when it has none. Unless ReplicaSyncAck, INFO
// persistence is read along with it and the master probed once with
// WAITAOF 0 0 0, and a master with AOF on that knows WAITAOF gets
// WAITAOF 1 n timeout instead of WAIT.
func (r *Runtime) execSynced(ctx context.Context, a *Acks, s *script.Script, ks, args []string) rueidis.RedisResult {
	*a = Acks{}
	var slot uint16
	if r.RC.Mode() == rueidis.ClientModeCluster && len(ks) > 0 {
		slot = keys.Slot(ks[0])
	}
	aofCheck := !r.Cfg.ReplicaSyncAck
	n, aof, recheck := r.replicas.get(slot, time.Now(), aofCheck)
	if n < 0 {
		cmds := r.infoCmds(ks)
		if aofCheck {
			probe := r.RC.B().Waitaof().Numlocal(0).Numreplicas(0).Timeout(0).Build()
			if len(ks) > 0 {
				probe = probe.SetSlot(ks[0])
			}
			cmds = append(cmds, probe)
		}
		res := r.RC.DoMulti(ctx, cmds...)
		text, err := infoText(res[:len(r.infoCmds(nil))])
		if err == nil {
			n, err = r.replicas.learn(slot, text, time.Now())
		}
		switch {
		case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			return rueidis.NewErrorResult(err) // nothing was sent
		case err != nil:
			// The script still goes, so that an unlock releases; an
			// acquisition is taken back on the error CheckAcks gives.
			*a = Acks{ran: true, probe: true, err: err}
			return s.Exec(ctx, r.RC, ks, args)
		}
		if aofCheck {
			// Any refusal (unknown command before 7.2, ACL) means WAIT.
			r.replicas.probed(slot, res[len(res)-1].Error() == nil)
			n, aof, _ = r.replicas.get(slot, time.Now(), aofCheck)
		}
	}
	res, info := r.execWait(ctx, a, s, ks, args, n, aof, recheck)
	switch {
	case n > 0 && (a.err != nil || a.got < n):
		// Read before the next call; a refused WAITAOF (AOF turned off
		// since, a failover to an older server) is probed again.
		r.replicas.stale(slot, a.aof && a.err != nil)
	case a.got > n:
		r.replicas.due(slot) // a replica joined: re-read in the next pipeline
	}
	if recheck { // INFO ran after the WAIT: it has the last word
		if text, err := infoText(info); err == nil {
			_, _ = r.replicas.learn(slot, text, time.Now())
		}
	}
	return res
}

// infoCmds returns the INFO commands that read a master's replica count
// (and AOF state, unless ReplicaSyncAck), routed like a script on ks. Two
// commands rather than one with two sections: Redis 6 takes only one.
func (r *Runtime) infoCmds(ks []string) []rueidis.Completed {
	sections := []string{"replication"}
	if r.Cfg.ReplicaSync && !r.Cfg.ReplicaSyncAck {
		sections = append(sections, "persistence")
	}
	cmds := make([]rueidis.Completed, len(sections))
	for i, sec := range sections {
		cmds[i] = script.Resendable(r.RC.B().Info().Section(sec).Build())
		if len(ks) > 0 {
			cmds[i] = cmds[i].SetSlot(ks[0])
		}
	}
	return cmds
}

// infoText joins the texts of the replies to infoCmds.
func infoText(res []rueidis.RedisResult) (string, error) {
	var b strings.Builder
	for _, r := range res {
		text, err := r.ToString()
		if err != nil {
			return "", err
		}
		b.WriteString(text)
		b.WriteString("\r\n")
	}
	return b.String(), nil
}

// execWait sends the script followed by WAIT want timeout, or WAITAOF 1 want
// timeout with aof (nothing when want is 0) and, when info is set, by the
// INFO commands of infoCmds, whose replies it returns.
func (r *Runtime) execWait(ctx context.Context, a *Acks, s *script.Script, ks, args []string, want int64, aof, info bool) (rueidis.RedisResult, []rueidis.RedisResult) {
	*a = Acks{ran: true, want: want, aof: aof && want > 0}
	if want == 0 && !info {
		return s.Exec(ctx, r.RC, ks, args), nil
	}
	timeout := r.Cfg.ReplicaTimeout.Milliseconds()
	pipeline := func(call rueidis.Completed) []rueidis.Completed {
		cmds := []rueidis.Completed{call}
		switch {
		case want > 0 && aof:
			cmds = append(cmds, r.RC.B().Waitaof().Numlocal(1).Numreplicas(want).Timeout(timeout).Build())
		case want > 0:
			cmds = append(cmds, r.RC.B().Wait().Numreplicas(want).Timeout(timeout).Build())
		}
		if info {
			cmds = append(cmds, r.infoCmds(nil)...)
		}
		return cmds
	}
	res := r.RC.DoMulti(ctx, pipeline(s.EvalSHA(r.RC, ks, args))...)
	if script.IsNoScript(res[0].Error()) {
		res = r.RC.DoMulti(ctx, pipeline(s.Eval(r.RC, ks, args))...)
	}
	switch {
	case a.aof:
		// [local, replicas]: Redisson counts the replicas only.
		var got []int64
		if got, a.err = res[1].AsIntSlice(); a.err == nil && len(got) != 2 {
			a.err = fmt.Errorf("WAITAOF answered %v", got)
		}
		if a.err == nil {
			a.got = got[1]
		}
	case want > 0:
		a.got, a.err = res[1].AsInt64()
	}
	var infoRes []rueidis.RedisResult
	if info {
		infoRes = res[len(res)-len(r.infoCmds(nil)):]
	}
	return res[0], infoRes
}

// CheckAcks returns an error wrapping report.ErrReplication when the last
// script a recorded ran in safe mode and fewer replicas than wanted
// acknowledged it, or in replica-sync mode and none of the master's replicas
// did, or when the WAIT or the reading of the replica count failed; a
// context error is returned as is.
func (r *Runtime) CheckAcks(a *Acks) error {
	timeout := r.Cfg.ReplicaTimeout
	switch {
	case !a.ran:
		return nil
	case errors.Is(a.err, context.Canceled) || errors.Is(a.err, context.DeadlineExceeded):
		return a.err
	case a.err != nil && a.probe:
		return fmt.Errorf("%w: reading the replica count (INFO replication) failed: %w", report.ErrReplication, a.err)
	case a.err != nil && a.aof:
		return fmt.Errorf("%w: WAITAOF 1 %d %d failed: %w", report.ErrReplication, a.want, timeout.Milliseconds(), a.err)
	case a.err != nil:
		return fmt.Errorf("%w: WAIT %d %d failed: %w", report.ErrReplication, a.want, timeout.Milliseconds(), a.err)
	case a.want == 0:
		return nil
	case a.aof && a.got == 0:
		return fmt.Errorf("%w: %d of %d replicas acknowledged within %v (WAITAOF: written to their AOF)", report.ErrReplication, a.got, a.want, timeout)
	case a.got == 0 || (!r.Cfg.ReplicaSync && a.got < a.want):
		return fmt.Errorf("%w: %d of %d replicas acknowledged within %v", report.ErrReplication, a.got, a.want, timeout)
	}
	return nil
}
