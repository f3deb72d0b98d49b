package lockcore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/report"
	"github.com/interlock-go/interlock/internal/script"
)

// Shape is what a synchronizer keeps under one of its keys. The engine
// reads it only when something went wrong, or alongside an inspection, to
// refuse a key that holds something else, naming the key and what it
// holds.
type Shape uint8

const (
	// ShapeNone marks an entry of Kind.Keys that is no key of its own (a
	// prefix): never read.
	ShapeNone Shape = iota
	// ShapeLock is a lock's hash: fields "<client id>:<owner id>", with
	// ":write" for a write hold, whose values are hold counts, and a
	// read/write lock's "mode" ("read" or "write").
	ShapeLock
	// ShapeCount is a string that holds an integer: a semaphore's free
	// permits, a latch's count, a fencing token counter.
	ShapeCount
	// ShapeList is a list: a fair lock's queue.
	ShapeList
	// ShapeZSet is a sorted set: a fair lock's deadlines, an expirable
	// semaphore's acquired permits.
	ShapeZSet
	// ShapeHash is a hash of settings (a rate limiter's config): only its
	// type is checked.
	ShapeHash
)

// redisType is the TYPE of a key of shape s; want is how errors name it.
func (s Shape) redisType() string {
	return [...]string{ShapeLock: "hash", ShapeCount: "string", ShapeList: "list", ShapeZSet: "zset", ShapeHash: "hash"}[s]
}

func (s Shape) want() string {
	return [...]string{ShapeLock: "a lock's hash", ShapeCount: "an integer count", ShapeList: "a list", ShapeZSet: "a zset", ShapeHash: "a hash"}[s]
}

// keyShape is one key of a synchronizer and what it keeps there.
type keyShape struct {
	key   string
	shape Shape
}

// lockFieldsRead bounds how many fields of a hash a check reads (HSCAN's
// COUNT): a lock's hash has a few, and a small hash is read whole anyway.
const lockFieldsRead = 32

// Expect adds key, which keeps shape, to the keys that are checked when
// the synchronizer meets data it does not expect (after its name, which
// New and NewObject add).
func (b *base) Expect(key string, shape Shape) {
	if shape != ShapeNone {
		b.shapes = append(b.shapes, keyShape{key, shape})
	}
}

// Probe sends, in one pipeline, the reads that tell what the
// synchronizer's keys hold, then the commands of then, and returns the
// replies to then; or, when a key holds something other than its shape
// (missing keys are fine), an error wrapping interlock.ErrInvalid that
// names the key and what it holds.
func (b *base) Probe(ctx context.Context, then ...rueidis.Completed) ([]rueidis.RedisResult, error) {
	rc := b.rt.RC
	cmds := make(rueidis.Commands, 0, 2*len(b.shapes)+len(then))
	for _, s := range b.shapes {
		cmds = append(cmds, script.Resendable(rc.B().Type().Key(s.key).Build()))
		switch s.shape {
		case ShapeLock:
			cmds = append(cmds, script.Resendable(rc.B().Hscan().Key(s.key).Cursor(0).Count(lockFieldsRead).Build()))
		case ShapeCount:
			cmds = append(cmds, script.Resendable(rc.B().Get().Key(s.key).Build()))
		}
	}
	res := rc.DoMulti(ctx, append(cmds, then...)...)
	i := 0
	for _, s := range b.shapes {
		t, err := res[i].ToString()
		i++
		var data rueidis.RedisResult
		if s.shape == ShapeLock || s.shape == ShapeCount {
			data = res[i]
			i++
		}
		if err != nil {
			return nil, err
		}
		if err := misfit(s, t, data); err != nil {
			return nil, err
		}
	}
	return res[i:], nil
}

// probeOne is Probe followed by the one read cmd.
func (b *base) probeOne(ctx context.Context, cmd rueidis.Completed) (rueidis.RedisResult, error) {
	res, err := b.Probe(ctx, script.Resendable(cmd))
	if err != nil {
		return rueidis.RedisResult{}, err
	}
	return res[0], nil
}

// ProbeScript is Probe followed by script s, sent again by itself when the
// server does not know it yet.
func (b *base) ProbeScript(ctx context.Context, s *script.Script, keys, args []string) (rueidis.RedisResult, error) {
	res, err := b.Probe(ctx, s.EvalSHA(b.rt.RC, keys, args))
	if err != nil {
		return rueidis.RedisResult{}, err
	}
	if script.IsNoScript(res[0].Error()) {
		return s.Exec(ctx, b.rt.RC, keys, args), nil
	}
	return res[0], nil
}

// misfit returns the error about key s.key, of type t, when it does not
// hold s.shape; data is what HSCAN or GET read of it.
func misfit(s keyShape, t string, data rueidis.RedisResult) error {
	bad := func(held string) error {
		return fmt.Errorf("%w: %s holds another type of data: %s, not %s", report.ErrInvalid, s.key, held, s.shape.want())
	}
	switch {
	case t == "none":
		return nil
	case t != s.shape.redisType():
		return bad(article(t) + " " + t)
	case s.shape == ShapeLock:
		scan, err := data.AsScanEntry()
		if err != nil {
			return nil // gone or changed since TYPE: nothing to judge
		}
		for j := 0; j+1 < len(scan.Elements); j += 2 {
			if f, v := scan.Elements[j], scan.Elements[j+1]; !lockField(f, v) {
				return bad(fmt.Sprintf("a hash whose field %s = %s is no \"<client id>:<owner id>\" with a hold count", quote(f), quote(v)))
			}
		}
	case s.shape == ShapeCount:
		v, err := data.ToString()
		if err != nil {
			return nil
		}
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return bad("the string " + quote(v))
		}
	}
	return nil
}

// lockField reports whether field f = v belongs in a lock's hash: an
// owner "<client id>:<owner id>" (":write" appended for a writer) with
// an integer hold count, or a read/write lock's mode.
func lockField(f, v string) bool {
	if f == "mode" {
		return v == "read" || v == "write"
	}
	owner := strings.TrimSuffix(f, ":write")
	i := strings.LastIndexByte(owner, ':')
	if i <= 0 {
		return false
	}
	if _, err := strconv.ParseInt(owner[i+1:], 10, 64); err != nil {
		return false
	}
	_, err := strconv.ParseInt(v, 10, 64)
	return err == nil
}

// article is "an" before a Redis type that starts with a vowel sound.
func article(t string) string {
	if t == "" || !strings.ContainsRune("aeiou", rune(t[0])) {
		return "a"
	}
	return "an"
}

// quote quotes s for an error, cut to its first 40 bytes.
func quote(s string) string {
	const most = 40
	if len(s) > most {
		return strconv.Quote(s[:most]) + "..."
	}
	return strconv.Quote(s)
}

// errNotInteger is the error of a reply that should be an integer count
// and is some other string (Int).
var errNotInteger = errors.New("not an integer")

// wrongData reports whether err is the server saying that a key holds
// data of another type, or a count that is not an integer: Redis's
// WRONGTYPE (which the scripts answer too, for a count they cannot read),
// INCRBY's and HINCRBY's "not an integer", or an Int reply that is none.
func wrongData(err error) bool {
	if errors.Is(err, errNotInteger) {
		return true
	}
	re, ok := rueidis.IsRedisErr(err)
	if !ok {
		return false
	}
	// Redis 7 answers a script's error with its own code first; Redis 6.x
	// puts "Error running script (call to f_...): @user_script:N: " before it.
	msg := re.Error()
	return strings.HasPrefix(msg, "WRONGTYPE") || strings.Contains(msg, ": WRONGTYPE ") ||
		strings.Contains(msg, "value is not an integer")
}

// Fail is OpErr for an error that came from the server: when the server
// said that a key holds data of another type, Fail asks what the keys hold
// (Probe) and returns the bad argument that names the key and its data.
func (b *base) Fail(ctx context.Context, op report.Op, err error) error {
	if wrongData(err) {
		if _, perr := b.Probe(ctx); errors.Is(perr, report.ErrInvalid) {
			err = perr
		}
	}
	return b.OpErr(op, err)
}

// Misfit returns Probe's error about a key that holds something else, nil
// when every key fits or the probe itself failed: for a caller that found
// nothing to act on and wants to know whether that is why.
func (b *base) Misfit(ctx context.Context, op report.Op) error {
	if _, err := b.Probe(ctx); errors.Is(err, report.ErrInvalid) {
		return b.OpErr(op, err)
	}
	return nil
}
