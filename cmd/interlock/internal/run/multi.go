package run

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/cmd/interlock/internal/cli"
	"github.com/interlock-go/interlock/cmd/interlock/internal/kinds"
	"github.com/interlock-go/interlock/fenced"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/multilock"
)

// checkNames checks run's LOCK names (under cfg.prefix) and sets
// cfg.locks and cfg.lock. Several names are one multi-lock, of the locks
// of cfg.kind: each name at most once, and no semaphore kind.
func checkNames(cfg *runConfig, names []string) error {
	for _, name := range names {
		if err := keys.Check(cfg.prefix + name); err != nil {
			return cli.Usagef("run", "%v", err)
		}
	}
	if len(names) > 1 {
		if takesPermits(cfg.kind) {
			return cli.Usagef("run", "--kind %s takes one NAME, got %d: only locks (%s, %s) can be held together",
				cfg.kind, len(names), strings.Join(kinds.Locks, ", "), kinds.Spin)
		}
		for i, name := range names {
			if slices.Contains(names[:i], name) {
				return cli.Usagef("run", "lock %q is given twice: each LOCK of a multilock is given once", name)
			}
		}
	}
	cfg.locks, cfg.lock = names, strings.Join(names, ",")
	return nil
}

// newRunLocker returns the locker of cfg: its kind's, or a multi-lock
// over its names.
func newRunLocker(c *interlock.Client, cfg *runConfig) (locker, error) {
	if len(cfg.locks) < 2 {
		return newLocker(c, cfg.kind, cfg.lock, cfg.permits)
	}
	l := &multiLocker{}
	members := make([]interlock.Locker, len(cfg.locks))
	for i, name := range cfg.locks {
		var err error
		if members[i], err = kinds.NewLock(c, cfg.kind, name); err != nil {
			return nil, err
		}
		if f, ok := members[i].(*fenced.Mutex); ok {
			l.fenced = append(l.fenced, f)
		}
	}
	l.m = multilock.New(members...)
	return l, nil
}

// multiLocker holds several locks as one multilock.Mutex (Redisson's
// RedissonMultiLock): all of them, or none.
type multiLocker struct {
	m      *multilock.Mutex
	fenced []*fenced.Mutex // the members, with --kind fenced
	tokens []uint64        // their tokens once acquired
}

func (l *multiLocker) acquire(ctx context.Context, wait cli.DurationFlag, lease time.Duration) (bool, error) {
	ok, err := acquireWith(ctx, l.m, wait, lease)
	if !ok || err != nil || len(l.fenced) == 0 {
		return ok, err
	}
	if err := l.readTokens(ctx); err != nil {
		_ = kinds.Release(ctx, l.m.Unlock) // else it expires by itself
		return false, err
	}
	return true, nil
}

// readTokens reads the fenced members' token counters. They are this
// acquisition's tokens if the members are still held after the reads: no
// other owner took one meanwhile.
func (l *multiLocker) readTokens(ctx context.Context) error {
	l.tokens = make([]uint64, len(l.fenced))
	for i, f := range l.fenced {
		token, err := f.Token(ctx)
		if err != nil {
			return err
		}
		l.tokens[i] = token
	}
	held, err := l.m.IsHeld(ctx)
	switch {
	case err != nil:
		return err
	case !held:
		return fmt.Errorf("reading the fencing tokens: %w", interlock.ErrLockLost)
	}
	return nil
}

func (l *multiLocker) unlock(ctx context.Context) error { return l.m.Unlock(ctx) }

// guard is the multi-lock's guard, ended by the first member whose hold
// ends, with a cause that names that member.
func (l *multiLocker) guard(ctx context.Context) context.Context {
	g, cancel := context.WithCancelCause(ctx)
	ended := func(name string, mg context.Context) { cancel(fmt.Errorf("lock %q: %w", name, context.Cause(mg))) }
	for _, member := range l.m.Members() {
		mg := member.Guard(g)
		context.AfterFunc(mg, func() { ended(member.Name(), mg) })
	}
	return g
}

func (l *multiLocker) env() []string {
	if len(l.tokens) == 0 {
		return nil
	}
	s := make([]string, len(l.tokens))
	for i, t := range l.tokens {
		s[i] = strconv.FormatUint(t, 10)
	}
	return []string{envFenceToken + "=" + strings.Join(s, ",")}
}

// describeMulti names a multi-lock for messages: `multilock of "A", "B"`,
// or with the kind when it is not the default, as in
// `multilock of write locks "A", "B"`.
func (cfg *runConfig) describeMulti() string {
	q := make([]string, len(cfg.locks))
	for i, name := range cfg.locks {
		q[i] = strconv.Quote(name)
	}
	if cfg.kind == kinds.Reentrant {
		return "multilock of " + strings.Join(q, ", ")
	}
	return "multilock of " + cfg.kind + " locks " + strings.Join(q, ", ")
}

// goneLocks says which locks the unlock error err (a member's, or the
// multi-lock's wrapping several members' errors) found not held any more:
// `lock "B" was`, `locks "A", "B" were`.
func goneLocks(err error) string {
	errs := []error{err}
	if e, ok := err.(*interlock.Error); ok && (e.Kind == interlock.KindMultiLock || e.Kind == interlock.KindRedLock) {
		if j, ok := e.Err.(interface{ Unwrap() []error }); ok {
			errs = j.Unwrap()
		}
	}
	var gone []string
	for _, e := range errs {
		if ie, ok := errors.AsType[*interlock.Error](e); ok && errors.Is(e, interlock.ErrNotHeld) {
			gone = append(gone, strconv.Quote(ie.Name))
		}
	}
	switch len(gone) {
	case 0:
		return "a lock was"
	case 1:
		return "lock " + gone[0] + " was"
	}
	return "locks " + strings.Join(gone, ", ") + " were"
}
