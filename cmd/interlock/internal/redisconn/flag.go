package redisconn

import (
	"errors"
	"flag"
	"strings"
)

// DefaultURL is used when neither --redis nor INTERLOCK_REDIS is set.
const DefaultURL = "redis://127.0.0.1:6379"

// EnvVar names the environment variable that replaces DefaultURL.
const EnvVar = "INTERLOCK_REDIS"

// FlagHelp describes --redis; every command that talks to Redis has it.
const FlagHelp = `  --redis URL        Redis to use: redis://[user:password@]host:port[/db],
                     rediss://... (TLS), unix:///path/to/redis.sock, or plain
                     host:port. Repeat the flag, or separate URLs with commas,
                     to name several nodes of one Redis Cluster. The default
                     is $INTERLOCK_REDIS, else redis://127.0.0.1:6379.
`

// Flag collects --redis URLs: the flag may be repeated and each value may
// hold several comma-separated URLs. The first use replaces the default.
type Flag struct {
	// URLs are the URLs given, or the default's.
	URLs []string
	// Given reports whether --redis was given.
	Given bool
}

// String returns the URLs, comma-separated.
func (f *Flag) String() string {
	if f == nil {
		return ""
	}
	return strings.Join(f.URLs, ",")
}

// Arg returns the flag as a command line shows it, "--redis URL,..."
// with any password hidden, or "" when it was not given: a command
// suggested to the user then finds the same Redis ($INTERLOCK_REDIS
// still applies).
func (f *Flag) Arg() string {
	if f == nil || !f.Given {
		return ""
	}
	shown := make([]string, len(f.URLs))
	for i, u := range f.URLs {
		shown[i] = redactURL(u)
	}
	return "--redis " + strings.Join(shown, ",")
}

// Set adds the comma-separated URLs in s.
func (f *Flag) Set(s string) error {
	if !f.Given {
		f.URLs, f.Given = nil, true
	}
	for u := range strings.SplitSeq(s, ",") {
		if u = strings.TrimSpace(u); u != "" {
			f.URLs = append(f.URLs, u)
		}
	}
	if len(f.URLs) == 0 {
		return errors.New("no URL given")
	}
	return nil
}

// AddFlag defines --redis on fs, defaulting to $INTERLOCK_REDIS (read
// with getenv) or DefaultURL.
func AddFlag(fs *flag.FlagSet, getenv func(string) string) *Flag {
	f := &Flag{URLs: []string{DefaultURL}}
	if env := getenv(EnvVar); strings.TrimSpace(env) != "" {
		_ = f.Set(env)
		f.Given = false // an explicit --redis still replaces it
	}
	fs.Var(f, "redis", "Redis URL(s)")
	return f
}
