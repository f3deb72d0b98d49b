package spin

import (
	"testing"
	"time"
)

func TestExponentialBackoffIsRedissons(t *testing.T) {
	next := exponential(DefaultInitialDelay, DefaultMaxDelay, DefaultMultiplier)()
	// 1, 2, 4-5, 8-12, 16-27, 32-58, 64-121, then 128 for ever.
	lows := []time.Duration{1, 2, 4, 8, 16, 32, 64, 128, 128}
	highs := []time.Duration{1, 2, 5, 12, 27, 58, 121, 128, 128}
	for i := range lows {
		d := next()
		if d < lows[i]*time.Millisecond || d > highs[i]*time.Millisecond {
			t.Fatalf("pause %d = %v, want %v..%v ms", i+1, d, lows[i], highs[i])
		}
	}
	if again := exponential(DefaultInitialDelay, DefaultMaxDelay, DefaultMultiplier)()(); again != time.Millisecond {
		t.Fatalf("a new acquisition starts at %v, want 1ms", again)
	}
}
