package doclinks

import (
	"go/ast"
	"go/build"
	"go/doc"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const module = "github.com/toolroute/toolroute"

// pkgDoc is one parsed package: its doc and the names it declares at top
// level, with "Type.Method" / "Type.Field" entries for members.
type pkgDoc struct {
	dir   string
	doc   *doc.Package
	names map[string]bool
}

// load parses the non-test files of the package in dir; nil if it has none.
func load(t *testing.T, dir string) *pkgDoc {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool {
		// Build constraints count: a generator beside a package is
		// often "package main" behind //go:build ignore.
		ok, err := build.Default.MatchFile(dir, fi.Name())
		return err == nil && ok && !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments)
	if err != nil {
		t.Fatalf("parse %s: %v", dir, err)
	}
	for name, p := range pkgs {
		if strings.HasSuffix(name, "_test") {
			continue
		}
		var files []*ast.File
		for _, f := range p.Files {
			files = append(files, f)
		}
		d, err := doc.NewFromFiles(fset, files, "x/"+name, doc.PreserveAST|doc.AllDecls)
		if err != nil {
			t.Fatalf("doc %s: %v", dir, err)
		}
		return &pkgDoc{dir: dir, doc: d, names: declared(d)}
	}
	return nil
}

func declared(d *doc.Package) map[string]bool {
	names := map[string]bool{}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			for _, n := range v.Names {
				names[n] = true
			}
		}
	}
	values(d.Consts)
	values(d.Vars)
	for _, f := range d.Funcs {
		names[f.Name] = true
	}
	for _, ty := range d.Types {
		names[ty.Name] = true
		values(ty.Consts)
		values(ty.Vars)
		for _, f := range ty.Funcs {
			names[f.Name] = true
		}
		for _, m := range ty.Methods {
			names[ty.Name+"."+m.Name] = true
		}
		for _, spec := range ty.Decl.Specs {
			ts, ok := spec.(*ast.TypeSpec)
			if !ok {
				continue
			}
			switch st := ts.Type.(type) {
			case *ast.StructType:
				for _, f := range st.Fields.List {
					for _, n := range f.Names {
						names[ty.Name+"."+n.Name] = true
					}
				}
			case *ast.InterfaceType:
				for _, f := range st.Methods.List {
					for _, n := range f.Names {
						names[ty.Name+"."+n.Name] = true
					}
				}
			}
		}
	}
	return names
}

// comments returns every doc comment of d with a label for messages.
func comments(d *doc.Package) map[string]string {
	out := map[string]string{"package " + d.Name: d.Doc}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			out["value "+strings.Join(v.Names, ",")] = v.Doc
		}
	}
	values(d.Consts)
	values(d.Vars)
	for _, f := range d.Funcs {
		out["func "+f.Name] = f.Doc
	}
	for _, ty := range d.Types {
		if !token.IsExported(ty.Name) {
			continue
		}
		out["type "+ty.Name] = ty.Doc
		values(ty.Consts)
		values(ty.Vars)
		for _, f := range ty.Funcs {
			out["func "+f.Name] = f.Doc
		}
		for _, m := range ty.Methods {
			out["method "+ty.Name+"."+m.Name] = m.Doc
		}
		for _, spec := range ty.Decl.Specs {
			ts, ok := spec.(*ast.TypeSpec)
			if !ok {
				continue
			}
			var fields *ast.FieldList
			switch st := ts.Type.(type) {
			case *ast.StructType:
				fields = st.Fields
			case *ast.InterfaceType:
				fields = st.Methods
			}
			if fields == nil {
				continue
			}
			for _, f := range fields.List {
				if f.Doc != nil && len(f.Names) > 0 {
					out["field "+ty.Name+"."+f.Names[0].Name] = f.Doc.Text()
				}
			}
		}
	}
	return out
}

// unlinked finds text that looks like a doc link but did not become one.
// Lower-case words in brackets ([i], [redacted]) are prose, not links.
var unlinked = regexp.MustCompile(`\[\*?(([a-z][A-Za-z0-9_]*(/[a-z][A-Za-z0-9_]*)*\.)?[A-Z][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?)\]`)

// TestDocLinksResolve fails for every bracketed name in a doc comment of
// the module that go doc does not render as a link, and for every link to
// a package of the module (or the standard library, or a dependency)
// whose target does not exist there.
func TestDocLinksResolve(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	err = filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			switch e.Name() {
			case ".git", "testdata", "node_modules", "deploy":
				return filepath.SkipDir
			}
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
			}
			dirs = append(dirs, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ours := map[string]*pkgDoc{}
	for _, dir := range dirs {
		if p := load(t, dir); p != nil {
			rel, _ := filepath.Rel(root, dir)
			ours[filepath.ToSlash(filepath.Join(module, rel))] = p
		}
	}
	if len(ours) < 5 {
		t.Fatalf("found only %d packages under %s", len(ours), root)
	}
	others := map[string]map[string]bool{}
	target := func(importPath string) map[string]bool {
		if p, ok := ours[importPath]; ok {
			return p.names
		}
		if names, ok := others[importPath]; ok {
			return names
		}
		out, err := exec.Command("go", "list", "-find", "-f", "{{.Dir}}", importPath).Output()
		var names map[string]bool
		if err == nil {
			if p := load(t, strings.TrimSpace(string(out))); p != nil {
				names = p.names
			}
		}
		others[importPath] = names
		return names
	}
	for path, p := range ours {
		parser := p.doc.Parser()
		for where, text := range comments(p.doc) {
			if text == "" || !exportedLabel(where) {
				continue
			}
			check(t, path+": "+where, parser.Parse(text), p.names, target)
		}
	}
}

func check(t *testing.T, where string, d *comment.Doc, local map[string]bool, target func(string) map[string]bool) {
	t.Helper()
	var walk func(ts []comment.Text)
	walk = func(ts []comment.Text) {
		for _, x := range ts {
			switch x := x.(type) {
			case comment.Plain:
				for _, m := range unlinked.FindAllStringSubmatch(string(x), -1) {
					t.Errorf("%s: %s is not a doc link: it names nothing go doc can find", where, m[0])
				}
			case *comment.Link:
				walk(x.Text)
			case *comment.DocLink:
				name := x.Name
				if x.Recv != "" {
					name = x.Recv + "." + x.Name
				}
				names := local
				if x.ImportPath != "" {
					names = target(x.ImportPath)
					if names == nil {
						t.Errorf("%s: link to %s: package not found", where, x.ImportPath)
						continue
					}
				}
				if name != "" && !names[name] {
					t.Errorf("%s: link [%s] names nothing in %q", where, name, x.ImportPath)
				}
			}
		}
	}
	for _, b := range d.Content {
		switch b := b.(type) {
		case *comment.Paragraph:
			walk(b.Text)
		case *comment.Heading:
			walk(b.Text)
		case *comment.List:
			for _, it := range b.Items {
				for _, c := range it.Content {
					if p, ok := c.(*comment.Paragraph); ok {
						walk(p.Text)
					}
				}
			}
		}
	}
}

// exportedLabel reports whether the comment labelled where (see comments)
// belongs to the package or to an exported name: go doc shows no other.
func exportedLabel(where string) bool {
	kind, name, _ := strings.Cut(where, " ")
	if kind == "package" {
		return true
	}
	for _, part := range strings.FieldsFunc(name, func(r rune) bool { return r == '.' || r == ',' }) {
		if !token.IsExported(part) {
			return false
		}
	}
	return true
}
