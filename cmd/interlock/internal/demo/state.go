package demo

import (
	"context"
	"time"
)

// ledger returns who processed the order in a scene, in order.
func (d *demo) ledger(ctx context.Context, key string) ([]string, error) {
	return d.rc.Do(ctx, d.rc.B().Lrange().Key(key).Start(0).Stop(-1).Build()).AsStrSlice()
}

// record writes into the ledger that who processed the order.
func (d *demo) record(ctx context.Context, key, who string) error {
	return d.rc.Do(ctx, d.rc.B().Rpush().Key(key).Element(who).Build()).Error()
}

// ttl returns the lock's remaining TTL.
func (d *demo) ttl(ctx context.Context, lock string) (time.Duration, error) {
	ms, err := d.rc.Do(ctx, d.rc.B().Pttl().Key(lock).Build()).AsInt64()
	return time.Duration(ms) * time.Millisecond, err
}

// sayTTL tells the lock's TTL, with a comment.
func (d *demo) sayTTL(ctx context.Context, lock, comment string) error {
	ttl, err := d.ttl(ctx, lock)
	if err != nil {
		return err
	}
	if ttl < 0 {
		d.n.say(".", "the lock is gone")
		return nil
	}
	d.n.say(".", "lock TTL %s%s", secs(ttl), comment)
	return nil
}
