package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/lua"
)

// Acks is the WAIT answer to the last script Exec ran for it in safe mode
// (interlock.WithReplicaAcks).
type Acks struct {
	ran bool
	got int64
	err error
}

// Exec runs one acquire or unlock script: EVALSHA, then EVAL after
// NOSCRIPT. In safe mode the script is pipelined with WAIT, and a records
// the answer. rueidis sends a DoMulti holding a blocking command (WAIT is
// one) on one dedicated connection, and a cluster client sends the keyless
// WAIT to the script's node, so the WAIT counts the replicas that have
// this script's writes.
func (r *Runtime) Exec(ctx context.Context, a *Acks, s *lua.Script, keys, args []string) rueidis.RedisResult {
	if r.Cfg.ReplicaAcks == 0 {
		return s.Exec(ctx, r.RC, keys, args)
	}
	res := r.RC.DoMulti(ctx, s.EvalSHA(r.RC, keys, args), r.waitCmd())
	if lua.IsNoScript(res[0].Error()) {
		res = r.RC.DoMulti(ctx, s.Eval(r.RC, keys, args), r.waitCmd())
	}
	a.ran = true
	a.got, a.err = res[1].AsInt64()
	return res[0]
}

func (r *Runtime) waitCmd() rueidis.Completed {
	return r.RC.B().Wait().Numreplicas(int64(r.Cfg.ReplicaAcks)).Timeout(r.Cfg.ReplicaTimeout.Milliseconds()).Build()
}

// CheckAcks returns an error wrapping Config.ErrReplication when the last
// script a recorded ran in safe mode and fewer replicas than wanted
// acknowledged it, or the WAIT failed; a context error is returned as is.
func (r *Runtime) CheckAcks(a *Acks) error {
	want, timeout := r.Cfg.ReplicaAcks, r.Cfg.ReplicaTimeout
	switch {
	case want == 0 || !a.ran:
		return nil
	case errors.Is(a.err, context.Canceled) || errors.Is(a.err, context.DeadlineExceeded):
		return a.err
	case a.err != nil:
		return fmt.Errorf("%w: WAIT %d %d failed: %w", r.Cfg.ErrReplication, want, timeout.Milliseconds(), a.err)
	case a.got < int64(want):
		return fmt.Errorf("%w: %d of %d replicas acknowledged within %v", r.Cfg.ErrReplication, a.got, want, timeout)
	}
	return nil
}
