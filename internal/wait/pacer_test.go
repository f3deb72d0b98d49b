package wait

import (
	"testing"
	"time"
)

func TestPacerAllowsABurstThenOnePerInterval(t *testing.T) {
	var p pacer
	now := time.Unix(1000, 0)
	for i := range RetryBurst {
		if h := p.hold(now); h > 0 {
			t.Fatalf("try %d of the burst held for %v", i+1, h)
		}
		p.spend(now)
	}
	if h := p.hold(now); h != RetryInterval {
		t.Fatalf("after the burst: hold %v, want %v", h, RetryInterval)
	}
	// Paced: one try per interval, whatever the rate of wake-ups.
	tries := 0
	for ms := 0; ms < 1000; ms++ {
		at := now.Add(time.Duration(ms) * time.Millisecond)
		if p.hold(at) <= 0 {
			p.spend(at)
			tries++
		}
	}
	if want := int(time.Second / RetryInterval); tries < want-1 || tries > want+1 {
		t.Fatalf("%d wasted tries in a second, want about %d", tries, want)
	}
	// After a quiet spell the burst is available again.
	later := now.Add(time.Minute)
	for i := range RetryBurst {
		if h := p.hold(later); h > 0 {
			t.Fatalf("after a quiet spell, try %d held for %v", i+1, h)
		}
		p.spend(later)
	}
}

func TestHandedOff(t *testing.T) {
	cases := []struct {
		name                string
		last, next, elapsed time.Duration
		want                bool
	}{
		{"same holder, TTL ran down", 30 * time.Second, 29*time.Second + 995*time.Millisecond, 5 * time.Millisecond, false},
		{"same holder, rounding", 1000 * time.Millisecond, 1002 * time.Millisecond, 0, false},
		{"new holder, fresh TTL", 100 * time.Millisecond, 30 * time.Second, 50 * time.Millisecond, true},
		{"renewed", 20 * time.Second, 30 * time.Second, 10 * time.Second, true},
		{"no TTL before", -1, 30 * time.Second, 0, false},
		{"no TTL now", 30 * time.Second, -1, 0, false},
	}
	for _, c := range cases {
		if got := handedOff(c.last, c.next, c.elapsed); got != c.want {
			t.Errorf("%s: handedOff(%v, %v, %v) = %v, want %v", c.name, c.last, c.next, c.elapsed, got, c.want)
		}
	}
}
