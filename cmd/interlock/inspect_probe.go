package main

import (
	"context"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/keys"
)

// Redisson's keys beside the lock key, named with keys.Prefix.
const (
	prefixFairQueue    = "redisson_lock_queue"
	prefixFairTimeouts = "redisson_lock_timeout"
	prefixFenceToken   = "redisson_lock_token"
)

// probe reads the facts about one lock in a single round trip. All the
// keys share the lock's cluster slot (keys.Check made sure of it), so the
// pipeline goes to one node. The TYPE and the reads that follow are not
// one atomic snapshot: a lock that changes meanwhile can show, say, a
// TTL of a key that has just vanished; decode copes with that.
func probe(ctx context.Context, rc rueidis.Client, name string) (*facts, error) {
	b := rc.B()
	res := rc.DoMulti(ctx,
		b.Type().Key(name).Build(),
		b.Pttl().Key(name).Build(),
		b.Hgetall().Key(name).Build(),
		b.Exists().Key(keys.Prefix(prefixFairQueue, name)).Build(),
		b.Exists().Key(keys.Prefix(prefixFairTimeouts, name)).Build(),
		b.Get().Key(keys.Prefix(prefixFenceToken, name)).Build(),
	)
	f := &facts{name: name}
	var err error
	if f.keyType, err = res[0].ToString(); err != nil {
		return nil, err
	}
	if f.pttl, err = res[1].AsInt64(); err != nil {
		return nil, err
	}
	if f.keyType == "hash" {
		// A WRONGTYPE error here means the key changed type meanwhile;
		// it then shows as a hash without holders.
		if f.fields, err = res[2].AsStrMap(); err != nil && !isRedisError(err) {
			return nil, err
		}
	}
	var n int64
	if n, err = res[3].AsInt64(); err != nil {
		return nil, err
	}
	f.fairQueue = n == 1
	if n, err = res[4].AsInt64(); err != nil {
		return nil, err
	}
	f.fairTimes = n == 1
	if f.fenceToken, err = res[5].ToString(); err != nil {
		if !rueidis.IsRedisNil(err) && !isRedisError(err) {
			return nil, err
		}
		f.fenceToken = ""
	}
	return f, nil
}

// isRedisError reports whether err is an error reply from Redis (such as
// WRONGTYPE) rather than a failure to talk to it.
func isRedisError(err error) bool {
	_, ok := rueidis.IsRedisErr(err)
	return ok
}
