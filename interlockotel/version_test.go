package interlockotel

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The scope's version is the module's as the build information has it: a
// published one, or the version a replace directive names; otherwise
// v0.0.0-devel.
func TestModuleVersion(t *testing.T) {
	main := debug.Module{Path: "example.com/app", Version: "(devel)"}
	dep := func(v string, replace *debug.Module) *debug.Module {
		return &debug.Module{Path: ScopeName, Version: v, Replace: replace}
	}
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"none", nil, develVersion},
		{"published", &debug.BuildInfo{Main: main, Deps: []*debug.Module{dep("v1.2.3", nil)}}, "v1.2.3"},
		{"replaced by a version", &debug.BuildInfo{Main: main, Deps: []*debug.Module{dep("v1.2.3", &debug.Module{Path: "example.com/fork", Version: "v1.2.4"})}}, "v1.2.4"},
		{"replaced by a directory", &debug.BuildInfo{Main: main, Deps: []*debug.Module{dep("v0.0.0", &debug.Module{Path: "../interlockotel"})}}, develVersion},
		{"its own test", &debug.BuildInfo{Main: debug.Module{Path: ScopeName, Version: "(devel)"}}, develVersion},
		{"not a dependency", &debug.BuildInfo{Main: main}, develVersion},
	} {
		assert.Equal(t, tc.want, moduleVersion(tc.bi), tc.name)
	}
}
