package keys

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSlotVectors(t *testing.T) {
	for key, want := range map[string]uint16{
		"123456789":                         12739,
		"myLock":                            12769,
		"redisson_lock__channel:{myLock}":   12769,
		"myFair":                            11928,
		"redisson_lock_queue:{myFair}":      11928,
		"myRW":                              9218,
		"{myRW}:A:1:rwlock_timeout:1":       9218,
		"myFenced":                          2117,
		"redisson_lock_token:{myFenced}":    2117,
		"{order}:42":                        16025,
		"redisson_lock__channel:{order}:42": 16025,
		"a{b":                               13340,
		"redisson_lock__channel:a{b":        3200,
	} {
		assert.Equal(t, want, Slot(key), key)
	}
}

func TestSlotHashTags(t *testing.T) {
	// From the Redis Cluster specification.
	assert.Equal(t, uint16(12182), Slot("foo"))
	assert.Equal(t, Slot("bar"), Slot("foo{bar}{zap}"))
	assert.Equal(t, Slot("{bar"), Slot("foo{{bar}}zap"))
	assert.Equal(t, Slot("user1000"), Slot("{user1000}.following"))
	assert.NotEqual(t, Slot("bar"), Slot("foo{}{bar}"), "an empty tag hashes the whole key")
}

func TestDerivedNames(t *testing.T) {
	assert.Equal(t, "redisson_lock__channel:{myLock}", LockChannel("myLock"))
	assert.Equal(t, "redisson_lock__channel:{order}:42", LockChannel("{order}:42"))
	assert.Equal(t, "{myRW}:A:1:rwlock_timeout:1", Suffix("myRW", "A:1:rwlock_timeout:1"))
	assert.Equal(t, "{order}:42:x", Suffix("{order}:42", "x"))
	assert.Equal(t, "redisson_unlock_latch:{myLock}:0f6b", UnlockLatch("myLock", "0f6b"))
	// "contains {" is the rule, not "has a valid tag".
	assert.Equal(t, "redisson_lock__channel:a{b", LockChannel("a{b"))
}

// The prefixes and suffixes are Redisson's wire format: a change here
// moves every Go client off the keys Java uses.
func TestPrefixesAndSuffixes(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Prefix(LockChannelPrefix, "n"), "redisson_lock__channel:{n}"},
		{Prefix(UnlockLatchPrefix, "n"), "redisson_unlock_latch:{n}"},
		{Prefix(ReceiptPrefix, "n"), "interlock_receipt:{n}"},
		{Prefix(SemaphoreChannelPrefix, "n"), "redisson_sc:{n}"},
		{Prefix(FairQueuePrefix, "n"), "redisson_lock_queue:{n}"},
		{Prefix(FairTimeoutPrefix, "n"), "redisson_lock_timeout:{n}"},
		{Prefix(FenceTokenPrefix, "n"), "redisson_lock_token:{n}"},
		{Prefix(ReadWriteChannelPrefix, "n"), "redisson_rwlock:{n}"},
		{LatchChannel("n"), "redisson_countdownlatch__channel__{n}"},
		{Suffix("n", "A:1:"+ReadTimeoutSuffix+":1"), "{n}:A:1:rwlock_timeout:1"},
		{Suffix("n", PermitsSuffix), "{n}:timeout"},
	} {
		assert.Equal(t, c.want, c.got)
	}
}

func TestCheck(t *testing.T) {
	for _, ok := range []string{"myLock", "orders:42", "{order}:42", "a{b}c", "é:ü"} {
		assert.NoError(t, Check(ok), ok)
	}
	for _, bad := range []string{"", "a{b", "{}x", "a}{b", "x}y"} {
		assert.Error(t, Check(bad), bad)
	}
}

func TestRequestID(t *testing.T) {
	id := RequestID()
	assert.Regexp(t, `^[0-9a-f]{32}$`, id)
	assert.NotEqual(t, id, RequestID())
}

func TestNewLatchAndReceipt(t *testing.T) {
	for _, name := range []string{"lock", "a{b}c"} {
		latch, receipt := NewUnlockLatch(name), NewReceipt(name)
		assert.Regexp(t, `^`+regexp.QuoteMeta(UnlockLatch(name, ""))+`[0-9a-f]{32}$`, latch)
		assert.Regexp(t, `^`+regexp.QuoteMeta(Receipt(name, ""))+`[0-9a-f]{32}$`, receipt)
		assert.Equal(t, Slot(name), Slot(latch))
		assert.NotEqual(t, latch, NewUnlockLatch(name))
	}
}
