package interlock_test

import (
	"context"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/interlock-go/interlock"
	"github.com/interlock-go/interlock/internal/redistest"
	"github.com/interlock-go/interlock/semaphore"
)

// TestTTLNoExpiry: every TTL of the library says "never expires" one way,
// interlock.NoExpiry, and 0 for a key that does not exist.
func TestTTLNoExpiry(t *testing.T) {
	rc := redistest.NewClient(t, addr)
	c, err := interlock.New(rc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	persist := func(key string) {
		ok, err := rc.Do(ctx, rc.B().Persist().Key(key).Build()).AsBool()
		require.NoError(t, err)
		require.True(t, ok, "%s had a TTL", key)
	}

	for _, k := range heldLocks() {
		t.Run(k.name, func(t *testing.T) {
			key := "ttl-test:" + k.name
			l := k.l(c, key)
			require.NoError(t, l.LockLease(ctx, time.Minute))
			ttl, err := l.TTL(ctx)
			require.NoError(t, err)
			assert.Greater(t, ttl, 50*time.Second)
			for key := range k.fields(key, "") {
				persist(key)
			}
			ttl, err = l.TTL(ctx)
			require.NoError(t, err)
			assert.Equal(t, interlock.NoExpiry, ttl)
			_, err = l.ForceUnlock(ctx)
			require.NoError(t, err)
			ttl, err = l.TTL(ctx)
			require.NoError(t, err)
			assert.Zero(t, ttl)
		})
	}
	t.Run("semaphore", func(t *testing.T) {
		s := semaphore.New(c, "ttl-test:semaphore")
		_, _ = s.Delete(ctx)
		ttl, err := s.TTL(ctx)
		require.NoError(t, err)
		assert.Zero(t, ttl)
		_, err = s.TrySetPermits(ctx, 1)
		require.NoError(t, err)
		ttl, err = s.TTL(ctx)
		require.NoError(t, err)
		assert.Equal(t, interlock.NoExpiry, ttl)
		_, _ = s.Delete(ctx)
	})
	t.Run("expirable", func(t *testing.T) {
		e := semaphore.NewExpirable(c, "ttl-test:expirable")
		_, _ = e.Delete(ctx)
		ttl, err := e.TTL(ctx)
		require.NoError(t, err)
		assert.Zero(t, ttl)
		_, err = e.TrySetPermits(ctx, 1)
		require.NoError(t, err)
		ttl, err = e.TTL(ctx)
		require.NoError(t, err)
		assert.Equal(t, interlock.NoExpiry, ttl)
		ids, err := e.Acquire(ctx, 1, semaphore.NoExpiry)
		require.NoError(t, err)
		left, err := e.LeaseLeft(ctx, ids[0])
		require.NoError(t, err)
		assert.Equal(t, interlock.NoExpiry, left)
		_, _ = e.Delete(ctx)
	})
}

// TestTTLDocsSayNoExpiry: the doc of every public TTL method (and of
// LeaseLeft) names interlock.NoExpiry or its package's NoExpiry, so that
// every reader, the CLI's included, spells "never expires" alike.
func TestTTLDocsSayNoExpiry(t *testing.T) {
	for _, p := range surfacePackages {
		fset := token.NewFileSet()
		names, err := filepath.Glob(filepath.Join(p, "*.go"))
		require.NoError(t, err)
		var files []*ast.File
		for _, name := range names {
			if !strings.HasSuffix(name, "_test.go") {
				f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
				require.NoError(t, err)
				files = append(files, f)
			}
		}
		d, err := doc.NewFromFiles(fset, files, "example.com/"+p)
		require.NoError(t, err)
		check := func(what, text string) {
			if !strings.Contains(text, "NoExpiry") {
				t.Errorf("%s: %s's doc does not say what it returns for what never expires (NoExpiry): %q", p, what, text)
			}
		}
		for _, typ := range d.Types {
			for _, m := range typ.Methods {
				if m.Name == "TTL" || m.Name == "LeaseLeft" {
					check(typ.Name+"."+m.Name, m.Doc)
				}
			}
			if typ.Name != "Locker" {
				continue
			}
			for _, spec := range typ.Decl.Specs {
				for _, f := range spec.(*ast.TypeSpec).Type.(*ast.InterfaceType).Methods.List {
					if f.Names[0].Name == "TTL" {
						check("Locker.TTL", f.Doc.Text())
					}
				}
			}
		}
	}
}
