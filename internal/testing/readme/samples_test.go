package readme

import (
	"encoding/json"
	"fmt"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// module is the module's path.
const module = "github.com/toolroute/toolroute"

// repoRoot is the repository's root: the module's, from this package's
// folder (go test runs a test in its package's folder).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(root, "go.mod")); err != nil || !strings.HasPrefix(string(data), "module "+module+"\n") {
		t.Fatalf("%s is not the root of module %s (go.mod: %v)", root, module, err)
	}
	return root
}

// goCommand returns a command running the go command in root, offline
// and without changing go.mod: a sample that needs a module go.mod does
// not require fails instead of downloading it.
func goCommand(t *testing.T, root string, args ...string) *exec.Cmd {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the README tests run the go command, and none is on PATH: %v", err)
	}
	cmd := exec.Command(gobin, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=readonly", "GOWORK=off")
	return cmd
}

// A block is one fenced code block of a Markdown file.
type block struct {
	// line is the 1-based line of the opening fence; the block's first
	// line is line+1.
	line int
	// lang is the first word of the info string, lower-cased.
	lang string
	// text is the block's content, without the fence's indentation.
	text string
	// above is the last non-blank line before the fence, trimmed.
	above string
}

var fence = regexp.MustCompile("^( *)(`{3,}|~{3,})(.*)$")

// fencedBlocks returns the fenced code blocks of md, in order. Fences
// follow CommonMark: a run of at least three backticks or tildes, closed
// by a run of the same character at least as long; inside a list item
// the fence is indented, and so many spaces are removed from each line.
// An unclosed block runs to the end, as CommonMark has it.
func fencedBlocks(md string) []block {
	lines := strings.Split(md, "\n")
	var out []block
	above := ""
	for i := 0; i < len(lines); i++ {
		m := fence.FindStringSubmatch(lines[i])
		if m == nil {
			if s := strings.TrimSpace(lines[i]); s != "" {
				above = s
			}
			continue
		}
		indent, run, info := len(m[1]), m[2], strings.TrimSpace(m[3])
		if run[0] == '`' && strings.Contains(info, "`") {
			continue // an inline code span, not a fence
		}
		b := block{line: i + 1, above: above}
		if f := strings.Fields(info); len(f) > 0 {
			b.lang = strings.ToLower(f[0])
		}
		var body []string
		for i++; i < len(lines); i++ {
			c := fence.FindStringSubmatch(lines[i])
			if c != nil && c[2][0] == run[0] && len(c[2]) >= len(run) && strings.TrimSpace(c[3]) == "" {
				break
			}
			l := lines[i]
			for n := 0; n < indent && strings.HasPrefix(l, " "); n++ {
				l = l[1:]
			}
			body = append(body, l)
		}
		b.text = strings.Join(body, "\n") + "\n"
		out = append(out, b)
		above = ""
	}
	return out
}

// notCompiled is the mark that exempts a Go block from compilation.
var notCompiled = regexp.MustCompile(`^<!--\s*not compiled\b(:?)(.*?)-->$`)

// A sample is a Go block to compile: a whole file, written to file and
// shown to the go command at path, in package dir.
type sample struct {
	block
	file, path, dir string
}

// checkGoBlocks checks every ```go block of md (named name in the
// problems it returns): each must be a whole Go file, formatted by
// gofmt, that compiles as a package of its own inside the module at
// root, importing no internal package, or be marked
// <!-- not compiled: REASON --> on the line above.
// tag keeps the packages of different callers apart. It returns one
// problem per line, "name:LINE: what".
func checkGoBlocks(t *testing.T, root, name, md, tag string) []string {
	t.Helper()
	var problems []string
	report := func(line int, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s:%d: %s", name, line, fmt.Sprintf(format, args...)))
	}
	tmp := t.TempDir()
	var samples []sample
	for _, b := range fencedBlocks(md) {
		if b.lang != "go" && b.lang != "golang" {
			continue
		}
		if m := notCompiled.FindStringSubmatch(b.above); m != nil {
			if m[1] == "" || strings.TrimSpace(m[2]) == "" {
				report(b.line, "%s gives no reason: write <!-- not compiled: REASON -->", b.above)
			}
			continue
		}
		fset := token.NewFileSet()
		if _, err := parser.ParseFile(fset, "", b.text, parser.PackageClauseOnly); err != nil {
			report(b.line, "a ```go block that is not a whole Go file (no package clause): make it one, which this test compiles, or mark it <!-- not compiled: REASON --> on the line above its fence")
			continue
		}
		if formatted, err := format.Source([]byte(b.text)); err == nil && string(formatted) != b.text {
			report(b.line, "not formatted as gofmt formats it: run gofmt on the sample")
		}
		internal := false
		if f, err := parser.ParseFile(fset, "", b.text, parser.ImportsOnly); err == nil {
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if p == module+"/internal" || strings.HasPrefix(p, module+"/") && slices.Contains(strings.Split(p, "/"), "internal") {
					report(b.line+fset.Position(imp.Pos()).Line, "imports %s, an internal package: a reader's code cannot import it", p)
					internal = true
				}
			}
		}
		if internal {
			continue
		}
		dir := fmt.Sprintf("internal/testing/readme/_samples/%s/line%d", tag, b.line)
		s := sample{
			block: b,
			file:  filepath.Join(tmp, fmt.Sprintf("line%d.go", b.line)),
			path:  filepath.Join(root, filepath.FromSlash(dir), "sample.go"),
			dir:   "./" + dir,
		}
		if err := os.WriteFile(s.file, []byte(b.text), 0o644); err != nil {
			t.Fatal(err)
		}
		samples = append(samples, s)
	}
	if len(samples) == 0 {
		return problems
	}
	return append(problems, build(t, root, name, tmp, samples)...)
}

// build compiles samples with one go command, each as a package of its
// own inside the module (an overlay: nothing is written into the
// repository), and returns the compiler's errors at their lines of the
// Markdown file.
func build(t *testing.T, root, name, tmp string, samples []sample) []string {
	t.Helper()
	overlay := struct{ Replace map[string]string }{map[string]string{}}
	args := []string{"build", "-o", os.DevNull, "-overlay", filepath.Join(tmp, "overlay.json")}
	for _, s := range samples {
		overlay.Replace[s.path] = s.file
		args = append(args, s.dir)
	}
	data, err := json.Marshal(overlay)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "overlay.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := goCommand(t, root, args...).CombinedOutput()
	statInputs(t, root, tmp, samples)
	if err == nil {
		return nil
	}
	var problems []string
	attributed := false
	for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if strings.HasPrefix(l, "\t") && len(problems) > 0 {
			problems[len(problems)-1] += "\n" + l
			continue
		}
		if strings.HasPrefix(l, "# ") {
			continue
		}
		if p, ok := at(l, root, name, samples); ok {
			problems = append(problems, p)
			attributed = true
			continue
		}
		problems = append(problems, name+": go build: "+l)
	}
	if !attributed {
		problems = append(problems, fmt.Sprintf("%s: go build failed (%v) without naming a sample's line", name, err))
	}
	return problems
}

// at rewrites a compiler message "FILE:LINE[:COL]: what" about a sample
// as "name:LINE: what", LINE being the Markdown file's line.
func at(msg, root, name string, samples []sample) (string, bool) {
	for _, s := range samples {
		// The go command names a file relative to its directory, the
		// module's root, when that is shorter: the overlay's copy too
		// (a temporary directory next to the module, as in a CI clone
		// under /tmp).
		rel, _ := filepath.Rel(root, s.path)
		relFile, _ := filepath.Rel(root, s.file)
		for _, file := range []string{s.file, s.path, rel, "./" + rel, relFile} {
			rest, ok := strings.CutPrefix(msg, file+":")
			if !ok {
				continue
			}
			num, what, ok := strings.Cut(rest, ":")
			n, err := strconv.Atoi(num)
			if !ok || err != nil {
				continue
			}
			if col, after, ok := strings.Cut(what, ":"); ok {
				if _, err := strconv.Atoi(col); err == nil {
					what = after
				}
			}
			return fmt.Sprintf("%s:%d: %s", name, s.line+n, strings.TrimSpace(what)), true
		}
	}
	return "", false
}

// statInputs stats the module's source files that samples compile
// against, so that go test's cache (which records the files a test
// opens or stats, not those of the go command it runs) runs the test
// again when one of them changes.
func statInputs(t *testing.T, root, tmp string, samples []sample) {
	t.Helper()
	args := []string{"list", "-e", "-deps", "-overlay", filepath.Join(tmp, "overlay.json"), "-f", "{{if not .Standard}}{{.Dir}}{{range .GoFiles}} {{.}}{{end}}{{range .EmbedFiles}} {{.}}{{end}}{{end}}"}
	for _, s := range samples {
		args = append(args, s.dir)
	}
	out, err := goCommand(t, root, args...).Output()
	if err != nil {
		t.Fatalf("go list -deps of the samples: %v", err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || !strings.HasPrefix(f[0], root+string(filepath.Separator)) {
			continue
		}
		for _, name := range f[1:] {
			os.Stat(filepath.Join(f[0], name))
		}
	}
	for _, name := range []string{"go.mod", "go.sum"} {
		os.Stat(filepath.Join(root, name))
	}
}

// TestREADMESamplesCompile: every ```go block of README.md is a whole
// file that compiles against the module, or is marked as not compiled
// with a reason.
func TestREADMESamplesCompile(t *testing.T) {
	root := repoRoot(t)
	md, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, b := range fencedBlocks(string(md)) {
		if b.lang == "go" {
			n++
		}
	}
	if n < 3 {
		t.Fatalf("README.md has %d ```go blocks: is the fence parser broken?", n)
	}
	for _, p := range checkGoBlocks(t, root, "README.md", string(md), "readme") {
		t.Error(p)
	}
}

// TestCheckGoBlocks holds the checker to its rules on a Markdown text of
// known samples: a whole file that compiles passes; a call with too few
// arguments (the README's authz.Transport once had three of five) fails
// at its line with the compiler's words; an unmarked fragment, a mark
// without a reason and an internal import fail; a marked fragment and
// blocks in other languages are left alone; a block gofmt would change
// fails.
func TestCheckGoBlocks(t *testing.T) {
	root := repoRoot(t)
	md := strings.Join([]string{
		/*  1 */ "# samples",
		/*  2 */ "```go",
		/*  3 */ "package main",
		/*  4 */ "",
		/*  5 */ `import "github.com/toolroute/toolroute/behaviour"`,
		/*  6 */ "",
		/*  7 */ "func main() { println(behaviour.ReadOnly.String()) }",
		/*  8 */ "```",
		/*  9 */ "",
		/* 10 */ "- in a list:",
		/* 11 */ "  ```go",
		/* 12 */ "  package tools",
		/* 13 */ "",
		/* 14 */ `  import "github.com/toolroute/toolroute/authz"`,
		/* 15 */ "",
		/* 16 */ `  var rt = authz.Transport(nil, "catalog", authz.AllowAll())`,
		/* 17 */ "  ```",
		/* 18 */ "```go",
		/* 19 */ "x := 1",
		/* 20 */ "```",
		/* 21 */ "<!-- not compiled: a fragment, on purpose -->",
		/* 22 */ "",
		/* 23 */ "```go",
		/* 24 */ "y := 2",
		/* 25 */ "```",
		/* 26 */ "<!-- not compiled: -->",
		/* 27 */ "```go",
		/* 28 */ "z := 3",
		/* 29 */ "```",
		/* 30 */ "```go",
		/* 31 */ "package p",
		/* 32 */ "",
		/* 33 */ `import "github.com/toolroute/toolroute/internal/core/truncate"`,
		/* 34 */ "",
		/* 35 */ "var _ = truncate.Marker",
		/* 36 */ "```",
		/* 37 */ "```sh",
		/* 38 */ "go run ./example-service",
		/* 39 */ "```",
		/* 40 */ "````go",
		/* 41 */ "package q",
		/* 42 */ "",
		/* 43 */ "/*",
		/* 44 */ "```",
		/* 45 */ "*/",
		/* 46 */ "var _ = missing",
		/* 47 */ "````",
		/* 48 */ "```go",
		/* 49 */ "package r",
		/* 50 */ "",
		/* 51 */ "var  spaced = 1",
		/* 52 */ "```",
	}, "\n")
	got := checkGoBlocks(t, root, "x.md", md, "selftest")
	t.Logf("the checker's problems:\n%s", strings.Join(got, "\n"))
	want := []string{
		"x.md:16: not enough arguments in call to authz.Transport",
		"x.md:18: a ```go block that is not a whole Go file",
		"x.md:27: <!-- not compiled: --> gives no reason",
		"x.md:33: imports github.com/toolroute/toolroute/internal/core/truncate, an internal package",
		"x.md:46: undefined: missing",
		"x.md:48: not formatted as gofmt formats it",
	}
	for _, w := range want {
		i := slices.IndexFunc(got, func(g string) bool { return strings.HasPrefix(g, w) })
		if i < 0 {
			t.Errorf("no problem %q; got:\n%s", w, strings.Join(got, "\n"))
			continue
		}
		got = slices.Delete(got, i, i+1)
	}
	for _, g := range got {
		t.Errorf("unexpected problem: %s", g)
	}
}
