package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
)

// FlagSet is a command's flag set: a flag.FlagSet that reports errors
// instead of printing them, and knows the command's help for -h.
type FlagSet struct {
	*flag.FlagSet
	help string
}

// NewFlagSet returns the flag set of the command name, whose help is
// help.
func NewFlagSet(name, help string) *FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &FlagSet{FlagSet: fs, help: help}
}

// ParseArgs parses args, with flags before, between or after the positional
// arguments it returns ("--" ends the flags). -h and --help print the help
// on io.Out and return an error that ends interlock with status 0, quietly.
func (fs *FlagSet) ParseArgs(io Stdio, args []string) ([]string, error) {
	// The flag package alone stops at the first positional argument: parse
	// again after each one.
	var positional []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(io.Out, fs.help)
			return nil, errHelp
		}
		if err != nil {
			return nil, Usagef(fs.Name(), "%v", err)
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

// ParseCommand parses the arguments of a command that runs CMD: flags and
// what (the positional arguments, "LOCK" or "NAME"), then "--", then CMD
// and its arguments. It refuses a missing "--", no what before it and no
// CMD after it.
func (fs *FlagSet) ParseCommand(io Stdio, args []string, what string) (positional, argv []string, err error) {
	head, hasSep := args, false
	if i := slices.Index(args, "--"); i >= 0 {
		head, argv, hasSep = args[:i], args[i+1:], true
	}
	if positional, err = fs.ParseArgs(io, head); err != nil {
		return nil, nil, err
	}
	switch {
	case !hasSep:
		return nil, nil, Usagef(fs.Name(), "missing \"--\" between %s and CMD", what)
	case len(positional) == 0:
		return nil, nil, Usagef(fs.Name(), "no %s before \"--\"", what)
	case len(argv) == 0:
		return nil, nil, Usagef(fs.Name(), "no CMD after \"--\"")
	}
	return positional, argv, nil
}

// errHelp is returned by ParseArgs after printing help: the command ends
// with status 0 and prints nothing else.
var errHelp error = &exit.Error{Code: exit.OK}

// ParseNumbers is ParseArgs for commands whose arguments may be negative
// integers, such as "semaphore add NAME -2": such an argument is
// positional, never a flag, unless it follows a flag that takes a value.
func (fs *FlagSet) ParseNumbers(io Stdio, args []string) ([]string, error) {
	var positional, seg []string
	flush := func() error {
		p, err := fs.ParseArgs(io, seg)
		positional, seg = append(positional, p...), nil
		return err
	}
	for i, a := range args {
		if a == "--" {
			seg = append(seg, args[i:]...)
			break
		}
		if _, err := strconv.Atoi(a); err == nil && strings.HasPrefix(a, "-") && !fs.takesValue(seg) {
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
func (fs *FlagSet) takesValue(args []string) bool {
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

// DurationFlag is a non-negative duration flag that remembers whether it
// was given, so that "not given" can mean something no duration can
// (run's --wait: wait forever).
type DurationFlag struct {
	// D is the duration given, or the default.
	D time.Duration
	// Given reports whether the flag was given.
	Given bool
	// Unset is what String shows when the flag was not given ("0s" when
	// empty).
	Unset string
}

// String returns the duration, or the text for "not given".
func (f *DurationFlag) String() string {
	if f == nil || !f.Given {
		if f != nil && f.Unset != "" {
			return f.Unset
		}
		return "0s"
	}
	return f.D.String()
}

// Set parses a duration such as "500ms" and rejects negative ones.
func (f *DurationFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("not a duration (examples: 500ms, 10s, 2m)")
	}
	if d < 0 {
		return errors.New("must not be negative")
	}
	f.D, f.Given = d, true
	return nil
}

// CountFlag is an integer flag that remembers whether it was given, so
// that a flag that does not apply can be refused. Its range is checked by
// the command, which knows what the number counts.
type CountFlag struct {
	// N is the number given, or the default.
	N int
	// Given reports whether the flag was given.
	Given bool
}

// String returns the number.
func (f *CountFlag) String() string {
	if f == nil {
		return "0"
	}
	return strconv.Itoa(f.N)
}

// Set parses a decimal integer.
func (f *CountFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("not an integer")
	}
	f.N, f.Given = n, true
	return nil
}

// AddNamePrefixFlag defines --name-prefix on fs: the prefix a Java fleet's
// NameMapper puts before every name (interlock.PrefixNames).
func AddNamePrefixFlag(fs *flag.FlagSet) *string {
	return fs.String("name-prefix", "", "prefix of every name in Redis")
}

// NamePrefixHelp describes --name-prefix in the help of the commands that
// have it.
const NamePrefixHelp = `  --name-prefix P    every name is P+NAME in Redis, for a Java fleet whose
                     NameMapper puts P before its names.
`
