// Package archdoc keeps docs/architecture.md true to the code: it reads the module's packages
// with go list and renders the document's package graph, and its tests fail when the document,
// a package's doc comment or a dependency rule of the architecture no longer holds.
package archdoc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Package is one package of the module, as go list sees it.
type Package struct {
	Path     string   // import path within the module ("internal/store"; "." for the root)
	Name     string   // package name ("main" for commands)
	Doc      string   // the doc comment's first sentence
	Imports  []string // module packages it imports directly, as paths within the module
	Deps     []string // module packages it depends on, directly or not
	External []string // outside modules it imports directly (not the standard library)
	Linked   []string // outside modules it depends on, directly or not
}

// Module is the module's packages by path.
type Module struct {
	Path     string // module path
	Packages []Package
}

// Package returns the package at path within the module.
func (m Module) Package(path string) (Package, bool) {
	for _, p := range m.Packages {
		if p.Path == path {
			return p, true
		}
	}
	return Package{}, false
}

// listed is what archdoc reads of `go list -json`.
type listed struct {
	ImportPath string
	Name       string
	Doc        string
	Standard   bool
	Imports    []string
	Deps       []string
	Module     *struct {
		Path string
		Main bool
	}
}

// Load lists the packages of the module rooted at dir (its non-test files, as they build here).
func Load(dir string) (Module, error) {
	cmd := exec.Command("go", "list", "-deps", "-json", "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return Module{}, fmt.Errorf("go list in %s: %w: %s", dir, err, strings.TrimSpace(stderr.String()))
	}
	all := map[string]listed{}
	var mod string
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var l listed
		if err := dec.Decode(&l); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return Module{}, fmt.Errorf("go list output: %w", err)
		}
		all[l.ImportPath] = l
		if l.Module != nil && l.Module.Main {
			mod = l.Module.Path
		}
	}
	if mod == "" {
		return Module{}, fmt.Errorf("go list in %s: no package of the main module", dir)
	}
	rel := func(path string) string {
		if path == mod {
			return "."
		}
		return strings.TrimPrefix(path, mod+"/")
	}
	ours := func(path string) bool { return path == mod || strings.HasPrefix(path, mod+"/") }
	moduleOf := func(path string) string {
		if l, ok := all[path]; ok && l.Module != nil {
			return l.Module.Path
		}
		return path
	}
	// split sorts package paths into the module's own (relative) and the external modules they
	// belong to; the standard library and cgo's "C" are left out.
	split := func(paths []string) (own, external []string) {
		for _, path := range paths {
			switch {
			case ours(path):
				own = append(own, rel(path))
			case !all[path].Standard && path != "C":
				external = appendNew(external, moduleOf(path))
			}
		}
		return own, external
	}
	m := Module{Path: mod}
	for path, l := range all {
		if !ours(path) {
			continue
		}
		p := Package{Path: rel(path), Name: l.Name, Doc: l.Doc}
		p.Imports, p.External = split(l.Imports)
		p.Deps, p.Linked = split(l.Deps)
		for _, s := range [][]string{p.Imports, p.Deps, p.External, p.Linked} {
			sort.Strings(s)
		}
		m.Packages = append(m.Packages, p)
	}
	sort.Slice(m.Packages, func(i, j int) bool { return m.Packages[i].Path < m.Packages[j].Path })
	return m, nil
}

func appendNew(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

// Root finds the module root above dir (the directory holding go.mod).
func Root(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if d == filepath.Dir(d) {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
	}
}

// Graph renders the package graph as Markdown: one row per package with its doc comment's first
// sentence, the module packages it imports and the outside modules it imports.
func (m Module) Graph() string {
	var b strings.Builder
	short := func(path string) string { return "`" + strings.TrimPrefix(path, "internal/") + "`" }
	list := func(ss []string, f func(string) string) string {
		if len(ss) == 0 {
			return "—"
		}
		out := make([]string, len(ss))
		for i, s := range ss {
			out[i] = f(s)
		}
		return strings.Join(out, ", ")
	}
	fmt.Fprintf(&b, "%d packages of `%s`, from `go list -deps -json ./...`. Imports name this module's packages without\n", len(m.Packages), m.Path)
	b.WriteString("their `internal/` prefix; outside modules are those outside the standard library, direct imports only.\n\n")
	b.WriteString("| package | what it is | imports | outside modules |\n|---|---|---|---|\n")
	for _, p := range m.Packages {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", p.Path, strings.ReplaceAll(p.Doc, "|", `\|`), list(p.Imports, short),
			list(p.External, func(s string) string { return "`" + s + "`" }))
	}
	return b.String()
}

// Markers delimit the generated package graph in docs/architecture.md.
const (
	BeginGraph = "<!-- BEGIN package graph: generated by `go test ./internal/archdoc -update`; do not edit -->"
	EndGraph   = "<!-- END package graph -->"
)

// Splice returns doc with the text between the package-graph markers replaced by graph.
func Splice(doc []byte, graph string) ([]byte, error) {
	s := string(doc)
	i := strings.Index(s, BeginGraph)
	j := strings.Index(s, EndGraph)
	if i < 0 || j < i {
		return nil, fmt.Errorf("the document has no package graph between %q and %q", BeginGraph, EndGraph)
	}
	return []byte(s[:i+len(BeginGraph)] + "\n\n" + graph + "\n" + s[j:]), nil
}
