package faultproxy

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"
)

// EvalSHA returns a predicate for DropReplyTo and DelayReplyTo that
// matches the runs of one Lua script: EVALSHA or EVALSHA_RO naming sha
// (in any case), and EVAL or EVAL_RO of a script whose SHA-1 is sha.
func EvalSHA(sha string) func(cmd []string) bool {
	sha = strings.ToLower(sha)
	return func(cmd []string) bool {
		if len(cmd) < 2 {
			return false
		}
		switch {
		case strings.EqualFold(cmd[0], "EVALSHA"), strings.EqualFold(cmd[0], "EVALSHA_RO"):
			return strings.EqualFold(cmd[1], sha)
		case strings.EqualFold(cmd[0], "EVAL"), strings.EqualFold(cmd[0], "EVAL_RO"):
			sum := sha1.Sum([]byte(cmd[1]))
			return hex.EncodeToString(sum[:]) == sha
		}
		return false
	}
}

// Command returns a predicate that matches the commands named, in any
// case, for example Command("PEXPIRE", "PUBLISH").
func Command(names ...string) func(cmd []string) bool {
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[strings.ToUpper(n)] = true
	}
	return func(cmd []string) bool {
		return len(cmd) > 0 && want[strings.ToUpper(cmd[0])]
	}
}
