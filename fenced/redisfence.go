package fenced

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/script"
)

// RedisFence is the resource side of fencing for data kept in Redis (see
// "Fences" in the package documentation). It is safe for concurrent use;
// a nil client, an empty fence key, token 0 or a malformed write give an
// error wrapping interlock.ErrInvalid before anything is sent.
type RedisFence struct {
	rc  rueidis.Client
	key string
	err error
}

// NewRedisFence returns the fence that keeps its highest admitted token in
// the key fenceKey, reached through rc. Errors in the arguments are
// reported by every method.
func NewRedisFence(rc rueidis.Client, fenceKey string) *RedisFence {
	f := &RedisFence{rc: rc, key: fenceKey}
	switch {
	case rc == nil:
		f.err = invalid("nil rueidis client")
	case fenceKey == "":
		f.err = invalid("empty fence key")
	}
	return f
}

// Key returns the fence key.
func (f *RedisFence) Key() string { return f.key }

// Write is one command that a RedisFence runs after admitting a token:
// Cmd Key Args..., for any command whose first argument is its only key,
// such as SET, HSET, DEL, INCRBY, RPUSH, XADD or PEXPIRE.
type Write struct {
	Cmd  string
	Key  string
	Args []string
}

// Exec admits token and runs writes in order, atomically. A refused token
// gets an error wrapping ErrStale, as Fence.Do does, and nothing is
// written.
func (f *RedisFence) Exec(ctx context.Context, token uint64, writes ...Write) error {
	admitted, highest, err := f.exec(ctx, token, writes)
	if err == nil && !admitted {
		err = f.opErr(stale(token, highest))
	}
	return err
}

// Admit admits token without writing, and reports whether it was admitted:
// a new holder that calls it first shuts older holders out before it reads.
// A stale token is (false, nil), as it is false for Fence.Admit.
func (f *RedisFence) Admit(ctx context.Context, token uint64) (bool, error) {
	admitted, _, err := f.exec(ctx, token, nil)
	return admitted, err
}

// exec runs the fence script: whether token was admitted, and the highest
// token the fence holds after it.
func (f *RedisFence) exec(ctx context.Context, token uint64, writes []Write) (bool, uint64, error) {
	if err := f.check(token); err != nil {
		return false, 0, err
	}
	cluster := f.rc.Mode() == rueidis.ClientModeCluster
	slot := keys.Slot(f.key)
	ks := []string{f.key}
	index := map[string]int{}
	argv := []string{strconv.FormatUint(token, 10)}
	for i, w := range writes {
		var bad error
		switch {
		case w.Cmd == "":
			bad = invalid("write %d has no command", i)
		case w.Key == "":
			bad = invalid("write %d (%s) has no key", i, w.Cmd)
		case w.Key == f.key:
			bad = invalid("write %d (%s) is to the fence key itself", i, w.Cmd)
		case cluster && keys.Slot(w.Key) != slot:
			bad = invalid("write %d (%s): key %q is in cluster slot %d, the fence key %q in slot %d (give them one hash tag)",
				i, w.Cmd, w.Key, keys.Slot(w.Key), f.key, slot)
		}
		if bad != nil {
			return false, 0, f.opErr(bad)
		}
		k, ok := index[w.Key]
		if !ok {
			ks = append(ks, w.Key)
			k = len(ks) // KEYS is 1-based in Lua
			index[w.Key] = k
		}
		argv = append(argv, strconv.Itoa(k), strconv.Itoa(len(w.Args)), w.Cmd)
		argv = append(argv, w.Args...)
	}
	reply, err := script.FenceWrite().Exec(ctx, f.rc, ks, argv).ToArray()
	if err != nil {
		return false, 0, f.opErr(err)
	}
	if len(reply) != 2 {
		return false, 0, f.opErr(fmt.Errorf("fence script answered %d values, want 2", len(reply)))
	}
	admitted, err := reply[0].AsInt64()
	if err != nil {
		return false, 0, f.opErr(err)
	}
	// The script answers the token as the decimal string it keeps: a
	// uint64 that a Lua number would round.
	s, err := reply[1].ToString()
	if err != nil {
		return false, 0, f.opErr(err)
	}
	highest, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return false, 0, f.opErr(fmt.Errorf("fence script answered the token %q: %w", s, err))
	}
	return admitted == 1, highest, nil
}

// Set is Exec with SET key value.
func (f *RedisFence) Set(ctx context.Context, token uint64, key, value string) error {
	return f.Exec(ctx, token, Write{Cmd: "SET", Key: key, Args: []string{value}})
}

// HSet is Exec with HSET key field value [field value ...].
func (f *RedisFence) HSet(ctx context.Context, token uint64, key string, fieldValues ...string) error {
	if len(fieldValues) == 0 || len(fieldValues)%2 != 0 {
		return f.opErr(invalid("HSET takes field value pairs, got %d arguments", len(fieldValues)))
	}
	return f.Exec(ctx, token, Write{Cmd: "HSET", Key: key, Args: fieldValues})
}

// Del is Exec with DEL of each key.
func (f *RedisFence) Del(ctx context.Context, token uint64, dataKeys ...string) error {
	writes := make([]Write, len(dataKeys))
	for i, k := range dataKeys {
		writes[i] = Write{Cmd: "DEL", Key: k}
	}
	return f.Exec(ctx, token, writes...)
}

// Highest returns the highest token admitted so far (0: none).
func (f *RedisFence) Highest(ctx context.Context) (uint64, error) {
	if f.err != nil {
		return 0, f.opErr(f.err)
	}
	s, err := f.rc.Do(ctx, script.Resendable(f.rc.B().Get().Key(f.key).Build())).ToString()
	switch {
	case rueidis.IsRedisNil(err):
		return 0, nil
	case err != nil:
		return 0, f.opErr(err)
	}
	t, err := strconv.ParseUint(s, 10, 64)
	if err != nil || t == 0 {
		return 0, f.opErr(fmt.Errorf("the fence key holds %q, not a token", s))
	}
	return t, nil
}

func (f *RedisFence) check(token uint64) error {
	switch {
	case f.err != nil:
		return f.opErr(f.err)
	case token == 0:
		return f.opErr(invalid("token 0 is not a fencing token"))
	}
	return nil
}

// opErr is the *interlock.Error of an operation of the fence.
func (f *RedisFence) opErr(err error) error { return fenceErr(f.key, err) }
