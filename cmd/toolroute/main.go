// Command toolroute turns an upstream service's OpenAPI document into an
// MCP service on toolroute's service kit: one tool file per operation,
// each a typed upstream call (no handler code), with its route, its
// behaviour and its input and output schemas from the document.
//
//	toolroute new -openapi petstore.yaml -module example.com/petstore-mcp -service petstore -out petstore-mcp
//	toolroute gen -openapi petstore.yaml -service petstore -out petstore-mcp/tools
//
// new writes a complete module (main.go, the tools package, a role policy,
// demo tokens, a README and a test pinning who sees which tool) and runs
// go mod tidy in it; gen adds the tools of new operations to an existing
// tools package and rewrites the generated files no one edited. Install
// it with
//
//	go install github.com/toolroute/toolroute/cmd/toolroute@latest
//
// It exits 0 on success (skipped operations are reported on standard
// error), 1 when the document cannot be read or a file cannot be
// written, 2 on a command-line mistake.
package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"

	"github.com/toolroute/toolroute/internal/gen"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

const usage = `Usage:
  toolroute new -openapi FILE -module PATH -service KEY -out DIR [-replace TOOLROUTE_DIR] [-name NAME] [-tidy=false]
                          write a new service module from an OpenAPI document (3.0, 3.1; JSON or YAML)
  toolroute gen -openapi FILE -service KEY -out DIR [-force]
                          add the tools of new operations to the tools package in DIR, and rewrite
                          the generated files no one edited
  toolroute version       print toolroute's version

Run "toolroute new -h" or "toolroute gen -h" for their flags.
`

// errUsage is a command-line mistake, already printed.
var errUsage = errors.New("usage")

// run runs the command line args and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "new":
		err = runNew(args[1:], stdout, stderr)
	case "gen":
		err = runGen(args[1:], stdout, stderr)
	case "version":
		v, _ := version()
		fmt.Fprintln(stdout, "toolroute", v)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "toolroute: unknown command %q (want new, gen or version)\n\n%s", args[0], usage)
		return 2
	}
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	}
	fmt.Fprintf(stderr, "toolroute %s: %v\n", args[0], err)
	return 1
}

// flags is a subcommand's flag set, which prints its mistakes with the
// subcommand's usage.
func flags(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("toolroute "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage:\n  toolroute %s %s\n\nFlags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args into fs; a mistake is printed and returned as
// errUsage.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage // the flag package printed it, with the usage
	}
	if fs.NArg() > 0 {
		return mistake(fs, "unexpected argument %q: every input is a flag", fs.Arg(0))
	}
	return nil
}

// mistake prints a command-line mistake and the usage.
func mistake(fs *flag.FlagSet, format string, args ...any) error {
	fmt.Fprintf(fs.Output(), fs.Name()+": "+format+"\n", args...)
	fs.Usage()
	return errUsage
}

// document reads and analyses the -openapi file for -service, checking
// both flags, for the tools package pkg.
func document(fs *flag.FlagSet, file, service, pkg string) (*gen.Spec, []byte, error) {
	if file == "" {
		return nil, nil, mistake(fs, "-openapi is required: the OpenAPI document (3.0 or 3.1, JSON or YAML), e.g. -openapi petstore.yaml")
	}
	if err := gen.CheckServiceKey(service); err != nil {
		return nil, nil, mistake(fs, "-service: %v", err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, fmt.Errorf("-openapi %s: %w", file, err)
	}
	spec, err := gen.Parse(data, gen.Options{Service: service, Source: filepath.Base(file), Package: pkg})
	if err != nil {
		return nil, nil, fmt.Errorf("-openapi %s: %w", file, err)
	}
	return spec, data, nil
}

// packageName is the package of the Go files in dir, "tools" if it has
// none.
func packageName(dir string) string {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			continue
		}
		if p := packageClause(string(data)); p != "" {
			return p
		}
	}
	return "tools"
}

// packageClause is the package name a Go source declares, or "".
func packageClause(src string) string {
	for line := range strings.Lines(src) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "package "); ok {
			return strings.TrimSpace(strings.SplitN(rest, "//", 2)[0])
		}
	}
	return ""
}

// report prints the skipped operations and what the tools leave out.
func report(w io.Writer, cmd string, spec *gen.Spec) {
	for _, s := range spec.Skipped {
		fmt.Fprintf(w, "toolroute %s: skipped %s\n", cmd, s)
	}
	for _, n := range spec.Notes {
		fmt.Fprintf(w, "toolroute %s: %s\n", cmd, n)
	}
	for _, n := range spec.Warnings {
		fmt.Fprintf(w, "toolroute %s: warning: %s\n", cmd, n)
	}
}

func runNew(args []string, stdout, stderr io.Writer) error {
	fs := flags("new", "-openapi FILE -module PATH -service KEY -out DIR [-replace TOOLROUTE_DIR] [-name NAME] [-tidy=false]", stderr)
	file := fs.String("openapi", "", "the OpenAPI document `FILE` (3.0 or 3.1, JSON or YAML)")
	modPath := fs.String("module", "", "the new module's `PATH`, e.g. example.com/petstore-mcp")
	service := fs.String("service", "", "the upstream's service `KEY`: every route's first segment, the KEY of -upstream KEY=URL (lower-case letters, digits, \"-\")")
	out := fs.String("out", "", "the `DIR`ectory to write the module to (new or empty)")
	replace := fs.String("replace", "", "require github.com/toolroute/toolroute from the module in `TOOLROUTE_DIR` (a replace directive), e.g. a checkout")
	name := fs.String("name", "", "the service's `NAME` (its MCP implementation name, in logs and metrics; default KEY-mcp)")
	tidy := fs.Bool("tidy", true, "run go mod tidy in the new module")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *modPath == "" {
		return mistake(fs, "-module is required: the new module's path, e.g. -module example.com/petstore-mcp")
	}
	if err := module.CheckPath(*modPath); err != nil {
		return mistake(fs, "-module %q: %v (a module path such as example.com/petstore-mcp)", *modPath, err)
	}
	if *out == "" {
		return mistake(fs, "-out is required: the directory to write the module to, e.g. -out petstore-mcp")
	}
	if *name != "" && strings.ContainsFunc(*name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
	}) {
		return mistake(fs, "-name %q: use letters, digits, \"-\", \"_\" and \".\" (e.g. petstore-mcp)", *name)
	}
	replaceDir := ""
	if *replace != "" {
		abs, err := filepath.Abs(*replace)
		if err != nil {
			return mistake(fs, "-replace %q: %v", *replace, err)
		}
		gomod, err := os.ReadFile(filepath.Join(abs, "go.mod"))
		if err != nil || modulePath(string(gomod)) != toolrouteModule {
			return mistake(fs, "-replace %q: not the directory of the module %s (its go.mod)", *replace, toolrouteModule)
		}
		replaceDir = abs
	}
	spec, data, err := document(fs, *file, *service, "tools")
	if err != nil {
		return err
	}
	mod := gen.Module{Path: *modPath, Name: *name, Replace: replaceDir, Document: data}
	if replaceDir == "" {
		v, ok := version()
		if ok {
			mod.Version = v
		} else {
			fmt.Fprintf(stderr, "toolroute new: this toolroute's version is unknown (%s, a development build): go.mod requires no version of %s, and go mod tidy adds the latest; give -replace DIR to build against a checkout\n", v, toolrouteModule)
		}
	}
	files, err := spec.ModuleFiles(mod)
	if err != nil {
		report(stderr, "new", spec)
		return err
	}
	if err := gen.Create(*out, files); err != nil {
		return fmt.Errorf("-out %s: %w", *out, err)
	}
	report(stderr, "new", spec)
	serviceName := *name
	if serviceName == "" {
		serviceName = *service + "-mcp"
	}
	fmt.Fprintf(stdout, "toolroute new: wrote %s (module %s) in %s: %d tools from %s, %d operations skipped\n", serviceName, *modPath, *out, len(spec.Tools), filepath.Base(*file), len(spec.Skipped))
	if replaceDir != "" {
		// The checkout's checksums: go mod tidy then needs to fetch
		// nothing the module cache holds.
		if sum, err := os.ReadFile(filepath.Join(replaceDir, "go.sum")); err == nil {
			if err := os.WriteFile(filepath.Join(*out, "go.sum"), sum, 0o644); err != nil {
				return err
			}
		}
	}
	if *tidy {
		cmd := exec.Command("go", "mod", "tidy")
		cmd.Dir = *out
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if msg, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go mod tidy in %s: %v\n%s(the files are written: fix the cause and run go mod tidy there)", *out, err, msg)
		}
		fmt.Fprintf(stdout, "toolroute new: go mod tidy: done\n")
	}
	origin := spec.Origin
	if origin == "" {
		origin = "URL"
	}
	fmt.Fprintf(stdout, "Run it:\n  cd %s\n  go run . -upstream %s=%s -policy policy.json -tokens tokens.json\n", *out, *service, origin)
	return nil
}

func runGen(args []string, stdout, stderr io.Writer) error {
	fs := flags("gen", "-openapi FILE -service KEY -out DIR [-force]", stderr)
	file := fs.String("openapi", "", "the OpenAPI document `FILE` (3.0 or 3.1, JSON or YAML)")
	service := fs.String("service", "", "the upstream's service `KEY` (as for new)")
	out := fs.String("out", "", "the tools package's `DIR`ectory, e.g. tools/")
	force := fs.Bool("force", false, "overwrite every file the generation writes, edited or not")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return mistake(fs, "-out is required: the tools package's directory, e.g. -out tools/")
	}
	spec, _, err := document(fs, *file, *service, packageName(*out))
	if err != nil {
		return err
	}
	files, err := spec.ToolFiles()
	if err != nil {
		return err
	}
	changes, err := gen.Update(*out, files, *force)
	report(stderr, "gen", spec)
	created, unchanged := 0, 0
	for _, c := range changes {
		switch c.Action {
		case gen.Created, gen.Updated:
			fmt.Fprintf(stdout, "%s %s\n", c.Action, filepath.Join(*out, c.Path))
			if c.Action == gen.Created {
				created++
			}
		case gen.Unchanged:
			unchanged++
		default:
			fmt.Fprintf(stderr, "toolroute gen: %s %s: %s\n", c.Action, filepath.Join(*out, c.Path), c.Reason)
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "toolroute gen: %d tools from %s; %d files unchanged\n", len(spec.Tools), filepath.Base(*file), unchanged)
	if created > 0 {
		fmt.Fprintf(stdout, "toolroute gen: a new tool is in no role until the policy grants its route (\"go run . routes -role admin -behaviour read-only,additive,destructive\" prints a role policy granting every tool's routes)\n")
	}
	return nil
}

// toolrouteModule is toolroute's module path.
const toolrouteModule = "github.com/toolroute/toolroute"

// modulePath is the path a go.mod declares, or "".
func modulePath(gomod string) string {
	for line := range strings.Lines(gomod) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// version is this toolroute's module version, and whether a module can
// require it: true for a release or pseudo-version (go install ...@v1.2.3),
// false for a development build ("(devel)", a modified checkout).
func version() (string, bool) {
	bi, ok := debug.ReadBuildInfo()
	if !ok || bi.Main.Path != toolrouteModule {
		return "(unknown)", false
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" || !semver.IsValid(v) || strings.Contains(v, "+dirty") || semver.Build(v) != "" {
		return cmp.Or(v, "(devel)"), false
	}
	return v, true
}
