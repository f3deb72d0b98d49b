package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const directive = "//go:generate go run ../internal/gen/locker "

// TestGeneratedFilesAreFresh fails when a kind's locker_gen.go is not what
// go generate writes today (run `go generate ./...` and commit the result),
// and when a package with locker_gen.go has lost its directive.
func TestGeneratedFilesAreFresh(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	require.NoError(t, err)
	dirs, err := filepath.Glob(filepath.Join(root, "*"))
	require.NoError(t, err)
	found := 0
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		types, pkg := directiveIn(t, dir)
		_, statErr := os.Stat(filepath.Join(dir, Output))
		if types == nil {
			assert.True(t, os.IsNotExist(statErr), "%s has %s but no go:generate directive", dir, Output)
			continue
		}
		found++
		want, err := Generate(filepath.Join(root, "locker.go"), pkg, types)
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(dir, Output))
		require.NoError(t, err, "run go generate ./%s", filepath.Base(dir))
		assert.Equal(t, string(want), string(got), "%s/%s is stale: run go generate ./%s", filepath.Base(dir), Output, filepath.Base(dir))
	}
	assert.GreaterOrEqual(t, found, 6, "the lock kinds' directives")
}

// directiveIn returns the types of the locker directive in dir's Go files
// and their package name, or nil.
func directiveIn(t *testing.T, dir string) (types []string, pkg string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, name := range files {
		f, err := os.Open(name)
		require.NoError(t, err)
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Text()
			if p, ok := strings.CutPrefix(line, "package "); ok && pkg == "" {
				pkg = strings.Fields(p)[0]
			}
			if args, ok := strings.CutPrefix(line, directive); ok {
				types = strings.Fields(args)
			}
		}
		f.Close()
		if types != nil {
			return types, pkg
		}
		pkg = ""
	}
	return nil, ""
}
