package keys

import (
	"strings"
	"testing"
)

// fuzzNameSeeds are lock names at the edges: empty, braces in every
// position, binary, invalid UTF-8, glob characters. The seed corpus in
// testdata/fuzz/FuzzNames holds more.
var fuzzNameSeeds = []string{
	"", "a", "orders:42", "{", "}", "{}", "{{", "}}", "}{", "{a}", "a{b}c", "a{b", "{}x", "x}y", "x{}",
	"{a}{b}", "{{a}}", "{a", "a}", "a\x00b", "\xff\xfe", "\xc3", "日本語", "\r\n", "*", "?[a]",
	"redisson_lock__channel:{x}", strings.Repeat("k", 1<<16), "{" + strings.Repeat("k", 4096) + "}",
}

// refHashTag is the Redis Cluster hash-tag rule, written independently
// of hashTag: the bytes between the first "{" and the first "}" after it,
// when there are any; otherwise the whole key.
func refHashTag(key string) string {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return key
	}
	n := strings.IndexByte(key[open+1:], '}')
	if n <= 0 {
		return key
	}
	return key[open+1 : open+1+n]
}

// refSlot is CRC16/XMODEM bit by bit, without the table.
func refSlot(key string) uint16 {
	var crc uint16
	for _, b := range []byte(refHashTag(key)) {
		crc ^= uint16(b) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}

// FuzzNames checks, for any lock name, that nothing panics, that slots
// follow the Redis rule, and that a name Check accepts has every derived
// key and channel of every lock kind in its own slot and distinct from the
// name itself; a refused name gets a clear error.
func FuzzNames(f *testing.F) {
	for _, s := range fuzzNameSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if got, want := Slot(name), refSlot(name); got != want {
			t.Fatalf("Slot(%q) = %d, want %d", name, got, want)
		}
		err, again := Check(name), Check(name)
		if (err == nil) != (again == nil) || (err != nil && err.Error() != again.Error()) {
			t.Fatalf("Check(%q) is not deterministic: %v, then %v", name, err, again)
		}
		derived := map[string]string{
			"lock channel":      LockChannel(name),
			"fair waiter":       LockChannel(name) + ":0e7f6b5c-1111-4222-8333-444455556666:1",
			"unlock latch":      UnlockLatch(name, RequestID()),
			"fair queue":        Prefix("redisson_lock_queue", name),
			"fair deadlines":    Prefix("redisson_lock_timeout", name),
			"fence token":       Prefix("redisson_lock_token", name),
			"rw channel":        Prefix("redisson_rwlock", name),
			"rw reader timeout": Suffix(name, "0e7f6b5c-1111-4222-8333-444455556666:1:rwlock_timeout:1"),
		}
		if err != nil {
			if name != "" && !strings.ContainsAny(name, "{}") {
				t.Fatalf("Check(%q) refused a name without braces: %v", name, err)
			}
			if !strings.Contains(err.Error(), "name") {
				t.Fatalf("Check(%q): unclear error %q", name, err)
			}
			return
		}
		if name == "" {
			t.Fatal("Check accepted the empty name")
		}
		slot := Slot(name)
		for what, key := range derived {
			if s := Slot(key); s != slot {
				t.Fatalf("name %q (slot %d): %s %q is in slot %d", name, slot, what, key, s)
			}
			if key == name {
				t.Fatalf("name %q: %s is the lock key itself", name, what)
			}
			if !strings.Contains(key, name) {
				t.Fatalf("name %q: %s %q does not contain the name", name, what, key)
			}
		}
		if !strings.Contains(name, "{") && derived["lock channel"] != "redisson_lock__channel:{"+name+"}" {
			t.Fatalf("name %q: channel %q is not the name in braces", name, derived["lock channel"])
		}
	})
}
