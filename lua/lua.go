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
	"embed"
	"encoding/hex"
	"slices"

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

//go:embed *.lua
var files embed.FS

// all holds every script, in the order they were declared.
var all []*Script

// load returns the script in name.lua. A missing file is a programming
// error caught by every test run, so it panics.
func load(name string, retryable bool) *Script {
	src, err := files.ReadFile(name + ".lua")
	if err != nil {
		panic("lua: no script " + name + ".lua")
	}
	s := newScript(name, string(src), retryable)
	all = append(all, s)
	return s
}

// All lists every script, for tests and for preloading.
func All() []*Script { return slices.Clone(all) }

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
