package runtime

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/internal/route"
)

// On a cluster the connections aside serve the masters that CLUSTER SLOTS
// names; a command that one of them redirects with MOVED (here: every
// slot wrongly taken for the first master's) runs on the client instead,
// and the table learns where its slot is.
func TestAsideFollowsMoved(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	cl := redistest.Cluster(t)
	rc := cl.Client(t)
	a := newAside(rc, new(route.Table))
	t.Cleanup(a.close)
	a.warm()
	masters := len(cl.Nodes())
	require.Eventually(t, func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return len(a.conns) == masters
	}, 10*time.Second, 10*time.Millisecond, "a connection to every master")

	first := cl.Nodes()[0].Addr()
	a.routes.Store([]route.Range{{First: 0, Last: route.Slots - 1, Addr: first}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var cmds []rueidis.Completed
	var names []string
	for i := range 24 {
		name := fmt.Sprintf("aside:moved:%s:{%d}", t.Name(), i)
		names = append(names, name)
		cmds = append(cmds, rc.B().Set().Key(name).Value("v").Px(time.Minute).Build())
	}
	for i, res := range a.DoMulti(ctx, cmds...) {
		require.NoError(t, res.Error(), "SET %s", names[i])
	}
	learnt := 0
	for _, name := range names {
		v, err := rc.Do(ctx, rc.B().Get().Key(name).Build()).ToString()
		require.NoError(t, err)
		assert.Equal(t, "v", v)
		if addr, _, _ := a.routes.Master(keys.Slot(name)); addr != first {
			learnt++
		}
	}
	assert.Positive(t, learnt, "MOVED replies taught the table other masters")
}
