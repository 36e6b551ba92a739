package readme

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// walk calls fn for every file and folder of the repository at root but
// those no one maintains by hand: .git, node_modules, testdata.
func walk(t *testing.T, root string, fn func(rel string, e fs.DirEntry)) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			switch e.Name() {
			case ".git", "node_modules", "testdata":
				return filepath.SkipDir
			}
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		fn(filepath.ToSlash(rel), e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// modulePackages returns the module's packages, as paths relative to the
// module's root ("authz/oauth"; "" for the root), as go list ./... has
// them.
func modulePackages(t *testing.T, root string) map[string]bool {
	t.Helper()
	out, err := goCommand(t, root, "list", "-f", "{{.ImportPath}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	pkgs := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		pkgs[strings.TrimPrefix(strings.TrimPrefix(p, module), "/")] = true
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list ./... found %d packages", len(pkgs))
	}
	return pkgs
}

// nestedModules returns the folders, relative to root, of the modules
// nested in the repository (each with a go.mod of its own): go list ./...
// does not reach into them.
func nestedModules(t *testing.T, root string) map[string]bool {
	t.Helper()
	mods := map[string]bool{}
	walk(t, root, func(rel string, e fs.DirEntry) {
		if !e.IsDir() && e.Name() == "go.mod" && rel != "go.mod" {
			mods[filepath.ToSlash(filepath.Dir(rel))] = true
		}
	})
	return mods
}

// A row of the packages table.
type row struct {
	line int
	// paths are the first cell's backquoted names, without a trailing
	// "/"; families are those written "prefix/…", by their prefix.
	paths, families []string
	// names are the lower-case path-like names quoted in the second
	// cell: "otelsetup", "statelesscancel/callreg".
	names []string
}

var (
	quoted  = regexp.MustCompile("`([^`]+)`")
	subname = regexp.MustCompile(`^[a-z][a-z0-9_]*(/[a-z][a-z0-9_]*)*$`)
)

// packagesTable returns the rows of the table in md's "## Packages"
// section.
func packagesTable(t *testing.T, md string) []row {
	t.Helper()
	var rows []row
	in := false
	for i, l := range strings.Split(md, "\n") {
		switch {
		case strings.HasPrefix(l, "## "):
			in = l == "## Packages"
			continue
		case !in || !strings.HasPrefix(l, "|"):
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		first := strings.TrimSpace(cells[0])
		if first == "package" || strings.Trim(first, "-: ") == "" {
			continue // the header and the delimiter row
		}
		r := row{line: i + 1}
		for _, m := range quoted.FindAllStringSubmatch(first, -1) {
			name := m[1]
			if prefix, ok := strings.CutSuffix(name, "/…"); ok {
				r.families = append(r.families, prefix)
			} else if prefix, ok := strings.CutSuffix(name, "/..."); ok {
				r.families = append(r.families, prefix)
			} else {
				r.paths = append(r.paths, strings.TrimSuffix(name, "/"))
			}
		}
		for _, m := range quoted.FindAllStringSubmatch(strings.Join(cells[1:], "|"), -1) {
			if subname.MatchString(m[1]) {
				r.names = append(r.names, m[1])
			}
		}
		rows = append(rows, r)
	}
	if len(rows) < 5 {
		t.Fatalf(`README.md: found %d rows in the "## Packages" table: was the section renamed?`, len(rows))
	}
	return rows
}

// TestPackagesTable: the README's packages table lists every package of
// the module and every nested module (bench/, deploy/), and names no
// package that does not exist. A package is listed by a row of its own,
// or by its name in the second cell of its parent's row (`otelsetup` in
// server/telemetry's) or of its family's (`rules` in internal/core/…'s).
// In a family's row every such name must be a package of the family, so
// that one removed or renamed shows; a name quoted in another row's
// second cell that is no package is prose (`tools/call`).
func TestPackagesTable(t *testing.T) {
	root := repoRoot(t)
	md, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	pkgs := modulePackages(t, root)
	mods := nestedModules(t, root)
	listed := map[string]bool{}
	for _, r := range packagesTable(t, string(md)) {
		if len(r.paths)+len(r.families) == 0 {
			t.Errorf("README.md:%d: a packages table row whose first cell quotes no package", r.line)
		}
		for _, p := range r.paths {
			switch {
			case pkgs[p]:
				listed[p] = true
			case mods[p]:
				listed[p+"/"] = true
			default:
				t.Errorf("README.md:%d: the packages table lists `%s`, which is neither a package of the module (go list ./...) nor a module of its own: remove or rename the row", r.line, p)
			}
			for _, n := range r.names {
				if pkgs[p+"/"+n] {
					listed[p+"/"+n] = true
				}
			}
		}
		for _, f := range r.families {
			members := 0
			for p := range pkgs {
				if strings.HasPrefix(p, f+"/") {
					members++
				}
			}
			if members == 0 {
				t.Errorf("README.md:%d: the packages table lists `%s/…`, and no package is under %s: remove or rename the row", r.line, f, f)
			}
			for _, n := range r.names {
				switch {
				case pkgs[f+"/"+n]:
					listed[f+"/"+n] = true
				case pkgs[n]:
					// another package of the module, named in passing
				default:
					t.Errorf("README.md:%d: the packages table's `%s/…` row names `%s`, and there is no package %s/%s: remove or rename it", r.line, f, n, f, n)
				}
			}
		}
	}
	var missing []string
	for p := range pkgs {
		if !listed[p] {
			missing = append(missing, p)
		}
	}
	for m := range mods {
		if !listed[m+"/"] {
			missing = append(missing, m+"/ (a module of its own)")
		}
	}
	slices.Sort(missing)
	for _, p := range missing {
		t.Errorf("README.md: the packages table does not list %s: give it a row, or name it in its parent's or its family's row", p)
	}
}
