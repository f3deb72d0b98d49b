package interlock_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadmeStoriesAreExamples: every row of README's table of stories
// names an example that exists where it says and checks its output, so
// that make test runs each story.
func TestReadmeStoriesAreExamples(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(readme), "### Stories, as examples that run\n")
	require.True(t, ok, "README has no table of stories")
	row := regexp.MustCompile("(?m)^\\| ([^|]+) \\| `([^`]+)` \\| `(Example[A-Za-z0-9_]*)` \\|$")
	rows := row.FindAllStringSubmatch(table[:strings.Index(table, "\n## ")], -1)
	require.GreaterOrEqual(t, len(rows), 10)
	for _, r := range rows {
		story, dir, name := r[1], r[2], r[3]
		files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
		require.NoError(t, err)
		if len(files) == 0 && (dir == "interlockotel" || strings.HasPrefix(dir, "examples/")) {
			continue // a module of its own, not in this module's zip
		}
		found := false
		for _, f := range files {
			src, err := os.ReadFile(f)
			require.NoError(t, err)
			_, body, ok := strings.Cut(string(src), "\nfunc "+name+"() {\n")
			if !ok {
				continue
			}
			found = true
			body, _, _ = strings.Cut(body, "\n}\n")
			assert.Contains(t, body, "// Output:", "%s: %s in %s checks no output", story, name, dir)
		}
		assert.True(t, found, "%s: no %s in %s", story, name, dir)
	}
}
