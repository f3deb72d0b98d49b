package goid

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIDMatchesStackTrace(t *testing.T) {
	t.Logf("fast path: %v (offset %d)", Fast(), offset)
	var wg sync.WaitGroup
	ids := make(chan int64, 100)
	for range 100 {
		wg.Go(func() {
			fast, err := ID()
			require.NoError(t, err)
			slow, err := Slow()
			require.NoError(t, err)
			assert.Equal(t, slow, fast)
			ids <- fast
		})
	}
	wg.Wait()
	close(ids)
	seen := map[int64]bool{}
	for id := range ids {
		assert.False(t, seen[id], "ids are unique")
		seen[id] = true
	}
}

func TestFastOnThisMachine(t *testing.T) {
	// The supported architectures must calibrate; elsewhere Slow is used.
	if getg() != nil {
		assert.True(t, Fast())
	}
}

func BenchmarkID(b *testing.B) {
	for b.Loop() {
		_, _ = ID()
	}
}

func BenchmarkSlow(b *testing.B) {
	for b.Loop() {
		_, _ = Slow()
	}
}
