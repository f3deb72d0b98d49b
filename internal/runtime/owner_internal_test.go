package runtime

import (
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOwnerNames checks the owner cache: ids that share a slot, looked up
// in turn and at once from several goroutines, each get their own string.
func TestOwnerNames(t *testing.T) {
	var c ownerNames
	const client = "6f1c1f0e-2b7a-4c1e-9a55-1d3c2b4a5e6f"
	ids := []int64{1, 1 + ownerCacheSize, 1 + 2*ownerCacheSize, 7, 1 << 40}
	for range 3 {
		for _, id := range ids {
			require.Equal(t, client+":"+strconv.FormatInt(id, 10), c.name(client, id))
		}
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 10000 {
				id := ids[(g+i)%len(ids)]
				if got, want := c.name(client, id), client+":"+strconv.FormatInt(id, 10); got != want {
					t.Errorf("id %d: got %q, want %q", id, got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}
