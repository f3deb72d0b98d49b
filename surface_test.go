package interlock_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// surfacePackages are the module's public library packages: what a user
// imports, and what go doc and pkg.go.dev show.
var surfacePackages = []string{
	".", "rlock", "fairlock", "fenced", "spin", "nonreentrant", "rwlock",
	"semaphore", "latch", "multilock", "ratelimit", "election", "renewal", "pubsub", "lua",
}

// TestSurface holds the public surface to two rules: every exported
// function, method and type is documented where go doc finds it (a lock
// kind's methods included, which locker_gen.go declares), and no exported
// type reaches into the engine: no embedded field of a type from an
// internal package (its methods would join the public API) and no exported
// field of one.
func TestSurface(t *testing.T) {
	dirs, err := os.ReadDir(".")
	require.NoError(t, err)
	listed := map[string]bool{}
	for _, p := range surfacePackages {
		listed[p] = true
	}
	for _, d := range dirs {
		if d.IsDir() && !listed[d.Name()] && hasLibraryCode(t, d.Name()) {
			t.Errorf("package %s is not in surfacePackages (or not meant to be public: move it under internal/)", d.Name())
		}
	}
	for _, p := range surfacePackages {
		t.Run(p, func(t *testing.T) {
			name := p
			if p == "." {
				name = "interlock"
			}
			for _, f := range parseLibrary(t, p) {
				checkFile(t.Errorf, name, f)
			}
		})
	}
}

// notLibrary are the top-level folders that hold no library package:
// tests, tools, the CLI, and modules of their own.
var notLibrary = map[string]bool{
	"internal": true, "cmd": true, "examples": true, "bench": true, "interlockotel": true,
	"docs": true, "scripts": true, "compat_test": true, "reliability": true, "security": true,
}

func hasLibraryCode(t *testing.T, dir string) bool {
	if notLibrary[dir] || strings.HasPrefix(dir, ".") {
		return false
	}
	return len(parseLibrary(t, dir)) > 0
}

// parseLibrary parses dir's non-test Go files, with comments.
func parseLibrary(t *testing.T, dir string) []*ast.File {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	fset := token.NewFileSet()
	var out []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		require.NoError(t, err)
		out = append(out, f)
	}
	return out
}

// checkFile reports through errorf what in f breaks TestSurface's rules.
func checkFile(errorf func(format string, args ...any), pkg string, f *ast.File) {
	internal := map[string]bool{} // import names of internal packages
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if strings.Contains(path, "/internal/") {
			name := path[strings.LastIndex(path, "/")+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			internal[name] = true
		}
	}
	fromInternal := func(e ast.Expr) bool {
		for {
			switch x := e.(type) {
			case *ast.StarExpr:
				e = x.X
			case *ast.Ellipsis:
				e = x.Elt
			case *ast.ArrayType:
				e = x.Elt
			case *ast.SelectorExpr:
				id, ok := x.X.(*ast.Ident)
				return ok && internal[id.Name]
			default:
				return false
			}
		}
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() || (d.Recv != nil && !exportedRecv(d.Recv)) {
				continue
			}
			name := d.Name.Name
			if d.Recv != nil {
				name = recvName(d.Recv) + "." + name
			}
			if d.Doc == nil {
				errorf("%s.%s has no doc comment", pkg, name)
			}
			for _, fl := range []*ast.FieldList{d.Type.Params, d.Type.Results} {
				if fl == nil {
					continue
				}
				for _, field := range fl.List {
					if fromInternal(field.Type) {
						errorf("%s.%s takes or returns an engine type", pkg, name)
					}
				}
			}
		case *ast.GenDecl:
			if d.Tok != token.TYPE {
				continue
			}
			for _, spec := range d.Specs {
				ts := spec.(*ast.TypeSpec)
				if !ts.Name.IsExported() {
					continue
				}
				if d.Doc == nil && ts.Doc == nil {
					errorf("%s.%s has no doc comment", pkg, ts.Name.Name)
				}
				if ts.Assign.IsValid() && fromInternal(ts.Type) {
					errorf("%s.%s is an alias of an engine type", pkg, ts.Name.Name)
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, field := range st.Fields.List {
					if !fromInternal(field.Type) {
						continue
					}
					if len(field.Names) == 0 {
						errorf("%s.%s embeds an engine type, whose methods join its API", pkg, ts.Name.Name)
					}
					for _, n := range field.Names {
						if n.IsExported() {
							errorf("%s.%s.%s is an exported field of an engine type", pkg, ts.Name.Name, n.Name)
						}
					}
				}
			}
		}
	}
}

func exportedRecv(r *ast.FieldList) bool { return ast.IsExported(recvName(r)) }

func recvName(r *ast.FieldList) string {
	e := r.List[0].Type
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if ix, ok := e.(*ast.IndexExpr); ok {
		e = ix.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// TestSurfaceRules: the check itself finds each kind of leak.
func TestSurfaceRules(t *testing.T) {
	src := `package p

import "example.com/m/internal/core"

// T is documented.
type T struct{ core.Common }

// U is documented.
type U struct{ X *core.Object }

func (T) Undocumented() {}

type V struct{}

// W is documented.
type W = core.Option

// With is documented.
func With(opts ...core.Option) {}

// Get is documented.
func Get() []*core.Object { return nil }
`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, parser.ParseComments)
	require.NoError(t, err)
	var found []string
	checkFile(func(format string, args ...any) { found = append(found, fmt.Sprintf(format, args...)) }, "p", f)
	assert.ElementsMatch(t, []string{
		"p.T embeds an engine type, whose methods join its API",
		"p.U.X is an exported field of an engine type",
		"p.T.Undocumented has no doc comment",
		"p.V has no doc comment",
		"p.W is an alias of an engine type",
		"p.With takes or returns an engine type",
		"p.Get takes or returns an engine type",
	}, found)
}
