package inspect

import (
	"errors"
	"strings"

	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
	"github.com/interlock-go/interlock/cmd/interlock/internal/redisconn"
)

// CommandLine returns the inspect command that shows keys (names with any
// --name-prefix already applied), for messages that tell the user how to
// look: with the --redis given to the command, --kind hint unless it is
// "", and each key quoted for a shell when it needs to be.
func CommandLine(redis *redisconn.Flag, hint string, keys ...string) string {
	args := []string{"interlock", "inspect"}
	if a := redis.Arg(); a != "" {
		args = append(args, a)
	}
	if hint != "" {
		args = append(args, "--kind", hint)
	}
	for _, k := range keys {
		args = append(args, cli.ShellQuote(k))
	}
	return strings.Join(args, " ")
}

// Refusal returns the error that ends the command cmd when Check said err
// about a key: a *Misfit ends interlock with exit.Usage, saying that
// nothing was changed and how to look (look, a CommandLine); any other
// error, a failed read, is exit.Failed's.
func Refusal(cmd string, err error, look string) error {
	if m, ok := errors.AsType[*Misfit](err); ok {
		return exit.Errorf(exit.Usage, "%s: %v; nothing was changed (see '%s')", cmd, m, look)
	}
	return exit.Failed(cmd, err)
}
