package renewal_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/renewal"
)

// BenchmarkRound is one renewal round of a Client's watchdog holds on the
// package's standalone server: Slots64, 64 holds on 64 distinct slots;
// OneSlot64, 64 holds sharing a hash tag; Keys10000, 10,000 holds named
// without hash tags (on 7,608 distinct slots). One op is one round,
// sent and answered. Run with:
//
//	go test -run '^$' -bench '^BenchmarkRound$' -count 10 ./internal/renewal
func BenchmarkRound(b *testing.B) {
	b.Run("Slots64", func(b *testing.B) { benchRound(b, 64, false) })
	b.Run("OneSlot64", func(b *testing.B) { benchRound(b, 64, true) })
	b.Run("Keys10000", func(b *testing.B) { benchRound(b, 10000, false) })
}

// benchRound holds n names: tagged, all in one slot; otherwise on distinct
// slots while there are fewer than 1,000, else as they come.
func benchRound(b *testing.B, n int, tagged bool) {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(rc.Close)
	ctx := context.Background()
	// An hour: no tick runs during the benchmark, only its rounds.
	s, err := renewal.New(rc, renewal.Config{Lease: time.Hour, BatchSize: 100})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	slots := map[uint16]bool{}
	var names []string
	for i := 0; len(names) < n; i++ {
		name := "bench:round:" + strconv.Itoa(i)
		if tagged {
			name = "{bench:round}:" + strconv.Itoa(i)
		} else if n < 1000 && slots[keys.Slot(name)] {
			continue
		}
		slots[keys.Slot(name)] = true
		names = append(names, name)
	}
	var setup rueidis.Commands
	for _, name := range names {
		setup = append(setup,
			rc.B().Hset().Key(name).FieldValue().FieldValue("me:1", "1").Build(),
			rc.B().Pexpire().Key(name).Milliseconds(time.Hour.Milliseconds()).Build())
	}
	for _, r := range rc.DoMulti(ctx, setup...) {
		if err := r.Error(); err != nil {
			b.Fatal(err)
		}
	}
	b.Cleanup(func() {
		for _, name := range names {
			rc.Do(ctx, rc.B().Del().Key(name).Build())
		}
	})
	now := time.Now()
	for _, name := range names {
		if err := s.Hold(name, "me:1", task, 0, now); err != nil {
			b.Fatal(err)
		}
	}
	renewal.RenewRound(ctx, s) // loads the script
	for b.Loop() {
		renewal.RenewRound(ctx, s)
	}
	if s.Len() != n {
		b.Fatalf("%d holds left of %d", s.Len(), n)
	}
}
