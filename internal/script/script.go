// Package script runs the embedded scripts of package lua for the engine:
// one accessor per script, EVALSHA with the EVAL fallback, and the
// constants the scripts and their callers share.
package script

import (
	"context"
	"slices"
	"strings"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/lua"
)

// Script is one of package lua's scripts, with the engine's ways to run it.
type Script struct{ *lua.Script }

// all holds the scripts the engine has accessors for, in declaration order.
var all []*Script

// load returns the script in name.lua. A missing file is a programming
// error caught by every test run, so it panics.
func load(name string) *Script {
	s, ok := lua.Lookup(name)
	if !ok {
		panic("script: no script " + name + ".lua")
	}
	w := &Script{s}
	all = append(all, w)
	return w
}

// All lists every script the engine runs.
func All() []*Script { return slices.Clone(all) }

// EvalSHA builds an EVALSHA command for use in a pipeline (DoMulti). The
// caller handles a NOSCRIPT reply, for example by sending Eval instead.
func (s *Script) EvalSHA(c rueidis.Client, keys, args []string) rueidis.Completed {
	return s.retryable(c.B().Evalsha().Sha1(s.SHA1()).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build())
}

// Eval builds an EVAL command that carries the whole script.
func (s *Script) Eval(c rueidis.Client, keys, args []string) rueidis.Completed {
	return s.retryable(c.B().Eval().Script(s.Source()).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build())
}

// retryable marks cmd retryable when the script is idempotent, and then
// pins it (Resendable).
func (s *Script) retryable(cmd rueidis.Completed) rueidis.Completed {
	if !s.Retryable() {
		return cmd
	}
	return Resendable(cmd.ToRetryable())
}

// Resendable pins a command that rueidis may resend: a retryable script or
// any read-only command (rueidis retries those by itself). When a
// connection fails while such a command is being written, rueidis can fail
// it, resend it on another connection and, once that succeeds, recycle it
// while the failed connection's writer still reads it: a data race the race
// detector reports. A pinned command is never recycled; the garbage
// collector takes it. Library code builds every such command through here.
func Resendable(cmd rueidis.Completed) rueidis.Completed { return cmd.Pin() }

// Exec runs the script: EVALSHA first, then EVAL if the server answered
// NOSCRIPT. All keys must be in one cluster slot.
func (s *Script) Exec(ctx context.Context, c rueidis.Client, keys, args []string) rueidis.RedisResult {
	res := c.Do(ctx, s.EvalSHA(c, keys, args))
	if IsNoScript(res.Error()) {
		res = c.Do(ctx, s.Eval(c, keys, args))
	}
	return res
}

// IsNoScript reports whether err is Redis's NOSCRIPT error.
func IsNoScript(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	return ok && re.IsNoScript()
}

// IsUnknownCommand reports whether err is the server's refusal of a command
// or subcommand it does not know, as Redis 6.x answers those added later
// ("ERR unknown command", "ERR Unknown subcommand").
func IsUnknownCommand(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	if !ok {
		return false
	}
	// rueidis keeps or drops the "ERR " prefix depending on the reply's form.
	msg := strings.TrimPrefix(strings.ToLower(re.Error()), "err ")
	return strings.HasPrefix(msg, "unknown command") || strings.HasPrefix(msg, "unknown subcommand")
}
