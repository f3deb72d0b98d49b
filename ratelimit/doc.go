// Package ratelimit is Java Redisson's RRateLimiter, on the wire: a Go
// process and a Java process (Redisson 3.52.0 or 4.7.0) that open a rate
// limiter of the same name (Redisson's getRateLimiter(name)) draw from one
// quota, read each other's config, and see each other's SetRate.
//
//	l := ratelimit.New(c, "api:calls")
//	l.TrySetRate(ctx, ratelimit.Config{Rate: 100, Interval: time.Second}) // once, by whoever sets it up
//	if err := l.Acquire(ctx, 1); err != nil {
//		return err
//	}
//
// # Data
//
// A limiter called N is the hash N, its config: rate (permits per
// interval), interval (ms), type (0 OVERALL, 1 PER_CLIENT) and
// keepAliveTime (ms, 0 for none). Its state is the string {N}:value, the
// count of free permits, and the sorted set {N}:permits of the permits
// taken within the last interval: each member is one byte, the length of
// 16 random bytes, those bytes, then the permits as 4 bytes little-endian;
// its score is the taker's clock in epoch milliseconds. A PerClient
// limiter keeps them per client instead, as {N}:value:<client id> and
// {N}:permits:<client id>, where the client id is the Client's ID (a
// RedissonClient's id in Java). For a name that contains "{", the braces
// are not added (N:value), as in Redisson. docs/protocol.md lists every
// script.
//
// # The window
//
// Every acquisition first frees the permits taken more than an interval
// ago by its own clock, then takes the permits if enough are free. The
// rate is therefore a sliding window over the takers' clocks: keep the
// clocks of Go and Java hosts in sync (interlock.Client.ClockSkew).
// SetRate replaces the config and forgets the permits taken under the new
// type (only this Client's own, for PerClient); TrySetRate changes
// nothing once a config exists.
//
// # Waiting
//
// A refused acquisition is told by the server how long until the oldest
// permit in the window comes free; Acquire sleeps exactly that long on a
// timer of its own, then tries again, until it succeeds or its context
// ends. TryAcquire does the same within its wait, and reports false as
// soon as the next try would come after it. No goroutine, subscription or
// poll loop is involved: a limiter announces nothing, so a SetRate from
// elsewhere is seen at a waiter's next try, as in Redisson.
//
// # Expiry
//
// With a KeepAlive, every acquisition sets all three keys to expire after
// it, so an idle limiter disappears. Without one, the state keys take the
// config hash's TTL, if it has one (set with Redisson's expire).
//
// # Retries
//
// Each acquisition carries a receipt (interlock_receipt:{N}:<id>, whose
// id also gives the member's random bytes), so a resend after a lost reply
// finds the grant and takes nothing twice; when no reply comes at all, the
// Client takes the permits back, off the caller's path. Bad input (rate
// below 1, interval under 1ms, keep-alive under the interval, n below 1)
// is refused before anything is sent; n above the rate is refused by the
// server before anything changes, as in Redisson; both wrap
// interlock.ErrInvalid. A config hash that is not a rate limiter's is a
// clear error, never a panic.
//
// # Beyond Redisson
//
// Redisson's setRate(RateLimiterArgs) with keepState and updateRate (4.4.0
// and later) and release (3.52.0 and later) are not here; they write the
// same keys, so a Java process may use them on a limiter Go shares.
package ratelimit
