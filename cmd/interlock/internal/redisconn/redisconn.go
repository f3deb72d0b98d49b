// Package redisconn turns interlock's --redis flag into a connection: the
// flag itself, the rueidis options its URLs stand for, and the rueidis and
// interlock clients every command that talks to Redis opens.
package redisconn

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/cmd/interlock/internal/exit"
)

// Options turns --redis URLs into rueidis options; a URL without a scheme
// is redis://. Several URLs name nodes of one cluster: all their addresses
// seed it, and they must agree on TLS, credentials and database.
func Options(urls []string) (rueidis.ClientOption, error) {
	var opt rueidis.ClientOption
	for i, u := range urls {
		if !strings.Contains(u, "://") {
			u = "redis://" + u
		}
		o, err := rueidis.ParseURL(u)
		if err != nil {
			return opt, fmt.Errorf("--redis %s: %w", redactURL(u), err)
		}
		if i == 0 {
			opt = o
			continue
		}
		if o.DialCtxFn != nil || opt.DialCtxFn != nil {
			return opt, fmt.Errorf("--redis %s: a unix socket cannot be combined with other addresses", redactURL(u))
		}
		if (o.TLSConfig == nil) != (opt.TLSConfig == nil) || o.Username != opt.Username ||
			o.Password != opt.Password || o.SelectDB != opt.SelectDB {
			return opt, fmt.Errorf("--redis %s: all URLs of a cluster must use the same scheme, credentials and database", redactURL(u))
		}
		for _, a := range o.InitAddress {
			if !slices.Contains(opt.InitAddress, a) {
				opt.InitAddress = append(opt.InitAddress, a)
			}
		}
	}
	if len(opt.InitAddress) == 0 {
		return opt, fmt.Errorf("--redis: no address given")
	}
	return opt, nil
}

// redactURL hides the password of a URL given on the command line, so that
// error messages never show it.
func redactURL(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return u
	}
	at := strings.LastIndex(rest, "@")
	if slash := strings.Index(rest, "/"); slash >= 0 && slash < at {
		at = -1 // an "@" in the path, not in the authority
	}
	if at < 0 {
		return u
	}
	user, _, hasPassword := strings.Cut(rest[:at], ":")
	if !hasPassword {
		return u
	}
	return scheme + "://" + user + ":xxxxx" + rest[at:]
}

// IsErrorReply reports whether err is an error reply from Redis (such as
// WRONGTYPE or NOPERM) rather than a failure to talk to it.
func IsErrorReply(err error) bool {
	_, ok := rueidis.IsRedisErr(err)
	return ok
}

// ConnectFailed returns the error of a failed connection to addrs:
// exit.Unavailable, with a hint when the server wants a password (NOAUTH)
// or refused the one given (WRONGPASS).
func ConnectFailed(addrs []string, err error) error {
	at := strings.Join(addrs, ",")
	if hint := authHint(err); hint != "" {
		return exit.Errorf(exit.Unavailable, "cannot connect to Redis at %s: %s (%w)", at, hint, err)
	}
	return exit.Errorf(exit.Unavailable, "cannot connect to Redis at %s: %w", at, err)
}

// authHint says how to pass a password when err is Redis refusing a
// connection for the lack of one, or for a wrong one; else "".
func authHint(err error) string {
	re, ok := errors.AsType[*rueidis.RedisError](err)
	if !ok {
		return ""
	}
	switch msg := re.Error(); {
	case strings.HasPrefix(msg, "NOAUTH"):
		return "the server wants a password: give it in the URL, --redis redis://:PASSWORD@host:port " +
			"(redis://USER:PASSWORD@host:port for an ACL user), or in $" + EnvVar
	case strings.HasPrefix(msg, "WRONGPASS"):
		return "the server refused the user or password given: check them in --redis " +
			"redis://[USER]:PASSWORD@host:port, or in $" + EnvVar
	}
	return ""
}

// Conn is an open connection to Redis: the rueidis client and the
// interlock Client on top of it.
type Conn struct {
	// Redis is the rueidis client.
	Redis rueidis.Client
	// Client is the interlock Client on Redis.
	Client *interlock.Client
}

// Connect opens rueidis and interlock clients for urls. A bad URL is a
// usage error; a Redis that does not answer, or bad interlock options,
// are reported with exit.Unavailable and exit.Usage respectively.
func Connect(urls []string, opts ...interlock.Option) (*Conn, error) {
	opt, err := Options(urls)
	if err != nil {
		return nil, exit.WithCode(exit.Usage, err)
	}
	rc, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, ConnectFailed(opt.InitAddress, err)
	}
	lc, err := interlock.New(rc, opts...)
	if err != nil {
		rc.Close()
		return nil, exit.WithCode(exit.Usage, err)
	}
	return &Conn{Redis: rc, Client: lc}, nil
}

// closeWait bounds Conn.Close: interlock is about to exit, and what a
// server that does not answer keeps (a latch, a lost hold) expires by its
// TTL.
const closeWait = 500 * time.Millisecond

// Close stops the interlock client, then closes the rueidis client, giving
// up after closeWait: a call rueidis is redialing a frozen server for
// returns only at its dial timeout, seconds later.
func (c *Conn) Close() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Client.Close()
		c.Redis.Close()
	}()
	t := time.NewTimer(closeWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}
