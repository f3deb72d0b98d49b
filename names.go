package interlock

import (
	"strings"

	"github.com/interlock-go/interlock/internal/renewal"
)

// NameMapper maps every synchronizer name to the Redis key its keys and
// channels are derived from, as Redisson's Config.setNameMapper does; a Go
// and a Java client meet only when their mappers agree. Map must be
// deterministic; Unmap(Map(n)) must return n.
type NameMapper interface {
	// Map returns the name the Client uses in Redis for name.
	Map(name string) string
	// Unmap returns the caller's name for a mapped one.
	Unmap(mapped string) string
}

// PrefixNames returns a NameMapper that puts prefix in front of every name
// and takes it off again (a name without it is unmapped unchanged).
func PrefixNames(prefix string) NameMapper { return prefixNames(prefix) }

type prefixNames string

func (p prefixNames) Map(name string) string     { return string(p) + name }
func (p prefixNames) Unmap(mapped string) string { return strings.TrimPrefix(mapped, string(p)) }

// WithNameMapper has the Client map every name with m before it derives
// any key or channel from it (Redisson's Config.setNameMapper): a lock
// called "orders:42" under PrefixNames("app:") is the hash "app:orders:42"
// and announces on redisson_lock__channel:{app:orders:42}. Name methods,
// errors and the Observer's events report the unmapped name. A mapped
// name that is no valid lock name is refused with ErrInvalid. The default,
// nil, uses names as they are.
func WithNameMapper(m NameMapper) Option {
	return func(c *config) { c.Names = m }
}

// lostName returns the Event kind and the caller's name of a lost hold of
// key, from its engine label; a hold without a named label is named by its
// key as the NameMapper unmaps it.
func (v events) lostName(key string, label *renewal.Label) (kind, name string) {
	if label != nil {
		kind, name = label.Kind, label.Name
	}
	switch {
	case name != "":
	case v.names != nil:
		name = v.names.Unmap(key)
	default:
		name = key
	}
	return kind, name
}
