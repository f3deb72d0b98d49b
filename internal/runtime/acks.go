package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/report"
	"github.com/interlock-go/interlock/internal/script"
)

// Acks is what the WAIT after the last script Exec ran for it answered, in
// safe mode (interlock.WithReplicaAcks) or replica-sync mode
// (interlock.WithReplicaSync).
type Acks struct {
	ran   bool  // the script went out in one of those modes
	want  int64 // the WAIT's replica count; 0: no WAIT was sent
	got   int64
	probe bool // err is that of reading the replica count, not of WAIT
	err   error
}

// Exec runs one acquire or unlock script: EVALSHA, then EVAL after
// NOSCRIPT. In safe mode and replica-sync mode the script is pipelined with
// WAIT, and a records the answer. rueidis sends a DoMulti holding a blocking
// command (WAIT is one) on one dedicated connection, and a cluster client
// sends the keyless commands of a DoMulti to the node of its keyed ones, so
// the WAIT counts the replicas that have this script's writes.
func (r *Runtime) Exec(ctx context.Context, a *Acks, s *script.Script, ks, args []string) rueidis.RedisResult {
	switch {
	case r.Cfg.ReplicaAcks > 0:
		res, _ := r.execWait(ctx, a, s, ks, args, int64(r.Cfg.ReplicaAcks), false)
		return res
	case r.Cfg.ReplicaSync:
		return r.execSynced(ctx, a, s, ks, args)
	}
	return s.Exec(ctx, r.RC, ks, args)
}

// execSynced is Exec in replica-sync mode: WAIT for as many replicas as the
// master of the keys' slot has, read with INFO replication before the first
// call (on a cluster, from the node of that slot) and after a WAIT answered
// another number, and re-read in the script's pipeline once the count is
// replicaRecheck old; no WAIT when it has none.
func (r *Runtime) execSynced(ctx context.Context, a *Acks, s *script.Script, ks, args []string) rueidis.RedisResult {
	*a = Acks{}
	var slot uint16
	if r.RC.Mode() == rueidis.ClientModeCluster && len(ks) > 0 {
		slot = keys.Slot(ks[0])
	}
	n, recheck := r.replicas.get(slot, time.Now())
	if n < 0 {
		info := script.Resendable(r.RC.B().Info().Section("replication").Build())
		if len(ks) > 0 {
			info = info.SetSlot(ks[0]) // routed like the script
		}
		text, err := r.RC.Do(ctx, info).ToString()
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
	}
	res, info := r.execWait(ctx, a, s, ks, args, n, recheck)
	switch {
	case n > 0 && (a.err != nil || a.got < n):
		r.replicas.stale(slot) // read before the next call
	case a.got > n:
		r.replicas.due(slot) // a replica joined: re-read in the next pipeline
	}
	if recheck { // INFO ran after the WAIT: it has the last word
		if text, err := info.ToString(); err == nil {
			_, _ = r.replicas.learn(slot, text, time.Now())
		}
	}
	return res
}

// execWait sends the script followed by WAIT want timeout (none when want is
// 0) and, when info is set, by INFO replication, whose reply it returns.
func (r *Runtime) execWait(ctx context.Context, a *Acks, s *script.Script, ks, args []string, want int64, info bool) (rueidis.RedisResult, rueidis.RedisResult) {
	*a = Acks{ran: true, want: want}
	if want == 0 && !info {
		return s.Exec(ctx, r.RC, ks, args), rueidis.RedisResult{}
	}
	pipeline := func(call rueidis.Completed) []rueidis.Completed {
		cmds := []rueidis.Completed{call}
		if want > 0 {
			cmds = append(cmds, r.RC.B().Wait().Numreplicas(want).Timeout(r.Cfg.ReplicaTimeout.Milliseconds()).Build())
		}
		if info {
			cmds = append(cmds, script.Resendable(r.RC.B().Info().Section("replication").Build()))
		}
		return cmds
	}
	res := r.RC.DoMulti(ctx, pipeline(s.EvalSHA(r.RC, ks, args))...)
	if script.IsNoScript(res[0].Error()) {
		res = r.RC.DoMulti(ctx, pipeline(s.Eval(r.RC, ks, args))...)
	}
	if want > 0 {
		a.got, a.err = res[1].AsInt64()
	}
	var infoRes rueidis.RedisResult
	if info {
		infoRes = res[len(res)-1]
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
	case a.err != nil:
		return fmt.Errorf("%w: WAIT %d %d failed: %w", report.ErrReplication, a.want, timeout.Milliseconds(), a.err)
	case a.want == 0:
		return nil
	case a.got == 0 || (!r.Cfg.ReplicaSync && a.got < a.want):
		return fmt.Errorf("%w: %d of %d replicas acknowledged within %v", report.ErrReplication, a.got, a.want, timeout)
	}
	return nil
}
