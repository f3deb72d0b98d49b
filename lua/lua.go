// Package lua holds interlock's Redis scripts, one .lua file each, embedded
// in the library, which runs them with EVALSHA and falls back to EVAL when
// the server does not have a script cached (after a restart, failover or
// SCRIPT FLUSH).
//
// The package is for operators who audit what interlock runs on their
// servers, or pre-load it: All lists every script with its SHA1, as SCRIPT
// LOAD computes it and as EVALSHA names it in MONITOR, the slow log and ACL
// logs; Preload loads them all on every node of a client, so that no call
// falls back to EVAL. A restart or SCRIPT FLUSH empties a server's script
// cache: preload again after one.
//
// Every file starts with a header that gives its KEYS, ARGV, return values
// and the Redisson versions whose semantics it matches. The Lua text is our
// own; what must match Redisson is the effect on keys, fields, TTLs and
// channels.
//
// Only idempotent scripts are sent as retryable, so that rueidis may resend
// them after a connection error. Acquire and unlock scripts increment and
// decrement hold counts, so a resend could count twice: they are never
// resent automatically.
package lua

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/redis/rueidis"
)

// Script is one embedded Lua script.
type Script struct {
	name      string
	source    string
	sha1      string
	retryable bool
}

//go:embed *.lua
var files embed.FS

// idempotent names the scripts whose resend changes nothing: reads,
// renewals, force unlocks, and the scripts that take a receipt, with which
// a resend is recognised and answered as the first send was.
var idempotent = map[string]bool{
	"fair_acquire_failed": true, "fair_force_unlock": true,
	"keep":             true,
	"latch_count_down": true,
	"leader_read":      true, "leader_renew": true,
	"pes_acquire": true, "pes_acquired": true, "pes_add": true, "pes_available": true,
	"pes_lease": true, "pes_permits": true, "pes_release": true, "pes_release_one": true,
	"pes_renew": true, "pes_set_permits": true, "pes_undo_acquire": true, "pes_update_lease": true,
	"renew":      true,
	"rl_acquire": true, "rl_available": true, "rl_undo_acquire": true,
	"rw_extend_read": true, "rw_force_unlock": true, "rw_read_is_locked": true, "rw_renew_read": true,
	"sem_acquire": true, "sem_add": true, "sem_release": true, "sem_release_if_exists": true,
	"sem_undo_acquire": true,
}

// all holds every script, by name.
var all = func() []*Script {
	names, err := fs.Glob(files, "*.lua")
	if err != nil {
		panic("lua: " + err.Error())
	}
	out := make([]*Script, 0, len(names))
	for _, f := range names {
		src, err := files.ReadFile(f)
		if err != nil {
			panic("lua: " + err.Error())
		}
		name := strings.TrimSuffix(f, ".lua")
		sum := sha1.Sum(src)
		out = append(out, &Script{name: name, source: string(src), sha1: hex.EncodeToString(sum[:]), retryable: idempotent[name]})
	}
	return out
}()

// All lists every script, sorted by name.
func All() []*Script { return slices.Clone(all) }

// Lookup returns the script in name.lua ("acquire" for acquire.lua).
func Lookup(name string) (*Script, bool) {
	i, ok := slices.BinarySearchFunc(all, name, func(s *Script, n string) int { return strings.Compare(s.name, n) })
	if !ok {
		return nil, false
	}
	return all[i], true
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

// Preload sends SCRIPT LOAD for every script to every node of c (those
// rueidis's Client.Nodes lists), so that EVALSHA finds them cached. It
// stops at the first failure, which names the node and the script.
func Preload(ctx context.Context, c rueidis.Client) error {
	if c == nil {
		return fmt.Errorf("lua: Preload: nil client")
	}
	for addr, node := range c.Nodes() {
		for _, s := range all {
			sha, err := node.Do(ctx, node.B().ScriptLoad().Script(s.source).Build()).ToString()
			if err != nil {
				return fmt.Errorf("lua: SCRIPT LOAD %s on %s: %w", s.name, addr, err)
			}
			if sha != s.sha1 {
				return fmt.Errorf("lua: SCRIPT LOAD %s on %s answered %s, want %s", s.name, addr, sha, s.sha1)
			}
		}
	}
	return nil
}
