// Package script runs the embedded scripts of package lua for the engine:
// one accessor per script, EVALSHA with the EVAL fallback, and the
// constants the scripts and their callers share.
package script

import (
	"context"
	"slices"
	"strconv"
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

// EvalSHAOrdered is EvalSHA for a client that is not a cluster client,
// built to go on the connection of Ordered.
func (s *Script) EvalSHAOrdered(c rueidis.Client, keys, args []string) rueidis.Completed {
	return s.retryable(ordered(c, "EVALSHA", s.SHA1(), keys, args))
}

// EvalOrdered is Eval, built to go on the connection of Ordered.
func (s *Script) EvalOrdered(c rueidis.Client, keys, args []string) rueidis.Completed {
	return s.retryable(ordered(c, "EVAL", s.Source(), keys, args))
}

// Ordered builds a command for a client that is not a cluster client, to
// go on one connection with every other command built so: rueidis writes
// a connection's commands in the order they were called, so that such a
// command, given up on by its caller while still queued, still runs before
// any such command called later (a take-back of what it may do).
//
// rueidis spreads commands over its connections to a server at random,
// unless a command names no key slot: those all go on its first
// connection. So the keys are sent as plain arguments, which outside a
// cluster route nothing, and the command is marked for the pipeline, so
// that a client without auto-pipelining sends it there too.
// TestOrderedOnOneConnection holds rueidis to this.
func Ordered(c rueidis.Client, cmd string, keys []string) rueidis.Completed {
	return c.B().Arbitrary(cmd).Args(keys...).Build().ToPipe()
}

// ordered builds cmd (EVAL or EVALSHA) with body, keys and args as Ordered
// does.
func ordered(c rueidis.Client, cmd, body string, keys, args []string) rueidis.Completed {
	return c.B().Arbitrary(cmd, body, strconv.Itoa(len(keys))).Args(keys...).Args(args...).Build().ToPipe()
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
