package interlockotel

import (
	"errors"
	"runtime/debug"
	"strconv"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/interlock-go/interlock"
)

// ScopeName is the instrumentation scope of the Observer's metrics and
// spans. The scope's version is the version of this module the binary was
// built with, from its build information (runtime/debug.ReadBuildInfo), or
// "v0.0.0-devel" for a build without a published version of it (a test of
// this module, a workspace, a replace directive pointing at a directory).
const ScopeName = "github.com/interlock-go/interlock/interlockotel"

// develVersion is the scope's version when the binary's build information
// has no published version of this module.
const develVersion = "v0.0.0-devel"

// version is the scope's version.
var version = sync.OnceValue(func() string {
	bi, _ := debug.ReadBuildInfo()
	return moduleVersion(bi)
})

// moduleVersion is this module's version in bi, or develVersion.
func moduleVersion(bi *debug.BuildInfo) string {
	if bi == nil {
		return develVersion
	}
	for _, m := range append([]*debug.Module{&bi.Main}, bi.Deps...) {
		if m == nil || m.Path != ScopeName {
			continue
		}
		v := m.Version
		if m.Replace != nil {
			v = m.Replace.Version
		}
		if v != "" && v != "(devel)" && v != "v0.0.0" {
			return v
		}
	}
	return develVersion
}

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
	// KeyReason (interlock.losses only) is why a hold was lost: one of
	// the Reason constants.
	KeyReason = attribute.Key("interlock.reason")
	// KeyAttempts (spans only) counts an acquisition's scripts, or a
	// release's sends.
	KeyAttempts = attribute.Key("interlock.attempts")
	// KeyPermits (spans only) is how many permits a semaphore operation
	// asked for; absent for locks.
	KeyPermits = attribute.Key("interlock.permits")
)

// The values of KeyReason, one per reason interlock gives a loss.
const (
	ReasonLeaseExpired  = "lease_expired"  // interlock.ErrLeaseExpired
	ReasonNotRenewed    = "not_renewed"    // interlock.ErrNotRenewed
	ReasonKeyGone       = "key_gone"       // interlock.ErrKeyGone
	ReasonForceUnlocked = "force_unlocked" // interlock.ErrForceUnlocked
	ReasonMaxHold       = "max_hold"       // interlock.ErrMaxHold
	ReasonUnknown       = "unknown"        // a cause with none of them
)

// reason returns the Reason value of a loss's cause.
func reason(cause error) string {
	switch {
	case errors.Is(cause, interlock.ErrMaxHold):
		return ReasonMaxHold
	case errors.Is(cause, interlock.ErrLeaseExpired):
		return ReasonLeaseExpired
	case errors.Is(cause, interlock.ErrNotRenewed):
		return ReasonNotRenewed
	case errors.Is(cause, interlock.ErrKeyGone):
		return ReasonKeyGone
	case errors.Is(cause, interlock.ErrForceUnlocked):
		return ReasonForceUnlocked
	}
	return ReasonUnknown
}

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
	tp                     trace.TracerProvider
	names                  func(string) string
	dropNames              bool
	rootSpans              bool
	waitBounds, holdBounds []float64
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
		c.dropNames = false
		switch m {
		case HashNames:
			c.names = HashName
		case DropNames:
			c.names, c.dropNames = func(string) string { return "" }, true
		default:
			c.names = nil
		}
	}
}

// WithNameFunc maps each name to the value of interlock.name, for example
// "order:1234" to "order:*"; an empty result leaves the attribute out. It
// replaces WithNames, and must be fast and safe for concurrent use.
func WithNameFunc(f func(name string) string) Option {
	return func(c *config) { c.names, c.dropNames = f, false }
}

// WithWaitBuckets sets the bucket boundaries, in seconds, of the
// interlock.acquire.duration and interlock.renewal.duration histograms,
// sorted and without duplicates. The default is 13 boundaries: 0.5ms,
// 1ms, 2.5ms, 5ms, 10ms, 25ms, 50ms, 100ms, 250ms, 500ms, 1s, 2.5s and 10s.
// Each boundary is one more series per histogram series in Prometheus;
// none keeps the default.
func WithWaitBuckets(bounds ...float64) Option {
	return func(c *config) { c.waitBounds = buckets(bounds, nil) }
}

// WithHoldBuckets sets the bucket boundaries, in seconds, of the
// interlock.hold.duration histogram, as WithWaitBuckets does. The default
// is 12 boundaries: 10ms, 50ms, 100ms, 500ms, 1s, 5s, 10s, 30s, 1min, 5min,
// 15min and an hour.
func WithHoldBuckets(bounds ...float64) Option {
	return func(c *config) { c.holdBounds = buckets(bounds, nil) }
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
