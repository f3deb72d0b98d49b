package script

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/interlock-go/interlock/lua"
)

// Every embedded script has exactly one accessor.
func TestEveryScriptHasAnAccessor(t *testing.T) {
	loaded := map[string]bool{}
	for _, s := range All() {
		assert.False(t, loaded[s.Name()], "loaded twice: %s", s.Name())
		loaded[s.Name()] = true
	}
	for _, s := range lua.All() {
		assert.True(t, loaded[s.Name()], "%s.lua has no accessor", s.Name())
	}
}
