package interlockotel

import (
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the Observer's metrics and
// spans.
const ScopeName = "github.com/interlock-go/interlock/interlockotel"

// Attribute keys of the metrics and spans.
const (
	// KeyKind is the synchronizer's kind: one of interlock's Kind
	// constants, such as "rlock" or "semaphore.expirable".
	KeyKind = attribute.Key("interlock.kind")
	// KeyName is the object's name as the caller gave it, hashed or left
	// out according to WithNames.
	KeyName = attribute.Key("interlock.name")
	// KeyOutcome is the operation's outcome: one of interlock's Outcome
	// constants, such as "acquired" or "timed_out".
	KeyOutcome = attribute.Key("interlock.outcome")
	// KeyAttempts (spans only) counts an acquisition's scripts, or a
	// release's sends.
	KeyAttempts = attribute.Key("interlock.attempts")
	// KeyPermits (spans only) is how many permits a semaphore operation
	// asked for; absent for locks.
	KeyPermits = attribute.Key("interlock.permits")
)

// NameMode says what the Observer does with object names.
type NameMode int

const (
	// KeepNames puts each name into interlock.name as given. Every name
	// is a series of each metric: use it when names are few.
	KeepNames NameMode = iota
	// HashNames puts a stable 8-hex-digit hash of the name (FNV-1a, 32
	// bits) in its place: the same name gives the same value in every
	// process and release, and the name itself is not exported.
	HashNames
	// DropNames leaves interlock.name out, so the series are bounded by
	// the kinds and outcomes alone.
	DropNames
)

// String returns "keep", "hash" or "drop".
func (m NameMode) String() string {
	switch m {
	case KeepNames:
		return "keep"
	case HashNames:
		return "hash"
	case DropNames:
		return "drop"
	}
	return "NameMode(" + strconv.Itoa(int(m)) + ")"
}

// Option configures an Observer.
type Option func(*config)

type config struct {
	tp        trace.TracerProvider
	names     func(string) string
	rootSpans bool
}

// WithTracerProvider sets where the spans go; the default is otel's global
// TracerProvider. A noop provider turns spans off.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tp = tp }
}

// WithNames sets what metrics and spans carry in interlock.name: the name
// (KeepNames, the default), a hash of it, or nothing.
func WithNames(m NameMode) Option {
	return func(c *config) {
		switch m {
		case HashNames:
			c.names = HashName
		case DropNames:
			c.names = func(string) string { return "" }
		default:
			c.names = nil
		}
	}
}

// WithNameFunc maps each name to the value of interlock.name, for example
// "order:1234" to "order:*"; an empty result leaves the attribute out. It
// replaces WithNames, and must be fast and safe for concurrent use.
func WithNameFunc(f func(name string) string) Option {
	return func(c *config) { c.names = f }
}

// WithRootSpans makes acquire and release spans also when the operation's
// context carries no span, each the root of a trace of its own (as the
// TracerProvider's sampler decides). By default such operations make no
// span: a span is always a child of the caller's.
func WithRootSpans() Option {
	return func(c *config) { c.rootSpans = true }
}

// HashName is the value HashNames gives name: FNV-1a (32 bits) as 8 lower
// hex digits.
func HashName(name string) string {
	h := uint32(2166136261)
	for i := 0; i < len(name); i++ {
		h ^= uint32(name[i])
		h *= 16777619
	}
	const hex = "0123456789abcdef"
	var b [8]byte
	for i := 7; i >= 0; i-- {
		b[i] = hex[h&0xf]
		h >>= 4
	}
	return string(b[:])
}
