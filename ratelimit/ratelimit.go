package ratelimit

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/lockcore"
	"github.com/interlock-go/interlock/internal/report"
	"github.com/interlock-go/interlock/internal/script"
)

// ErrNotSet is wrapped by the error of a call on a limiter that has no
// rate (Redisson's "RateLimiter is not initialized"): set one with
// TrySetRate or SetRate first.
var ErrNotSet = errors.New("ratelimit: rate not set")

// RateType says whose permits a rate counts.
type RateType int

// The RateTypes, numbered as Redisson's RateType ordinals, which is how
// the config hash stores them.
const (
	// Overall: one rate for every client of the limiter, Go and Java.
	Overall RateType = 0
	// PerClient: the rate for each client on its own, a Client here and a
	// RedissonClient in Java, told apart by their ids.
	PerClient RateType = 1
)

// String returns Redisson's name for t: OVERALL or PER_CLIENT.
func (t RateType) String() string {
	switch t {
	case Overall:
		return "OVERALL"
	case PerClient:
		return "PER_CLIENT"
	}
	return "RateType(" + strconv.Itoa(int(t)) + ")"
}

// Config is a rate limiter's setting: Rate permits per Interval, counted
// as Type says. Interval and KeepAlive are kept in whole milliseconds.
type Config struct {
	Type     RateType
	Rate     int64         // permits per Interval, at least 1
	Interval time.Duration // at least 1ms
	// KeepAlive, when not 0, makes the limiter's keys expire after that
	// long without an acquisition; it must be at least Interval.
	KeepAlive time.Duration
}

// receiptTTL is how long a receipt outlives its acquisition.
var receiptTTL = lockcore.MS(lockcore.ReceiptTTL)

// Limiter is a rate limiter shared with Redisson's RRateLimiter of the
// same name: Rate permits per sliding Interval.
type Limiter struct {
	o    lockcore.Object
	keys []string // config, value, value:<id>, permits, permits:<id>
}

// New returns the rate limiter called name. A bad name or a nil client is
// reported by every method, before anything is sent.
func New(c *interlock.Client, name string) *Limiter {
	l := &Limiter{o: lockcore.NewObjectShaped(c, string(interlock.KindRateLimiter), name, noChannel, lockcore.ShapeHash)}
	if rt := l.o.RT(); rt != nil {
		l.keys = keys.RateLimiter(l.o.Key(), rt.ID)
		for i, shape := range []lockcore.Shape{lockcore.ShapeCount, lockcore.ShapeCount, lockcore.ShapeZSet, lockcore.ShapeZSet} {
			l.o.Expect(l.keys[i+1], shape)
		}
	}
	return l
}

// noChannel: a rate limiter announces nothing.
func noChannel(string) string { return "" }

// Name returns the limiter's name as given: the key of its config hash,
// unless the Client maps names (interlock.WithNameMapper).
func (l *Limiter) Name() string { return l.o.Name() }

// TrySetRate sets the limiter's config if it has none, and reports
// whether it did; an existing config is kept as it is.
func (l *Limiter) TrySetRate(ctx context.Context, cfg Config) (bool, error) {
	args, err := l.config(cfg)
	if err != nil {
		return false, err
	}
	n, err := lockcore.Int(l.o.Run(ctx, script.RLTrySet(), l.keys[:1], args...))
	if err != nil {
		return false, l.o.Fail(ctx, report.OpSet, err)
	}
	return n == 1, nil
}

// SetRate replaces the limiter's config and starts its window afresh: the
// permits taken so far under cfg.Type (this Client's own, for PerClient)
// are forgotten.
func (l *Limiter) SetRate(ctx context.Context, cfg Config) error {
	args, err := l.config(cfg)
	if err != nil {
		return err
	}
	return l.o.Fail(ctx, report.OpSet, lockcore.Done(l.o.Run(ctx, script.RLSet(), l.keys, args...)))
}

// config checks cfg and returns it as the setters' ARGV.
func (l *Limiter) config(cfg Config) ([]string, error) {
	if err := l.o.Ready(report.OpSet); err != nil {
		return nil, err
	}
	switch {
	case cfg.Type != Overall && cfg.Type != PerClient:
		return nil, l.o.Invalid(report.OpSet, "rate type %d is neither Overall nor PerClient", int(cfg.Type))
	case cfg.Rate < 1:
		return nil, l.o.Invalid(report.OpSet, "rate %d: at least 1 permit per interval is needed", cfg.Rate)
	case cfg.Interval < time.Millisecond:
		return nil, l.o.Invalid(report.OpSet, "interval %v must be at least 1ms", cfg.Interval)
	case cfg.KeepAlive < 0:
		return nil, l.o.Invalid(report.OpSet, "keep-alive %v must not be negative", cfg.KeepAlive)
	case cfg.KeepAlive != 0 && cfg.KeepAlive.Milliseconds() < cfg.Interval.Milliseconds():
		return nil, l.o.Invalid(report.OpSet, "keep-alive %v must be 0 or at least the interval %v", cfg.KeepAlive, cfg.Interval)
	}
	return []string{
		strconv.FormatInt(cfg.Rate, 10), strconv.FormatInt(cfg.Interval.Milliseconds(), 10),
		strconv.Itoa(int(cfg.Type)), strconv.FormatInt(cfg.KeepAlive.Milliseconds(), 10),
	}, nil
}

// Config returns the limiter's config; an error wrapping ErrNotSet when it
// has none.
func (l *Limiter) Config(ctx context.Context) (Config, error) {
	if err := l.o.Ready(report.OpInspect); err != nil {
		return Config{}, err
	}
	rc := l.o.RT().RC
	m, err := rc.Do(ctx, script.Resendable(rc.B().Hgetall().Key(l.o.Key()).Build())).AsStrMap()
	if err != nil {
		return Config{}, l.o.Fail(ctx, report.OpInspect, err)
	}
	if len(m) == 0 {
		return Config{}, l.o.OpErr(report.OpInspect, ErrNotSet)
	}
	cfg, err := parseConfig(m)
	if err != nil {
		return Config{}, l.o.OpErr(report.OpInspect, fmt.Errorf("%w: %s holds no rate limiter config: %w", report.ErrInvalid, l.o.Key(), err))
	}
	return cfg, nil
}

// parseConfig reads the config hash's fields; keepAliveTime may be
// missing (0).
func parseConfig(m map[string]string) (Config, error) {
	field := func(name string, missing bool) (int64, error) {
		v, ok := m[name]
		if !ok {
			if missing {
				return 0, nil
			}
			return 0, fmt.Errorf("no field %s", name)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("field %s = %q is no count", name, v)
		}
		return n, nil
	}
	var cfg Config
	var err error
	var typ, interval, keep int64
	if cfg.Rate, err = field("rate", false); err != nil {
		return Config{}, err
	}
	if interval, err = field("interval", false); err != nil {
		return Config{}, err
	}
	if typ, err = field("type", false); err != nil {
		return Config{}, err
	}
	if typ > int64(PerClient) {
		return Config{}, fmt.Errorf("field type = %d is neither 0 (OVERALL) nor 1 (PER_CLIENT)", typ)
	}
	if keep, err = field("keepAliveTime", true); err != nil {
		return Config{}, err
	}
	const most = math.MaxInt64 / int64(time.Millisecond)
	if interval > most || keep > most {
		return Config{}, fmt.Errorf("interval %d ms or keep-alive %d ms out of range", interval, keep)
	}
	cfg.Type, cfg.Interval, cfg.KeepAlive = RateType(typ), time.Duration(interval)*time.Millisecond, time.Duration(keep)*time.Millisecond
	return cfg, nil
}

// TryAcquire takes n permits if the limiter has them within wait (0: at
// once), and reports whether it did. It waits, timer by timer, as long as
// the limiter says the permits take to come free, and reports false at
// once when that is beyond wait.
func (l *Limiter) TryAcquire(ctx context.Context, n int, wait time.Duration) (bool, error) {
	if wait < 0 {
		return false, l.o.Invalid(report.OpAcquire, "wait %v must not be negative", wait)
	}
	return l.acquire(ctx, n, wait, false)
}

// Acquire takes n permits, waiting as long as the limiter says they take
// to come free, or until ctx ends (then it returns ctx.Err()).
func (l *Limiter) Acquire(ctx context.Context, n int) error {
	_, err := l.acquire(ctx, n, 0, true)
	return err
}

// acquire tries, then sleeps for the delay each refusal reports, until
// the permits are taken, the wait is over (unless forever) or ctx ends.
func (l *Limiter) acquire(ctx context.Context, n int, wait time.Duration, forever bool) (bool, error) {
	if err := l.o.Ready(report.OpAcquire); err != nil {
		return false, err
	}
	if n < 1 || int64(n) > math.MaxUint32 {
		return false, l.o.Invalid(report.OpAcquire, "%d permits: from 1 to the rate are needed", n)
	}
	if err := ctx.Err(); err != nil {
		return false, err // ended already: nothing is sent
	}
	start := l.o.Begin()
	deadline := time.Now().Add(wait)
	p := strconv.Itoa(n)
	var timer *time.Timer
	tries := 0
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		tries++
		ok, delay, err := l.try(ctx, p)
		if err != nil || ok {
			l.o.Acquired(ctx, start, tries, n, !forever && wait == 0, ok, err)
			return ok, err
		}
		if !forever && time.Until(deadline) < delay {
			l.o.Acquired(ctx, start, tries, n, wait == 0, false, nil)
			return false, nil
		}
		if timer == nil {
			timer = time.NewTimer(delay)
		} else {
			timer.Reset(delay)
		}
		select {
		case <-ctx.Done():
			l.o.Acquired(ctx, start, tries, n, false, false, ctx.Err())
			return false, ctx.Err()
		case <-timer.C:
		}
	}
}

// try sends one acquisition under a fresh receipt, whose id is the zset
// member's random bytes. A lost reply, or too few replicas in safe mode,
// is taken back through the same receipt, so the permits are neither kept
// nor given back twice. Refused, it returns the delay the script reported.
func (l *Limiter) try(ctx context.Context, p string) (bool, time.Duration, error) {
	if l.o.RT().Closed() {
		return false, 0, interlock.ErrClosed
	}
	receipt := l.o.Receipt()
	rnd := receiptBytes(receipt)
	ks := append(l.keys[:5:5], receipt)
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	res, acked := l.o.RunAcked(ctx, script.RLAcquire(), ks, p, now, rnd, receiptTTL)
	err := res.Error()
	switch {
	case lockcore.Lost(err):
		l.undo(ks, p, rnd)
		return false, 0, l.o.OpErr(report.OpAcquire, err)
	case rueidis.IsRedisNil(err): // granted
		if err := acked(); err != nil {
			l.undo(ks, p, rnd)
			return false, 0, l.o.OpErr(report.OpAcquire, err)
		}
		l.o.Answered(receipt)
		return true, 0, nil
	case err != nil:
		return false, 0, l.fail(ctx, report.OpAcquire, err)
	}
	ms, err := res.AsInt64()
	if err != nil {
		return false, 0, l.fail(ctx, report.OpAcquire, err)
	}
	return false, max(time.Duration(ms)*time.Millisecond, time.Millisecond), nil
}

// receiptBytes returns the 16 random bytes that end a receipt key in hex.
func receiptBytes(receipt string) string {
	b, _ := hex.DecodeString(receipt[strings.LastIndexByte(receipt, ':')+1:])
	return string(b)
}

// undo takes back the acquisition under ks[5], if it took permits, and
// makes sure a late copy of it takes nothing.
func (l *Limiter) undo(ks []string, p, rnd string) {
	l.o.UndoLater(ks[5], time.Now().Add(lockcore.ReceiptTTL), func(ctx context.Context) error {
		return lockcore.Done(l.o.Run(ctx, script.RLUndoAcquire(), ks, p, rnd, receiptTTL))
	})
}

// fail is Fail for the scripts' own error replies: an unset config wraps
// ErrNotSet; too many permits or a config that is no rate limiter's wraps
// interlock.ErrInvalid.
func (l *Limiter) fail(ctx context.Context, op report.Op, err error) error {
	if re, ok := rueidis.IsRedisErr(err); ok {
		msg := re.Error()
		switch {
		case strings.Contains(msg, "RateLimiter is not initialized"):
			return l.o.OpErr(op, ErrNotSet)
		case strings.Contains(msg, "cannot exceed defined rate"):
			return l.o.OpErr(op, fmt.Errorf("%w: the permits asked for exceed the limiter's rate", report.ErrInvalid))
		case strings.Contains(msg, "interlock: "):
			return l.o.OpErr(op, fmt.Errorf("%w: %s", report.ErrInvalid, msg[strings.Index(msg, "interlock: ")+len("interlock: "):]))
		}
	}
	return l.o.Fail(ctx, op, err)
}

// AvailablePermits returns how many permits the limiter has free now,
// under its type (this Client's own, for PerClient).
func (l *Limiter) AvailablePermits(ctx context.Context) (int64, error) {
	if err := l.o.Ready(report.OpInspect); err != nil {
		return 0, err
	}
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	n, err := lockcore.Int(l.o.Run(ctx, script.RLAvailable(), l.keys, now))
	if err != nil {
		return 0, l.fail(ctx, report.OpInspect, err)
	}
	return n, nil
}

// Delete removes the limiter's config and its permits (this Client's own
// for PerClient, as Redisson's delete does), and reports whether any of
// them existed.
func (l *Limiter) Delete(ctx context.Context) (bool, error) {
	if err := l.o.Ready(report.OpDelete); err != nil {
		return false, err
	}
	rc := l.o.RT().RC
	res, err := l.o.Probe(ctx, rc.B().Del().Key(l.keys...).Build()) // one slot: the name's
	if err != nil {
		return false, l.o.OpErr(report.OpDelete, err)
	}
	n, err := res[0].AsInt64()
	if err != nil {
		return false, l.o.OpErr(report.OpDelete, err)
	}
	return n > 0, nil
}
