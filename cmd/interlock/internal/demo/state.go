package demo

import (
	"context"
	"time"

	"github.com/interlock-go/interlock"
)

// ledger returns who processed the order in a scene, in order.
func (d *demo) ledger(ctx context.Context, key string) ([]string, error) {
	return d.rc.Do(ctx, d.rc.B().Lrange().Key(key).Start(0).Stop(-1).Build()).AsStrSlice()
}

// record writes into the ledger that who processed the order.
func (d *demo) record(ctx context.Context, key, who string) error {
	return d.rc.Do(ctx, d.rc.B().Rpush().Key(key).Element(who).Build()).Error()
}

// recordAndUnlock is the end of who's job: it writes who into the ledger
// and unlocks m, the lock who holds.
func (d *demo) recordAndUnlock(ctx context.Context, ledger, who string, m interlock.Locker) error {
	if err := d.record(ctx, ledger, who); err != nil {
		return err
	}
	d.chart.note(who, "writes the ledger")
	if err := m.Unlock(ctx); err != nil {
		return err
	}
	d.chart.released(who, nil)
	return nil
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
