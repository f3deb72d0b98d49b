package interlock_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A snippet is a Go code block of README.md or of a doc comment, as the
// reader sees it.
type snippet struct {
	file string // where it is, relative to the repository root
	line int    // its first line there
	code string
}

// snippetGivens are, for each file with snippets, the names its snippets
// use without declaring them, as the text around them introduces them:
// package-level declarations of the package each file's snippets are
// type-checked in (a snippet's own := declares a local of the same name).
var snippetGivens = map[string]string{
	"README.md": `var ctx context.Context
var c *interlock.Client
func doWork(context.Context) {}
func schedule(context.Context, uint64) {}`,
	"doc.go": `var ctx context.Context
var m *rlock.Mutex
func work(context.Context) {}`,
	"election/doc.go": `var ctx context.Context
var client *interlock.Client
func work(context.Context, uint64) {}`,
	"fenced/doc.go": `var ctx context.Context
var rc rueidis.Client
var m *fenced.Mutex`,
	"latch/doc.go": `var ctx context.Context
var c *interlock.Client`,
	"pubsub/pubsub.go": `var ctx context.Context
var hub *pubsub.Hub
func ready() bool { return true }`,
	"renewal/renewal.go": `var ctx context.Context
var rc rueidis.Client
func work(context.Context) {}`,
	"rwlock/doc.go": `var ctx context.Context
var c *interlock.Client`,
	"semaphore/doc.go": `var ctx context.Context
var c *interlock.Client`,
	"ratelimit/doc.go": `var ctx context.Context
var c *interlock.Client`,
	"interlockotel/doc.go": `var rc rueidis.Client
var tp trace.TracerProvider
var exporter sdkmetric.Exporter`,
}

// notGo are the code blocks of doc comments that are not Go (tables,
// lists), by how their first line starts.
var notGo = []string{
	"rlock         reentrant lock", // doc.go: the kinds
	"interlock.acquire.duration ",  // interlockotel/observer.go: the metrics
}

// snippetImports is what every snippet may use, by its package name.
var snippetImports = []string{
	"context", "errors", "fmt", "log", "time",
	"github.com/redis/rueidis",
	"github.com/interlock-go/interlock",
	"github.com/interlock-go/interlock/rlock",
	"github.com/interlock-go/interlock/fairlock",
	"github.com/interlock-go/interlock/rwlock",
	"github.com/interlock-go/interlock/fenced",
	"github.com/interlock-go/interlock/nonreentrant",
	"github.com/interlock-go/interlock/spin",
	"github.com/interlock-go/interlock/multilock",
	"github.com/interlock-go/interlock/semaphore",
	"github.com/interlock-go/interlock/latch",
	"github.com/interlock-go/interlock/ratelimit",
	"github.com/interlock-go/interlock/election",
	"github.com/interlock-go/interlock/pubsub",
	"github.com/interlock-go/interlock/renewal",
	"github.com/interlock-go/interlock/lua",
}

// otelImports are added for the snippets of interlockotel, a module of its
// own that the workspace (go.work) puts beside this one.
var otelImports = []string{
	"github.com/interlock-go/interlock/interlockotel",
	"go.opentelemetry.io/otel/trace",
	`sdkmetric "go.opentelemetry.io/otel/sdk/metric"`,
}

// TestSnippetsCompile type-checks every Go code block of README.md and of
// the public packages' doc comments (what go doc shows), each as the body
// of a function returning error, with its file's givens. "..." stands for
// the reader's code: a line that starts with it is left out, and "{ ... }"
// is an empty block. Unused variables and imports are allowed; anything
// else a compiler would refuse fails the test, at the snippet's own line.
// The examples (example_test.go) run against a server; these only compile.
func TestSnippetsCompile(t *testing.T) {
	snippets := readmeSnippets(t, "README.md")
	dirs := slices.Clone(surfacePackages)
	otel := false
	if _, err := os.Stat(filepath.Join("interlockotel", "doc.go")); err == nil {
		// Not in the module's zip: only where the workspace has it.
		dirs, otel = append(dirs, "interlockotel"), true
	}
	for _, dir := range dirs {
		snippets = append(snippets, docSnippets(t, dir)...)
	}
	require.NotEmpty(t, snippets)

	imports := slices.Clone(snippetImports)
	if otel {
		imports = append(imports, otelImports...)
	}
	exports := exportData(t, imports)
	bySource := map[string][]snippet{}
	for _, s := range snippets {
		bySource[s.file] = append(bySource[s.file], s)
	}
	for file, ss := range bySource {
		givens, ok := snippetGivens[file]
		if !ok {
			t.Errorf("%s:%d: a snippet in a file snippetGivens does not list; add the names its snippets use", file, ss[0].line)
			continue
		}
		t.Run(strings.ReplaceAll(file, "/", "_"), func(t *testing.T) {
			errs, _ := checkSnippets(snippetSource(imports, givens, ss), exports)
			for _, err := range errs {
				t.Error(err)
			}
		})
	}
}

// snippetRuns are the files whose snippets also run, each snippet top to
// bottom on one goroutine, against the test's server: what sets their
// givens (from main's rc0 and client, on that server), and the packages
// that needs.
var snippetRuns = map[string]struct {
	setup   string
	imports []string
}{
	"rwlock/doc.go":    {setup: "ctx, c = context.Background(), client", imports: []string{"context"}},
	"semaphore/doc.go": {setup: "ctx, c = context.Background(), client", imports: []string{"context"}},
	"fenced/doc.go": {
		setup:   `ctx, rc, m = context.Background(), rc0, fenced.New(client, "ledger")`,
		imports: []string{"context", "github.com/interlock-go/interlock/fenced"},
	},
}

// TestSnippetsRun runs the snippets of snippetRuns's files, as the reader
// would paste them, "{ ... }" after "err != nil" panicking with the error:
// each must return nil and not panic. A snippet that compiles can still
// not do what it says (rwlock's once took the write lock while holding
// the read lock, which fails with ErrUpgrade).
func TestSnippetsRun(t *testing.T) {
	exports := exportData(t, snippetImports)
	wd, err := os.Getwd()
	require.NoError(t, err)
	pkg := filepath.Join(wd, "internal", "snippetrun") // exists only in the overlay
	for file, run := range snippetRuns {
		t.Run(strings.ReplaceAll(file, "/", "_"), func(t *testing.T) {
			dir := filepath.Dir(file)
			var ss []snippet
			if file == "README.md" {
				ss = readmeSnippets(t, file)
			} else {
				for _, s := range docSnippets(t, dir) {
					if s.file == file {
						ss = append(ss, s)
					}
				}
			}
			require.NotEmpty(t, ss)
			src := snippetSource(snippetImports, snippetGivens[file], ss)
			errs, used := checkSnippets(src, exports)
			require.Empty(t, errs, "TestSnippetsCompile says why")
			src = runnable(t, src, used)

			var main strings.Builder
			main.WriteString("package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n\n\t\"github.com/redis/rueidis\"\n\n\t\"github.com/interlock-go/interlock\"\n")
			for _, imp := range run.imports {
				fmt.Fprintf(&main, "\t%q\n", imp)
			}
			main.WriteString(`)

func main() {
	rc0, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{os.Args[1]}})
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	defer rc0.Close()
	client, err := interlock.New(rc0)
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	defer client.Close()
	` + run.setup + `
	failed := false
`)
			for i, s := range ss {
				fmt.Fprintf(&main, "\tfailed = runSnippet(%q, snippet%d) || failed\n", fmt.Sprintf("%s:%d", s.file, s.line), i)
			}
			main.WriteString(`	if failed {
		defer os.Exit(1)
	}
}

func runSnippet(where string, f func() error) (failed bool) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Printf("%s: panic: %v\n", where, r)
			failed = true
		}
	}()
	if err := f(); err != nil {
		fmt.Printf("%s: returned %v\n", where, err)
		return true
	}
	return false
}
`)
			tmp := t.TempDir()
			overlay := map[string]map[string]string{"Replace": {
				filepath.Join(pkg, "snippets.go"): filepath.Join(tmp, "snippets.go"),
				filepath.Join(pkg, "main.go"):     filepath.Join(tmp, "main.go"),
			}}
			require.NoError(t, os.WriteFile(filepath.Join(tmp, "snippets.go"), []byte(src), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(tmp, "main.go"), []byte(main.String()), 0o644))
			js, err := json.Marshal(overlay)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(tmp, "overlay.json"), js, 0o644))

			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "go", "run", "-overlay", filepath.Join(tmp, "overlay.json"), pkg, addr)
			cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=")
			out, err := cmd.CombinedOutput()
			assert.NoError(t, err, "the snippets of %s, run:\n%s", file, out)
		})
	}
}

// readmeSnippets returns the ```go blocks of a Markdown file.
func readmeSnippets(t *testing.T, path string) []snippet {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []snippet
	var cur *snippet
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "```go":
			cur = &snippet{file: path, line: n + 1}
		case cur != nil && strings.TrimSpace(line) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.code += line + "\n"
		}
	}
	require.NoError(t, sc.Err())
	require.Nil(t, cur, "%s: a ```go block that does not end", path)
	return out
}

// docSnippets returns the code blocks of the doc comments in dir's
// non-test Go files that are Go (all but notGo's).
func docSnippets(t *testing.T, dir string) []snippet {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	var out []snippet
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		require.NoError(t, err)
		for _, g := range f.Comments {
			out = append(out, commentSnippets(fset, filepath.ToSlash(name), g)...)
		}
	}
	return out
}

// commentSnippets returns the code blocks of one comment group: lines
// indented by a tab, with the blank lines between them.
func commentSnippets(fset *token.FileSet, file string, g *ast.CommentGroup) []snippet {
	var out []snippet
	var cur *snippet
	blanks := ""
	end := func() {
		if cur != nil && !slices.ContainsFunc(notGo, func(p string) bool { return strings.HasPrefix(cur.code, p) }) {
			out = append(out, *cur)
		}
		cur, blanks = nil, ""
	}
	for _, c := range g.List {
		text, ok := strings.CutPrefix(c.Text, "//")
		if !ok {
			end()
			continue
		}
		switch {
		case strings.HasPrefix(text, "\t"):
			if cur == nil {
				cur = &snippet{file: file, line: fset.Position(c.Slash).Line}
			}
			cur.code += blanks + text[1:] + "\n"
			blanks = ""
		case strings.TrimSpace(text) == "" && cur != nil:
			blanks += "\n"
		default:
			end()
		}
	}
	end()
	return out
}

// elided matches what a snippet leaves to the reader: a line that starts
// with "...", or "{ ... }".
var elided = regexp.MustCompile(`(?m)^\s*\.\.\..*$|\{ \.\.\. \}`)

// snippetSource returns the package of snippets, all from one file: each
// the body of a function returning error, with a //line directive so that
// errors point into the file. A "{ ... }" after "err != nil" panics with
// err (so that a snippet that runs fails where its reader's code would
// see the error); any other is empty.
func snippetSource(imports []string, givens string, snippets []snippet) string {
	var src strings.Builder
	src.WriteString("package main\n\nimport (\n")
	for _, imp := range imports {
		if !strings.HasSuffix(imp, `"`) {
			imp = `"` + imp + `"`
		}
		src.WriteString("\t" + imp + "\n")
	}
	src.WriteString(")\n\n" + givens + "\n")
	for i, s := range snippets {
		var code strings.Builder
		for line := range strings.SplitAfterSeq(s.code, "\n") {
			code.WriteString(elided.ReplaceAllStringFunc(line, func(m string) string {
				switch {
				case !strings.HasPrefix(m, "{"):
					return ""
				case strings.Contains(line, "err != nil"):
					return "{ panic(err) }"
				}
				return "{}"
			}))
		}
		fmt.Fprintf(&src, "\nfunc snippet%d() error {\n//line %s:%d\n%s\n\treturn nil\n}\n", i, s.file, s.line, code.String())
	}
	return src.String()
}

// checkSnippets type-checks src, from snippetSource, and returns the
// errors a compiler would report but for unused variables and imports,
// and an error for each Unlock whose error is dropped (a lost hold goes
// unnoticed, and a reader copies the snippet); and the import paths src
// uses.
func checkSnippets(src string, exports map[string]string) (errs []error, used map[string]bool) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "snippets.go", src, parser.SkipObjectResolution)
	if err != nil {
		return []error{err}, nil
	}
	conf := types.Config{
		Importer: importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
			file, ok := exports[path]
			if !ok {
				return nil, fmt.Errorf("no export data for %s", path)
			}
			return os.Open(file)
		}),
		Error: func(err error) {
			if te, ok := err.(types.Error); !ok || !te.Soft {
				errs = append(errs, err)
			}
		},
	}
	ast.Inspect(f, func(n ast.Node) bool {
		var call ast.Expr
		switch st := n.(type) {
		case *ast.ExprStmt:
			call = st.X
		case *ast.DeferStmt:
			call = st.Call
		case *ast.GoStmt:
			call = st.Call
		}
		if c, ok := call.(*ast.CallExpr); ok {
			if sel, ok := c.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Unlock" {
				errs = append(errs, fmt.Errorf("%s: Unlock's error is discarded: check it (or join it to the function's)", fset.Position(c.Pos())))
			}
		}
		return true
	})
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	_, _ = conf.Check("main", fset, []*ast.File{f}, info)
	used = map[string]bool{}
	for _, obj := range info.Uses {
		if pn, ok := obj.(*types.PkgName); ok {
			used[pn.Imported().Path()] = true
		}
	}
	return errs, used
}

// runnable makes src, which checkSnippets passed, a program the compiler
// takes: only the imports it uses, and a use of every variable its
// snippets declare with := right after the declaration (a snippet may
// leave one to the reader).
func runnable(t *testing.T, src string, used map[string]bool) string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "snippets.go", src, parser.SkipObjectResolution)
	require.NoError(t, err)
	type insert struct {
		at   int
		text string
	}
	var inserts []insert
	visit := func(list []ast.Stmt) {
		for _, st := range list {
			as, ok := st.(*ast.AssignStmt)
			if !ok || as.Tok != token.DEFINE {
				continue
			}
			text := ""
			for _, lhs := range as.Lhs {
				if id, ok := lhs.(*ast.Ident); ok && id.Name != "_" {
					text += "; _ = " + id.Name
				}
			}
			inserts = append(inserts, insert{fset.Position(as.End()).Offset, text})
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch b := n.(type) {
		case *ast.BlockStmt:
			visit(b.List)
		case *ast.CaseClause:
			visit(b.Body)
		case *ast.CommClause:
			visit(b.Body)
		}
		return true
	})
	slices.SortFunc(inserts, func(a, b insert) int { return b.at - a.at })
	for _, in := range inserts {
		src = src[:in.at] + in.text + src[in.at:]
	}
	var imports strings.Builder
	imports.WriteString("import (\n")
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if used[path] {
			if imp.Name != nil {
				imports.WriteString("\t" + imp.Name.Name + " ")
			}
			imports.WriteString("\t" + imp.Path.Value + "\n")
		}
	}
	imports.WriteString(")")
	from := strings.Index(src, "import (")
	to := from + strings.Index(src[from:], ")")
	return src[:from] + imports.String() + src[to+1:]
}

// exportData returns the compiled export data of imports and their
// dependencies, by import path, as the go command builds it (offline: the
// modules are those the workspace already has).
func exportData(t *testing.T, imports []string) map[string]string {
	var paths []string
	for _, imp := range imports {
		if i := strings.Index(imp, `"`); i >= 0 {
			imp = strings.Trim(imp[i:], `"`)
		}
		paths = append(paths, imp)
	}
	cmd := exec.Command("go", append([]string{"list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}, paths...)...)
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list: %s", stderr.String())
	exports := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		path, file, _ := strings.Cut(line, "\t")
		exports[path] = file
	}
	return exports
}

// TestSnippetChecks: the check finds a wrong call at its snippet's line,
// and takes what a snippet leaves to its reader.
func TestSnippetChecks(t *testing.T) {
	exports := exportData(t, snippetImports)
	good := snippet{file: "x.md", line: 10, code: `m := rlock.New(c, "a")
if err := m.Lock(ctx); err != nil { ... }
... work ...
unused := 1
`}
	bad := snippet{file: "x.md", line: 20, code: `m := rlock.New(c, "a")

m.Lock(ctx, 1)
defer m.Unlock(ctx)
`}
	givens := "var ctx context.Context\nvar c *interlock.Client"
	errs, _ := checkSnippets(snippetSource(snippetImports, givens, []snippet{good}), exports)
	assert.Empty(t, errs)
	errs, _ = checkSnippets(snippetSource(snippetImports, givens, []snippet{good, bad}), exports)
	require.Len(t, errs, 2)
	assert.Contains(t, errs[0].Error(), "x.md:23: Unlock's error is discarded")
	assert.Contains(t, errs[1].Error(), "x.md:22:")
	assert.Contains(t, errs[1].Error(), "too many arguments")

	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", "// Package p.\n//\n//\tx := 1\n//\n//\ty := x\n//\n// Text.\n//\n//\tz := 2\npackage p\n", parser.ParseComments)
	require.NoError(t, err)
	got := commentSnippets(fset, "p.go", f.Doc)
	require.Len(t, got, 2)
	assert.Equal(t, snippet{"p.go", 3, "x := 1\n\ny := x\n"}, got[0])
	assert.Equal(t, snippet{"p.go", 9, "z := 2\n"}, got[1])
}
