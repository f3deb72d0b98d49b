// Package keys derives Redisson's auxiliary key and channel names from a
// lock name and computes Redis Cluster hash slots.
//
// Redisson builds every key that belongs to a lock (its pub/sub channel,
// unlock latches, fair-lock queue, reader timeouts, fencing token) from the
// lock's name with two rules that differ only in where the decoration goes.
// Both rules test whether the name contains a "{" at all, not whether it
// has a valid hash tag; that is what keeps Java and Go on the same keys, so
// it is copied exactly here.
package keys

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
)

// The prefixes Redisson puts before a name with Prefix, each naming one
// kind of auxiliary key or channel. They are the wire format shared with
// Java: every package that derives or recognises these names uses them.
const (
	// LockChannelPrefix names the channel on which reentrant, fair, fenced
	// and spin locks announce a release (LockChannel); a fair waiter
	// listens on LockChannel(name) + ":" + its owner.
	LockChannelPrefix = "redisson_lock__channel"
	// UnlockLatchPrefix names the keys that make an unlock idempotent
	// (UnlockLatch).
	UnlockLatchPrefix = "redisson_unlock_latch"
	// ReceiptPrefix names the keys that make a semaphore or latch call
	// safe to resend (Receipt); interlock's own, unknown to Redisson.
	ReceiptPrefix = "interlock_receipt"
	// SemaphoreChannelPrefix names the channel of both Redisson semaphores
	// (SemaphoreChannel).
	SemaphoreChannelPrefix = "redisson_sc"
	// FairQueuePrefix names a fair lock's queue of waiting owners, a list:
	// Prefix(FairQueuePrefix, name).
	FairQueuePrefix = "redisson_lock_queue"
	// FairTimeoutPrefix names a fair lock's sorted set of waiter
	// deadlines: Prefix(FairTimeoutPrefix, name).
	FairTimeoutPrefix = "redisson_lock_timeout"
	// FenceTokenPrefix names a fenced lock's token counter:
	// Prefix(FenceTokenPrefix, name).
	FenceTokenPrefix = "redisson_lock_token"
	// ReadWriteChannelPrefix names a read/write lock's channel:
	// Prefix(ReadWriteChannelPrefix, name).
	ReadWriteChannelPrefix = "redisson_rwlock"
	// LeaderPrefix names an election's value key, interlock's own: a hash
	// of the leader's owner, token and value that lives as long as the
	// leader's hold on the fenced lock of the same name (LeaderValue).
	LeaderPrefix = "interlock_leader"
	// LeaderChannelPrefix names the channel on which an election's Go
	// leaders announce a new term (LeaderChannel); interlock's own, unknown
	// to Redisson.
	LeaderChannelPrefix = "interlock_leader__channel"
)

// LatchChannelPrefix is what LatchChannel puts before "{name}"; unlike the
// other prefixes it is not followed by ":".
const LatchChannelPrefix = "redisson_countdownlatch__channel__"

// The suffixes Redisson puts after a name with Suffix.
const (
	// ReadTimeoutSuffix names the timeout key of hold k of a read/write
	// lock's reader owner: Suffix(name, owner + ":" + ReadTimeoutSuffix +
	// ":" + k).
	ReadTimeoutSuffix = "rwlock_timeout"
	// PermitsSuffix names an expirable semaphore's sorted set of acquired
	// permits: Suffix(name, PermitsSuffix).
	PermitsSuffix = "timeout"
	// RateValueSuffix names a rate limiter's count of free permits:
	// Suffix(name, RateValueSuffix), and + ":" + client id per client.
	RateValueSuffix = "value"
	// RatePermitsSuffix names a rate limiter's sorted set of the permits
	// taken in its window: Suffix(name, RatePermitsSuffix), and + ":" +
	// client id per client.
	RatePermitsSuffix = "permits"
)

// RateLimiter returns a rate limiter's five keys, in the order its
// scripts take them: the config hash (the name), {name}:value,
// {name}:value:<clientID>, {name}:permits, {name}:permits:<clientID>
// (Redisson's RedissonRateLimiter, where clientID is the RedissonClient's
// id). All are in the name's cluster slot.
func RateLimiter(name, clientID string) []string {
	value, permits := Suffix(name, RateValueSuffix), Suffix(name, RatePermitsSuffix)
	return []string{name, value, Suffix(value, clientID), permits, Suffix(permits, clientID)}
}

// Prefix returns prefix + ":" + name when name contains "{", and
// prefix + ":{" + name + "}" otherwise (Redisson's prefixName).
func Prefix(prefix, name string) string {
	var b strings.Builder
	b.Grow(len(prefix) + len(name) + 3)
	writePrefix(&b, prefix, name)
	return b.String()
}

// writePrefix writes Prefix(prefix, name) to b.
func writePrefix(b *strings.Builder, prefix, name string) {
	b.WriteString(prefix)
	if strings.Contains(name, "{") {
		b.WriteByte(':')
		b.WriteString(name)
	} else {
		b.WriteString(":{")
		b.WriteString(name)
		b.WriteByte('}')
	}
}

// Suffix returns name + ":" + suffix when name contains "{", and
// "{" + name + "}:" + suffix otherwise (Redisson's suffixName).
func Suffix(name, suffix string) string {
	if strings.Contains(name, "{") {
		return name + ":" + suffix
	}
	return "{" + name + "}:" + suffix
}

// LockChannel is the channel on which reentrant and fenced locks announce
// a release: redisson_lock__channel:{name}.
func LockChannel(name string) string { return Prefix(LockChannelPrefix, name) }

// LeaderValue is an election's value key, in the lock's slot:
// interlock_leader:{name}.
func LeaderValue(name string) string { return Prefix(LeaderPrefix, name) }

// LeaderChannel is the channel on which an election's Go leaders announce
// their terms: interlock_leader__channel:{name}.
func LeaderChannel(name string) string { return Prefix(LeaderChannelPrefix, name) }

// UnlockLatch is the key that makes one logical unlock idempotent:
// redisson_unlock_latch:{name}:<requestID>.
func UnlockLatch(name, requestID string) string {
	return Prefix(UnlockLatchPrefix, name) + ":" + requestID
}

// NewUnlockLatch is UnlockLatch(name, RequestID()), built in one
// allocation.
func NewUnlockLatch(name string) string { return fresh(UnlockLatchPrefix, name) }

// NewReceipt is Receipt(name, RequestID()), built in one allocation.
func NewReceipt(name string) string { return fresh(ReceiptPrefix, name) }

// fresh returns Prefix(prefix, name) + ":" + RequestID().
func fresh(prefix, name string) string {
	id := random16()
	var b strings.Builder
	b.Grow(len(prefix) + len(name) + 4 + 2*len(id))
	writePrefix(&b, prefix, name)
	b.WriteByte(':')
	var h [2 * len(id)]byte
	hex.Encode(h[:], id[:])
	b.Write(h[:])
	return b.String()
}

// Receipt is the key that makes one semaphore or latch operation safe to
// resend: interlock_receipt:{name}:<requestID>, in the name's slot.
func Receipt(name, requestID string) string {
	return Prefix(ReceiptPrefix, name) + ":" + requestID
}

// SemaphoreChannel is the channel on which both Redisson semaphores
// announce permits: redisson_sc:{name}.
func SemaphoreChannel(name string) string { return Prefix(SemaphoreChannelPrefix, name) }

// LatchChannel is the count-down latch's channel. Unlike every other
// channel it always wraps the name in braces, as Redisson does, so a name
// with braces puts it in another cluster slot than the latch.
func LatchChannel(name string) string { return LatchChannelPrefix + "{" + name + "}" }

// RequestID returns 16 random bytes as 32 lower-case hex characters, the
// form Redisson uses for unlock request ids.
func RequestID() string {
	b := random16()
	return hex.EncodeToString(b[:])
}

// random16 returns 16 bytes from the runtime's generator (ChaCha8, seeded
// by the system): a request id must not repeat, and needs no secrecy.
// It costs a fraction of crypto/rand's system call on every unlock.
func random16() [16]byte {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
	return b
}

// Check reports whether name can be used as a lock name: it must be
// non-empty, and every key Redisson derives from it must hash to the same
// cluster slot as the name itself, or scripts that touch several of them
// fail with CROSSSLOT on a cluster. Names such as "a{b", "{}x" or "x}y"
// fail; so that a name behaves the same everywhere, they are refused on
// standalone servers too.
func Check(name string) error {
	if name == "" {
		return fmt.Errorf("name is empty")
	}
	slot := Slot(name)
	for _, derived := range [...]string{LockChannel(name), Suffix(name, "x")} {
		if s := Slot(derived); s != slot {
			return fmt.Errorf("name %q: derived key %q is in cluster slot %d, the name in slot %d (use a name without braces, or one with a complete, non-empty {hash tag})", name, derived, s, slot)
		}
	}
	return nil
}
