package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
)

// durationFlag is a non-negative duration flag that remembers whether it
// was given, so that "not given" can mean something no duration can
// (run's --wait: wait forever).
type durationFlag struct {
	d     time.Duration
	set   bool
	unset string // what String shows when the flag was not given
}

// String returns the duration, or the text for "not given".
func (f *durationFlag) String() string {
	if f == nil || !f.set {
		if f != nil && f.unset != "" {
			return f.unset
		}
		return "0s"
	}
	return f.d.String()
}

// Set parses a duration such as "500ms" and rejects negative ones.
func (f *durationFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("not a duration (examples: 500ms, 10s, 2m)")
	}
	if d < 0 {
		return errors.New("must not be negative")
	}
	f.d, f.set = d, true
	return nil
}

// redisFlag collects --redis URLs: the flag may be repeated and each value
// may hold several comma-separated URLs. The first use replaces the
// default.
type redisFlag struct {
	urls []string
	set  bool
}

// String returns the URLs, comma-separated.
func (f *redisFlag) String() string {
	if f == nil {
		return ""
	}
	return strings.Join(f.urls, ",")
}

// Set adds the comma-separated URLs in s.
func (f *redisFlag) Set(s string) error {
	if !f.set {
		f.urls, f.set = nil, true
	}
	for u := range strings.SplitSeq(s, ",") {
		if u = strings.TrimSpace(u); u != "" {
			f.urls = append(f.urls, u)
		}
	}
	if len(f.urls) == 0 {
		return errors.New("no URL given")
	}
	return nil
}

// defaultRedisURL is used when neither --redis nor INTERLOCK_REDIS is set.
const defaultRedisURL = "redis://127.0.0.1:6379"

// envRedis names the environment variable that replaces defaultRedisURL.
const envRedis = "INTERLOCK_REDIS"

// addRedisFlag defines --redis on fs, defaulting to $INTERLOCK_REDIS or
// defaultRedisURL.
func addRedisFlag(fs *flag.FlagSet, getenv func(string) string) *redisFlag {
	f := &redisFlag{urls: []string{defaultRedisURL}}
	if env := getenv(envRedis); strings.TrimSpace(env) != "" {
		_ = f.Set(env)
		f.set = false // an explicit --redis still replaces it
	}
	fs.Var(f, "redis", "Redis URL(s)")
	return f
}

// addNamePrefixFlag defines --name-prefix on fs: the prefix a Java fleet's
// NameMapper puts before every name (interlock.PrefixNames).
func addNamePrefixFlag(fs *flag.FlagSet) *string {
	return fs.String("name-prefix", "", "prefix of every name in Redis")
}

// newFlagSet returns a FlagSet for the named command that reports errors
// instead of printing them (the caller prints one line and a pointer to
// the help).
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args with fs, allowing flags before, between and after
// positional arguments (the flag package alone stops at the first
// positional one), and returns the positional arguments. "--" ends the
// flags; what follows it is positional. -h and --help print the command's
// help on io.out and return errHelp.
func parseFlags(fs *flag.FlagSet, io stdio, args []string) ([]string, error) {
	var positional []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(io.out, commandUsage[fs.Name()])
			return nil, errHelp
		}
		if err != nil {
			return nil, usageErrorf(fs.Name(), "%v", err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		// fs.Parse removed a "--" that ended the flags: all the rest is
		// positional.
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// errHelp is returned by parseFlags after printing help: the command ends
// with status 0 and prints nothing else.
var errHelp error = &exit.Error{Code: exit.OK}

// countFlag is an integer flag that remembers whether it was given, so
// that a flag that does not apply can be refused. Its range is checked by
// the command, which knows what the number counts.
type countFlag struct {
	n   int
	set bool
}

// String returns the number.
func (f *countFlag) String() string {
	if f == nil {
		return "0"
	}
	return strconv.Itoa(f.n)
}

// Set parses a decimal integer.
func (f *countFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("not an integer")
	}
	f.n, f.set = n, true
	return nil
}

// parseFlagsNumbers is parseFlags for commands whose arguments may be
// negative integers, such as "semaphore add NAME -2": such an argument is
// positional, never a flag, unless it follows a flag that takes a value.
func parseFlagsNumbers(fs *flag.FlagSet, io stdio, args []string) ([]string, error) {
	var positional, seg []string
	flush := func() error {
		p, err := parseFlags(fs, io, seg)
		positional, seg = append(positional, p...), nil
		return err
	}
	for i, a := range args {
		if a == "--" {
			seg = append(seg, args[i:]...)
			break
		}
		if _, err := strconv.Atoi(a); err == nil && strings.HasPrefix(a, "-") && !takesValue(fs, seg) {
			if err := flush(); err != nil {
				return nil, err
			}
			positional = append(positional, a)
			continue
		}
		seg = append(seg, a)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return positional, nil
}

// takesValue reports whether the last of args is a flag of fs that needs
// a value after it: a non-boolean flag written without "=".
func takesValue(fs *flag.FlagSet, args []string) bool {
	if len(args) == 0 {
		return false
	}
	name, ok := strings.CutPrefix(args[len(args)-1], "-")
	if !ok || strings.Contains(name, "=") {
		return false
	}
	f := fs.Lookup(strings.TrimPrefix(name, "-"))
	if f == nil {
		return false
	}
	b, isBool := f.Value.(interface{ IsBoolFlag() bool })
	return !isBool || !b.IsBoolFlag()
}
