// Package renewal keeps Redis keys of your own alive while your process
// works on them, with the batched watchdog that renews interlock's locks: a
// Keeper renews every kept key once a third of its TTL, in one script call
// per batch of keys of one hash slot, all in one pipeline, from one
// goroutine, and tells you when a key it keeps is gone.
//
//	k, err := renewal.NewKeeper(rc, 30*time.Second)
//	...
//	defer k.Close()
//	ctx, err := k.Keep(ctx, "job:42:claim") // the key must exist
//	if err != nil {
//		return err
//	}
//	defer k.Release("job:42:claim")
//	work(ctx) // ctx ends, with cause ErrLost, if the key disappears
//
// A Keeper only extends TTLs: it never creates, changes or deletes a key.
// If your process stops, the keys it kept expire within one TTL. Locks are
// renewed by the interlock Client itself; a Keeper is for everything else.
package renewal

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/renewal"
	"github.com/interlock-go/interlock/internal/script"
)

var (
	// ErrLost is the cause of a kept key's context when the key was found
	// gone (deleted, or expired before a renewal reached it).
	ErrLost = errors.New("renewal: kept key is gone")
	// ErrClosed is returned by Keep after Close, and is the cause of every
	// kept key's context when the Keeper closes.
	ErrClosed = errors.New("renewal: keeper closed")
)

// owner is the single owner every kept key is held by: a Keeper counts
// Keep calls per key.
const owner = "keeper"

// Keeper renews the TTLs of the keys it keeps. Its methods are safe for
// concurrent use.
type Keeper struct {
	rc    rueidis.Client
	ttl   time.Duration
	sched *renewal.Scheduler
	task  *renewal.Task
}

// NewKeeper returns a Keeper that sets ttl (at least 30 ms, whole
// milliseconds) on the keys it keeps, through rc, which it never closes.
func NewKeeper(rc rueidis.Client, ttl time.Duration) (*Keeper, error) {
	switch {
	case rc == nil:
		return nil, errors.New("renewal: NewKeeper: nil client")
	case ttl < 30*time.Millisecond || ttl%time.Millisecond != 0:
		return nil, fmt.Errorf("renewal: NewKeeper: TTL %v, want whole milliseconds of at least 30ms", ttl)
	}
	s, err := renewal.New(rc, renewal.Config{
		Lease:     ttl,
		BatchSize: 100,
		Closed:    ErrClosed,
	})
	if err != nil {
		return nil, err
	}
	task := &renewal.Task{
		Script: script.Keep(),
		Args: func(lease time.Duration, chunk []*renewal.Entry) ([]string, []string) {
			ks := make([]string, len(chunk))
			for i, e := range chunk {
				ks[i] = e.Key
			}
			return ks, []string{strconv.FormatInt(lease.Milliseconds(), 10)}
		},
		Lost: ErrLost,
	}
	return &Keeper{rc: rc, ttl: ttl, sched: s, task: task}, nil
}

// Keep sets key's TTL now and keeps renewing it until a matching Release.
// The context it returns, derived from ctx, ends with cause ErrLost if the
// key is found gone, or Canceled once released; a missing key is ErrLost.
func (k *Keeper) Keep(ctx context.Context, key string) (context.Context, error) {
	if key == "" {
		return nil, errors.New("renewal: Keep: empty key")
	}
	sent := time.Now()
	ok, err := k.rc.Do(ctx, k.rc.B().Pexpire().Key(key).Milliseconds(k.ttl.Milliseconds()).Build()).AsBool()
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, fmt.Errorf("%w: %s does not exist", ErrLost, key)
	}
	if err := k.sched.Hold(key, owner, k.task, 0, sent); err != nil {
		if errors.Is(err, renewal.ErrClosed) {
			return nil, ErrClosed
		}
		return nil, err
	}
	g, _ := k.sched.Guard(ctx, key, owner)
	return g, nil
}

// Release ends one Keep of key; with the last one renewal stops and the key
// keeps the TTL it has. It never touches the key.
func (k *Keeper) Release(key string) {
	// One hold fewer; with none left the Scheduler forgets the key.
	if _, held, end := k.sched.Release(key, owner); held {
		end(renewal.Decremented)
	}
}

// Close stops renewing every key and returns once the Keeper's goroutine
// has exited; the kept keys' contexts end with cause ErrClosed.
func (k *Keeper) Close() { k.sched.Close() }
