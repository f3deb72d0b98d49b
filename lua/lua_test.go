package lua

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Every .lua file is loaded by exactly one variable, and has a header.
func TestEveryFileIsLoaded(t *testing.T) {
	loaded := map[string]bool{}
	for _, s := range All() {
		assert.False(t, loaded[s.Name()], "loaded twice: %s", s.Name())
		loaded[s.Name()] = true
		assert.True(t, strings.HasPrefix(s.Source(), "-- "+s.Name()+":"), "%s.lua starts with its header", s.Name())
		for _, part := range []string{"KEYS[1", "ARGV[1", "Returns", "Redisson"} {
			assert.Contains(t, s.Source(), part, "%s.lua header", s.Name())
		}
		assert.Regexp(t, `^[0-9a-f]{40}$`, s.SHA1())
	}
	files, err := fs.Glob(files, "*.lua")
	assert.NoError(t, err)
	for _, f := range files {
		assert.True(t, loaded[strings.TrimSuffix(f, ".lua")], "%s is not loaded by any variable", f)
	}
}
