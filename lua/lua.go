// Package lua holds interlock's Redis scripts, one .lua file each, and runs
// them with EVALSHA, falling back to EVAL when the server does not have the
// script cached (after a restart, failover or SCRIPT FLUSH).
//
// Every file starts with a header that gives its KEYS, ARGV, return values
// and the Redisson versions whose semantics it matches. The Lua text is our
// own; what must match Redisson is the effect on keys, fields, TTLs and
// channels, which compat_test checks.
//
// Only scripts that are idempotent are marked retryable, so that rueidis
// may resend them after a connection error. Acquire and unlock increment
// and decrement hold counts, so a resend could count twice: they are never
// resent automatically.
package lua

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"

	"github.com/redis/rueidis"
)

// Script is one embedded Lua script.
type Script struct {
	name      string
	source    string
	sha1      string
	retryable bool
}

func newScript(name, source string, retryable bool) *Script {
	sum := sha1.Sum([]byte(source))
	return &Script{name: name, source: source, sha1: hex.EncodeToString(sum[:]), retryable: retryable}
}

var (
	//go:embed acquire.lua
	acquireSrc string
	//go:embed unlock.lua
	unlockSrc string
	//go:embed force_unlock.lua
	forceUnlockSrc string
	//go:embed renew.lua
	renewSrc string
	//go:embed undo_acquire.lua
	undoAcquireSrc string
)

// The scripts of the reentrant lock and of the watchdog.
var (
	Acquire     = newScript("acquire", acquireSrc, false)
	Unlock      = newScript("unlock", unlockSrc, false)
	ForceUnlock = newScript("force_unlock", forceUnlockSrc, true)
	Renew       = newScript("renew", renewSrc, true)
	UndoAcquire = newScript("undo_acquire", undoAcquireSrc, false)
)

// All lists every script, for tests and for preloading.
func All() []*Script {
	return []*Script{Acquire, Unlock, ForceUnlock, Renew, UndoAcquire}
}

// Name is the script's file name without ".lua".
func (s *Script) Name() string { return s.name }

// Source is the Lua text.
func (s *Script) Source() string { return s.source }

// SHA1 is the lower-case hex SHA-1 of the Lua text, as SCRIPT LOAD returns it.
func (s *Script) SHA1() string { return s.sha1 }

// Retryable reports whether the script is idempotent, so that rueidis may
// resend it after a connection error.
func (s *Script) Retryable() bool { return s.retryable }

// EvalSHA builds an EVALSHA command for use in a pipeline (DoMulti). The
// caller handles a NOSCRIPT reply, for example by sending Eval instead.
func (s *Script) EvalSHA(c rueidis.Client, keys, args []string) rueidis.Completed {
	cmd := c.B().Evalsha().Sha1(s.sha1).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	if s.retryable {
		cmd = cmd.ToRetryable()
	}
	return cmd
}

// Eval builds an EVAL command that carries the whole script.
func (s *Script) Eval(c rueidis.Client, keys, args []string) rueidis.Completed {
	cmd := c.B().Eval().Script(s.source).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	if s.retryable {
		cmd = cmd.ToRetryable()
	}
	return cmd
}

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
