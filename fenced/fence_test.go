package fenced_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/fenced"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/script"
)

func TestFenceAdmit(t *testing.T) {
	var f fenced.Fence
	assert.True(t, f.Admit(5))
	assert.True(t, f.Admit(5), "the same holder again")
	assert.False(t, f.Admit(4))
	assert.True(t, f.Admit(7))
	assert.False(t, f.Admit(5))
	assert.Equal(t, uint64(7), f.Highest())

	wrote := false
	err := f.Do(6, func() error { wrote = true; return nil })
	assert.ErrorIs(t, err, fenced.ErrStale)
	assert.EqualError(t, err, "fenced: fence: fenced: stale fencing token: token 6, but 7 was admitted")
	assert.False(t, wrote)
	boom := errors.New("boom")
	assert.ErrorIs(t, f.Do(8, func() error { wrote = true; return boom }), boom)
	assert.True(t, wrote)
	assert.Equal(t, uint64(8), f.Highest(), "a write that failed still admitted its token")
	assert.True(t, f.Admit(math.MaxUint64))
	assert.False(t, f.Admit(math.MaxUint64-1))
}

// TestFenceConcurrent: writers race through one Fence with increasing
// tokens that arrive out of order.
// The writes that run see tokens in non-decreasing order and never overlap,
// and every refusal was of a token below one already admitted.
func TestFenceConcurrent(t *testing.T) {
	const writers, writes = 16, 500
	var (
		f       fenced.Fence
		inside  int // guarded by f: writes run one at a time
		applied []uint64
		issued  atomic.Uint64
		wg      sync.WaitGroup
	)
	for w := range writers {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(w), 1))
			for range writes {
				// Tokens are handed out in order but reach the fence in
				// any order, some of them late.
				token := issued.Add(1)
				if rnd.IntN(4) == 0 {
					runtime.Gosched()
				}
				err := f.Do(token, func() error {
					inside++
					if inside != 1 {
						t.Errorf("%d writes at once", inside)
					}
					applied = append(applied, token)
					inside--
					return nil
				})
				if err != nil && !errors.Is(err, fenced.ErrStale) {
					t.Error(err)
				}
				if err != nil && f.Highest() <= token {
					t.Errorf("token %d refused, but the highest is %d", token, f.Highest())
				}
			}
		})
	}
	wg.Wait()
	require.NotEmpty(t, applied)
	for i := 1; i < len(applied); i++ {
		require.LessOrEqual(t, applied[i-1], applied[i], "write %d ran with an older token than write %d", i, i-1)
	}
	assert.Equal(t, applied[len(applied)-1], f.Highest())
	t.Logf("%d of %d writes admitted", len(applied), writers*writes)
}

func TestRedisFence(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	ctx := redistest.Context(t)
	base := "fence-test:" + t.Name()
	fenceKey, data, hash := base+":fence", base+":data", base+":hash"
	t.Cleanup(func() { rc.Do(context.Background(), rc.B().Del().Key(fenceKey, data, hash).Build()) })
	f := fenced.NewRedisFence(rc, fenceKey)
	assert.Equal(t, fenceKey, f.Key())
	get := func(key string) string {
		t.Helper()
		s, err := rc.Do(ctx, rc.B().Get().Key(key).Build()).ToString()
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return s
	}
	highest := func() uint64 {
		t.Helper()
		h, err := f.Highest(ctx)
		require.NoError(t, err)
		return h
	}
	accepted := func(ok bool, err error) bool {
		t.Helper()
		require.NoError(t, err)
		return ok
	}
	// written reports whether a write was admitted: nil, or ErrStale.
	written := func(err error) bool {
		t.Helper()
		if errors.Is(err, fenced.ErrStale) {
			return false
		}
		require.NoError(t, err)
		return true
	}

	assert.Zero(t, highest())
	assert.True(t, written(f.Set(ctx, 5, data, "five")))
	assert.Equal(t, "five", get(data))
	assert.Equal(t, uint64(5), highest())
	assert.True(t, written(f.Set(ctx, 5, data, "five again")), "an equal token passes")
	assert.False(t, written(f.Set(ctx, 4, data, "stale")))
	assert.Equal(t, "five again", get(data), "a refused write changed the data")
	assert.Equal(t, uint64(5), highest())

	// Admit raises the fence without writing.
	assert.True(t, accepted(f.Admit(ctx, 9)))
	assert.False(t, written(f.Set(ctx, 8, data, "stale")))
	assert.Equal(t, "five again", get(data))

	// Several writes, several keys, one step.
	assert.True(t, written(f.Exec(ctx, 9,
		fenced.Write{Cmd: "SET", Key: data, Args: []string{"nine"}},
		fenced.Write{Cmd: "HSET", Key: hash, Args: []string{"a", "1", "b", "2"}},
		fenced.Write{Cmd: "HINCRBY", Key: hash, Args: []string{"a", "10"}},
		fenced.Write{Cmd: "PEXPIRE", Key: data, Args: []string{"60000"}},
	)))
	assert.Equal(t, "nine", get(data))
	fields, err := rc.Do(ctx, rc.B().Hgetall().Key(hash).Build()).AsStrMap()
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": "11", "b": "2"}, fields)
	assert.True(t, written(f.HSet(ctx, 10, hash, "b", "3")))
	assert.False(t, written(f.Del(ctx, 9, data, hash)))
	assert.True(t, written(f.Del(ctx, 10, data, hash)))
	n, err := rc.Do(ctx, rc.B().Exists().Key(data, hash).Build()).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n)

	// Tokens beyond 2^53 compare exactly, which Lua numbers could not.
	assert.True(t, accepted(f.Admit(ctx, 1<<53+1)))
	assert.False(t, accepted(f.Admit(ctx, 1<<53)))
	assert.True(t, accepted(f.Admit(ctx, math.MaxUint64)))
	assert.False(t, accepted(f.Admit(ctx, math.MaxUint64-1)))
	assert.Equal(t, uint64(math.MaxUint64), highest())

	// The fence key never expires.
	pttl, err := rc.Do(ctx, rc.B().Pttl().Key(fenceKey).Build()).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(-1), pttl)
}

// TestRedisFenceFailures: a failing write stops the script (the token and
// earlier writes stay, as with EXEC); a fence key that holds no token and
// malformed arguments are errors before anything changes.
func TestRedisFenceFailures(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	ctx := redistest.Context(t)
	base := "fence-test:" + t.Name()
	fenceKey, data, list := base+":fence", base+":data", base+":list"
	t.Cleanup(func() { rc.Do(context.Background(), rc.B().Del().Key(fenceKey, data, list).Build()) })
	f := fenced.NewRedisFence(rc, fenceKey)
	require.NoError(t, rc.Do(ctx, rc.B().Rpush().Key(list).Element("x").Build()).Error())

	err := f.Exec(ctx, 3,
		fenced.Write{Cmd: "SET", Key: data, Args: []string{"v"}},
		fenced.Write{Cmd: "HSET", Key: list, Args: []string{"f", "v"}}) // WRONGTYPE
	require.Error(t, err)
	assert.Contains(t, err.Error(), "WRONGTYPE")
	s, err := rc.Do(ctx, rc.B().Get().Key(data).Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "v", s)
	h, err := f.Highest(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), h)

	// Called directly, the script checks its arguments first.
	eval := func(argv ...string) error {
		return script.FenceWrite().Exec(ctx, rc, []string{fenceKey, data}, argv).Error()
	}
	for _, argv := range [][]string{
		{},                          // no token
		{"0"},                       // not a token
		{"-1"},                      // not a token
		{"007"},                     // leading zeros
		{"123456789012345678901"},   // 21 digits
		{"4", "1", "0", "DEL"},      // key index 1 is the fence key
		{"4", "3", "0", "DEL"},      // no KEYS[3]
		{"4", "2", "2", "SET", "v"}, // 2 arguments announced, 1 given
		{"4", "2"},                  // truncated
		{"4", "x", "0", "DEL"},      // not a number
	} {
		err := eval(argv...)
		assert.Error(t, err, "argv %q", argv)
	}
	s, err = rc.Do(ctx, rc.B().Get().Key(data).Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "v", s, "a malformed call wrote")
	h, err = f.Highest(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), h, "a malformed call recorded its token")
	require.NoError(t, eval("4", "2", "1", "SET", "w"))
	s, err = rc.Do(ctx, rc.B().Get().Key(data).Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "w", s)

	require.NoError(t, rc.Do(ctx, rc.B().Set().Key(fenceKey).Value("junk").Build()).Error())
	err = f.Set(ctx, 5, data, "x")
	assert.ErrorContains(t, err, "does not hold a token")
	_, err = f.Highest(ctx)
	assert.Error(t, err)
	require.NoError(t, rc.Do(ctx, rc.B().Set().Key(fenceKey).Value(strconv.Itoa(3)).Build()).Error())

	// A context that ends is returned as itself.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	err = f.Set(cctx, 9, data, "x")
	assert.ErrorIs(t, err, context.Canceled)
}
