package lockcore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A queued waiter asks again well before its turn could lapse: within a
// quarter of its wait timeout, at most a second, at least fairRetryMin.
func TestQueuedWait(t *testing.T) {
	for _, c := range []struct{ grace, want time.Duration }{
		{5 * time.Minute, maxQueuedWait},
		{4 * time.Second, time.Second},
		{2 * time.Second, 500 * time.Millisecond},
		{100 * time.Millisecond, 25 * time.Millisecond},
		{time.Millisecond, fairRetryMin},
	} {
		assert.Equal(t, c.want, queuedWait(c.grace), "grace %v", c.grace)
	}
}
