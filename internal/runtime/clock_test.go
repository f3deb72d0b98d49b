package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/interlock-go/interlock"
)

func TestWallClockDefaultIsTimeNow(t *testing.T) {
	r := newRuntime(t)
	if d := time.Since(r.WallNow()); d < 0 || d > time.Second {
		t.Fatalf("WallNow is %v away from time.Now", d)
	}
}

func TestWallClockInjected(t *testing.T) {
	r := newRuntime(t)
	r.SetWallClock(func() time.Time { return time.Now().Add(time.Hour) })
	if d := r.WallNow().Sub(time.Now()); d < time.Hour-time.Second || d > time.Hour+time.Second {
		t.Fatalf("WallNow is %v ahead, want an hour", d)
	}
	skew, err := r.ClockSkew(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d := skew + time.Hour; d < -time.Second || d > time.Second {
		t.Fatalf("ClockSkew = %v, want about -1h", skew)
	}
}

func TestClockSkewGuard(t *testing.T) {
	ctx := context.Background()
	off := newRuntime(t)
	off.SetWallClock(func() time.Time { return time.Now().Add(10 * time.Second) })
	if err := off.CheckClockSkew(ctx); err != nil {
		t.Fatalf("guard off: %v", err)
	}
	honest := newRuntime(t, interlock.WithClockSkewLimit(time.Second))
	if err := honest.CheckClockSkew(ctx); err != nil {
		t.Fatalf("honest clock: %v", err)
	}
	for _, d := range []time.Duration{10 * time.Second, -10 * time.Second} {
		skewed := newRuntime(t, interlock.WithClockSkewLimit(time.Second))
		skewed.SetWallClock(func() time.Time { return time.Now().Add(d) })
		for range 2 { // measured, then remembered
			if err := skewed.CheckClockSkew(ctx); !errors.Is(err, interlock.ErrClockSkew) {
				t.Fatalf("clock %v off: %v, want ErrClockSkew", d, err)
			}
		}
	}
}
