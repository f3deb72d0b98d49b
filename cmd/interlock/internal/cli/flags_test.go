package cli

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
)

func TestParseArgsInterleaved(t *testing.T) {
	t.Parallel()
	fs := NewFlagSet("inspect", "")
	j := fs.Bool("json", false, "")
	pos, err := fs.ParseArgs(Stdio{}, []string{"a", "--json", "b", "--", "--json"})
	require.NoError(t, err)
	assert.True(t, *j)
	assert.Equal(t, []string{"a", "b", "--json"}, pos)
}

// A negative number is an argument, unless it is a flag's value.
func TestParseNumbers(t *testing.T) {
	t.Parallel()
	fs := NewFlagSet("semaphore", "")
	ttl := &DurationFlag{}
	fs.Var(ttl, "ttl", "")
	n := &CountFlag{}
	fs.Var(n, "n", "")
	pos, err := fs.ParseNumbers(Stdio{}, []string{"add", "S", "-2", "--n", "-3", "--ttl=1s"})
	require.NoError(t, err)
	assert.Equal(t, []string{"add", "S", "-2"}, pos)
	assert.Equal(t, CountFlag{N: -3, Given: true}, *n)
	assert.True(t, ttl.Given)
}

// -h prints the command's help and ends it with status 0, quietly; a bad
// flag is a usage error that points to the help.
func TestParseArgsHelpAndErrors(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	_, err := NewFlagSet("demo", "the help\n").ParseArgs(Stdio{Out: &out}, []string{"-h"})
	assert.Equal(t, "the help\n", out.String())
	var stderr bytes.Buffer
	assert.Equal(t, exit.OK, exit.Report(&stderr, err))
	assert.Empty(t, stderr.String())

	_, err = NewFlagSet("demo", "").ParseArgs(Stdio{}, []string{"--nope"})
	assert.Equal(t, exit.Usage, exit.Code(err))
	assert.Equal(t, "demo: flag provided but not defined: -nope (see 'interlock help demo')", err.Error())
}

func TestPlural(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "1 key", Plural(1, "key"))
	assert.Equal(t, "0 keys", Plural(0, "key"))
	assert.Equal(t, "2 holder processes", Plural(2, "holder process"))
}

// Long names are cut for tables, to at most MaxShown bytes, with their
// length, never in the middle of a character.
func TestShort(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "orders:42", Short("orders:42"))
	exact := strings.Repeat("a", MaxShown)
	assert.Equal(t, exact, Short(exact))
	long := Short(strings.Repeat("a", 122880))
	assert.Equal(t, strings.Repeat("a", MaxShown-len("…(122880 bytes)"))+"…(122880 bytes)", long)
	assert.LessOrEqual(t, len(long), MaxShown)
	wide := Short(strings.Repeat("é", 100))
	assert.True(t, utf8.ValidString(wide), wide)
	assert.True(t, strings.HasSuffix(wide, "…(200 bytes)"), wide)
}

func TestShellQuote(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "orders:42", ShellQuote("orders:42"))
	assert.Equal(t, "'{orders}:42'", ShellQuote("{orders}:42"), "braces expand in bash")
	assert.Equal(t, `'it'\''s'`, ShellQuote("it's"))
	assert.Equal(t, "''", ShellQuote(""))
}
