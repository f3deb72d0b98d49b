// Package cli is what every interlock command is written against: the
// command itself (Command, Stdio), its flags and their parsing (FlagSet),
// and the shape of its usage errors and messages.
package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
)

// Stdio is where a command reads and writes. run hands the files to CMD
// as they are, so In is an *os.File rather than an io.Reader: the child
// then shares it and no copying goroutine is needed.
type Stdio struct {
	// In is standard input.
	In *os.File
	// Out and Err are standard output and standard error.
	Out, Err io.Writer
	// Getenv reads the environment (INTERLOCK_REDIS); tests replace it.
	Getenv func(string) string
}

// Command is one subcommand of interlock, such as "run".
type Command struct {
	// Name is the word that selects the command after "interlock".
	Name string
	// Usage is the command's help, printed by "interlock help NAME" and
	// by its -h flag.
	Usage string
	// Run parses args (everything after the name) and does the work. Its
	// error decides the exit code and what is printed on stderr
	// (exit.Report).
	Run func(ctx context.Context, io Stdio, args []string) error
	// Hidden leaves the command out of the help: it is for interlock's
	// own use.
	Hidden bool
}

// Usagef returns a usage error (exit.Usage) of the command cmd ("" for
// interlock itself) whose message points to the command's help.
func Usagef(cmd, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	help := "interlock help"
	if cmd != "" {
		msg = cmd + ": " + msg
		help += " " + cmd
	}
	return exit.Errorf(exit.Usage, "%s (see '%s')", msg, help)
}

// Plural returns "1 key", "2 keys", "2 holder processes" and so on: n
// things called noun, as every message counts them.
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "s") {
		return fmt.Sprintf("%d %ses", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// MaxShown is the longest name (in bytes) a table shows whole.
const MaxShown = 64

// Short returns s for a table cell: s itself when it is at most MaxShown
// bytes long, else its start, an ellipsis and its length, such as
// "orders:2024:aaaa…(122880 bytes)". JSON keeps names whole.
func Short(s string) string {
	if len(s) <= MaxShown {
		return s
	}
	suffix := fmt.Sprintf("…(%d bytes)", len(s))
	cut := MaxShown - len(suffix)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut-- // never split a character
	}
	return s[:cut] + suffix
}

// ShellQuote returns s as one word of a POSIX shell command line: as it
// is when that is safe, else in single quotes.
func ShellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("_-.:/@%+=", r):
		default:
			safe = false
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
