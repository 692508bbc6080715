package archdoc_test

import (
	"bytes"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/voicebench/humanaudit/internal/archdoc"
)

var update = flag.Bool("update", false, "rewrite the package graph of docs/architecture.md from go list")

var (
	loadOnce sync.Once
	module   archdoc.Module
	root     string
	loadErr  error
)

func load(t *testing.T) (archdoc.Module, string) {
	t.Helper()
	loadOnce.Do(func() {
		if root, loadErr = archdoc.Root("."); loadErr == nil {
			module, loadErr = archdoc.Load(root)
		}
	})
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	return module, root
}

// The package graph in docs/architecture.md is the one go list reports: a new package, a new
// import or a changed doc comment fails this test until the document is regenerated (-update).
func TestArchitectureDocIsTheGraphGoListReports(t *testing.T) {
	m, root := load(t)
	path := filepath.Join(root, "docs", "architecture.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := archdoc.Splice(doc, m.Graph())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(doc, want) {
		t.Errorf("%s: the package graph differs from go list; regenerate it with go test ./internal/archdoc -update\n%s", path, firstDifference(doc, want))
	}
}

func firstDifference(have, want []byte) string {
	h, w := strings.Split(string(have), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < max(len(h), len(w)); i++ {
		var hl, wl string
		if i < len(h) {
			hl = h[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if hl != wl {
			return "line " + strconv.Itoa(i+1) + ":\n  have: " + hl + "\n  want: " + wl
		}
	}
	return ""
}

// Every package says what it is in a doc comment, "Package name …" or, for a command,
// "Command name …" (as tailscale's pkgdoc_test asks of its packages).
func TestEveryPackageHasADocComment(t *testing.T) {
	m, _ := load(t)
	for _, p := range m.Packages {
		prefix := "Package " + p.Name + " "
		if p.Name == "main" {
			prefix = "Command " + filepath.Base(p.Path) + " "
		}
		if !strings.HasPrefix(p.Doc, prefix) {
			t.Errorf("%s: doc comment %q; want one that begins %q", p.Path, p.Doc, prefix)
		}
	}
}

// The dependency rules of the architecture (docs/architecture.md): one package per outside
// dependency, the domain apart from the database and HTTP, and only the command wiring the store.
func TestDependencyRules(t *testing.T) {
	m, _ := load(t)
	only := func(module string, allowed ...string) {
		t.Helper()
		for _, p := range m.Packages {
			if slices.Contains(p.External, module) && !slices.Contains(allowed, p.Path) {
				t.Errorf("%s imports %s; only %v may", p.Path, module, allowed)
			}
		}
	}
	only("github.com/jackc/pgx/v5", "internal/store", "internal/store/pgcluster")
	only("github.com/gofiber/fiber/v2", "internal/web")
	only("github.com/chromedp/chromedp", "internal/browsertest")
	for _, p := range m.Packages {
		for _, imp := range p.Imports {
			if (imp == "internal/store" || imp == "internal/store/pgcluster") && p.Path != "cmd/audit" && !strings.HasPrefix(p.Path, "internal/store") {
				t.Errorf("%s imports %s: only cmd/audit wires the store; declare the interface you need where you use it", p.Path, imp)
			}
		}
	}
	// The web app links no database driver: it works on whatever implements its interfaces.
	web, ok := m.Package("internal/web")
	if !ok {
		t.Fatal("no internal/web")
	}
	for _, dep := range web.Deps {
		if strings.HasPrefix(dep, "internal/store") {
			t.Errorf("internal/web depends on %s", dep)
		}
	}
	if slices.Contains(web.Linked, "github.com/jackc/pgx/v5") {
		t.Error("internal/web links pgx")
	}
	// The domain packages know nothing of PostgreSQL, HTTP or the orchestrators above them.
	for _, path := range []string{"internal/audit", "internal/task", "internal/trace", "internal/workspace", "internal/flow",
		"internal/grade", "internal/study", "internal/annotate", "internal/report", "internal/stats", "internal/power", "internal/canon"} {
		p, ok := m.Package(path)
		if !ok {
			t.Errorf("no package %s", path)
			continue
		}
		for _, dep := range p.Deps {
			for _, banned := range []string{"internal/store", "internal/web", "internal/console", "internal/session", "internal/synth", "cmd/"} {
				if strings.HasPrefix(dep, banned) {
					t.Errorf("domain package %s depends on %s", path, dep)
				}
			}
		}
		for _, mod := range p.Linked {
			if mod == "github.com/jackc/pgx/v5" || mod == "github.com/gofiber/fiber/v2" {
				t.Errorf("domain package %s links %s", path, mod)
			}
		}
	}
}

// The tests docs/architecture.md names as the proof of an invariant exist, in the package named.
func TestTheTestsTheDocumentNamesExist(t *testing.T) {
	m, root := load(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile("`((?:[a-z]+/)?[a-z]+)\\.(Test[A-Za-z0-9]+)`").FindAllStringSubmatch(string(doc), -1)
	if len(named) < 20 {
		t.Fatalf("the document names %d tests; the invariants table should name the tests of each invariant", len(named))
	}
	for _, n := range named {
		pkg, test := n[1], n[2]
		var dir string
		for _, p := range m.Packages {
			if p.Path == pkg || filepath.Base(p.Path) == pkg {
				dir = filepath.Join(root, p.Path)
			}
		}
		if dir == "" {
			t.Errorf("%s.%s: no package %s", pkg, test, pkg)
			continue
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
		found := false
		for _, f := range files {
			b, _ := os.ReadFile(f)
			found = found || bytes.Contains(b, []byte("func "+test+"(t *testing.T)"))
		}
		if !found {
			t.Errorf("%s.%s: no such test in %s", pkg, test, dir)
		}
	}
}

// Commands and routes are explicit tables (cmd/audit's commands, web's routes): no package
// registers anything from an init function, so what a binary contains is read in one place.
func TestNoInitRegistrations(t *testing.T) {
	_, root := load(t)
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "audit_data" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == "init" {
				t.Errorf("%s: func init; register through the command or route table instead", fset.Position(fn.Pos()))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
