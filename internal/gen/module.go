package gen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/format"
	"path/filepath"
	"slices"
	"strings"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/core/matrix"
	"github.com/toolroute/toolroute/tool"
)

// GoVersion is the go directive of a generated module: toolroute's own.
const GoVersion = "1.26.0"

// The roles of the generated policy.
const (
	ReaderRole = "reader"
	AdminRole  = "admin"
)

// The demo tokens of the generated tokens.json: for trying the service
// on a laptop, to be replaced before it serves anyone.
const (
	ReaderToken = "demo-reader-token"
	AdminToken  = "demo-admin-token"
)

// Module says how to write a service module around a [Spec]'s tools.
type Module struct {
	// Path is the module path (required), e.g. "example.com/petstore-mcp".
	Path string
	// Name is the service's name (its MCP implementation name, log lines,
	// metrics); "" selects the service key + "-mcp".
	Name string
	// Version is the version of github.com/toolroute/toolroute the module
	// requires; "" writes no requirement (go mod tidy adds the latest).
	Version string
	// Replace, if set, is a directory holding toolroute's module, which
	// a replace directive points the requirement to (v0.0.0 without a
	// Version).
	Replace string
	// Document, if set, is the OpenAPI document the module is generated
	// from, copied into it under its source's name, for toolroute gen to
	// read again.
	Document []byte
}

// moduleFileNames are the files ModuleFiles writes at the module's root.
var moduleFileNames = []string{"go.mod", "go.sum", "main.go", "main_test.go", "policy.json", "tokens.json", "README.md"}

// documentName is the name of the document's copy in the module: its
// source's, unless that is a file of the module's own.
func (s *Spec) documentName() string {
	name := s.Source
	if name == "" || strings.ContainsAny(name, `/\`) || slices.Contains(moduleFileNames, name) || strings.HasPrefix(name, ".") || name == "the OpenAPI document" {
		ext := ".yaml"
		if e := filepath.Ext(name); e == ".json" || e == ".yml" {
			ext = e
		}
		return "openapi" + ext
	}
	return name
}

// ModuleFiles returns the files of a new service module on the service
// kit: go.mod, main.go, main_test.go (the pinned visibility matrix) and
// its golden file testdata/visibility.golden, policy.json (a reader role
// with the read-only tools' routes, an admin role with every route),
// tokens.json (a demo token per role), README.md, and the tools package
// under tools/ ([Spec.ToolFiles]). Only the tools package carries
// headers: the rest is the module's author's from the start.
func (s *Spec) ModuleFiles(mod Module) ([]File, error) {
	if mod.Path == "" {
		return nil, errors.New("gen: the module path is required")
	}
	if len(s.Tools) == 0 {
		return nil, fmt.Errorf("no operation of %s becomes a tool (%d skipped): a service needs at least one", s.Source, len(s.Skipped))
	}
	if s.pkg != "tools" {
		return nil, fmt.Errorf("gen: a new module's tools package is named tools, not %q", s.pkg)
	}
	if mod.Name == "" {
		mod.Name = s.Service + "-mcp"
	}
	tools, err := s.ToolFiles()
	if err != nil {
		return nil, err
	}
	policy, roles := s.policy()
	pol, err := authz.NewPolicy(policy)
	if err != nil {
		return nil, fmt.Errorf("gen: the generated policy: %w", err)
	}
	mainGo, err := format.Source([]byte(s.mainFile(mod)))
	if err != nil {
		return nil, fmt.Errorf("gen: main.go: %w", err)
	}
	testGo, err := format.Source([]byte(s.mainTestFile(mod)))
	if err != nil {
		return nil, fmt.Errorf("gen: main_test.go: %w", err)
	}
	files := []File{
		{Path: "go.mod", Data: []byte(goMod(mod))},
		{Path: "main.go", Data: mainGo},
		{Path: "main_test.go", Data: testGo},
		{Path: "policy.json", Data: policyJSON(policy)},
		{Path: "tokens.json", Data: tokensJSON(roles)},
		{Path: "testdata/visibility.golden", Data: []byte(s.visibility(pol, roles))},
		{Path: "README.md", Data: []byte(s.readme(mod, roles))},
	}
	for _, f := range tools {
		files = append(files, File{Path: "tools/" + f.Path, Data: f.Data})
	}
	if mod.Document != nil {
		files = append(files, File{Path: s.documentName(), Data: mod.Document})
	}
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return files, nil
}

// policy is the generated role policy: a reader role with the routes of
// the read-only tools (if there are any), an admin role with every
// tool's route, in authz.RolePolicyFor's form (an anchored regexp per
// URI, a placeholder as one segment, [^/]+, so that it matches the route
// templates and the requests' paths alike).
func (s *Spec) policy() ([]authz.RolePolicy, []string) {
	var read, all []tool.Route
	for _, t := range s.Tools {
		all = append(all, t.Route)
		if t.Behaviour == behaviour.ReadOnly {
			read = append(read, t.Route)
		}
	}
	var ps []authz.RolePolicy
	var roles []string
	if len(read) > 0 {
		ps = append(ps, authz.RolePolicyFor(ReaderRole, read))
		roles = append(roles, ReaderRole)
	}
	ps = append(ps, authz.RolePolicyFor(AdminRole, all))
	return ps, append(roles, AdminRole)
}

// policyJSON writes role policies as example-service's policy.json reads:
// an access policy a line.
func policyJSON(ps []authz.RolePolicy) []byte {
	var b bytes.Buffer
	b.WriteString("[\n")
	for i, p := range ps {
		fmt.Fprintf(&b, "  {\n    \"role\": %s,\n    \"accessPolicies\": [\n", marshal(p.Role))
		for j, ap := range p.AccessPolicies {
			ms := make([]string, len(ap.Methods))
			for k, m := range ap.Methods {
				ms[k] = marshal(m)
			}
			fmt.Fprintf(&b, `      {"path": %s, "methods": [%s], "effect": %s}`, marshal(ap.Path), strings.Join(ms, ", "), marshal(string(ap.Effect)))
			if j < len(p.AccessPolicies)-1 {
				b.WriteString(",")
			}
			b.WriteString("\n")
		}
		b.WriteString("    ]\n  }")
		if i < len(ps)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("]\n")
	return b.Bytes()
}

// marshal is the JSON string of v, without HTML escapes.
func marshal(v string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// tokensJSON is the demo tokens file: a token for each role.
func tokensJSON(roles []string) []byte {
	var b bytes.Buffer
	b.WriteString("[\n")
	for i, r := range roles {
		tok := AdminToken
		if r == ReaderRole {
			tok = ReaderToken
		}
		fmt.Fprintf(&b, `  {"token": %s, "subject": %s, "roles": [%s]}`, marshal(tok), marshal(r+"@demo"), marshal(r))
		if i < len(roles)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("]\n")
	return b.Bytes()
}

// visibility is the golden visibility matrix: what the server lists to a
// caller of each role under the generated policy (a tool is listed if the
// caller may reach one of its routes).
func (s *Spec) visibility(pol *authz.Policy, roles []string) string {
	visible := map[string][]string{}
	var names []string
	for _, r := range roles {
		visible[r] = []string{}
		for _, t := range s.Tools {
			if pol.Allow(context.Background(), authz.Caller{Subject: "servertest:" + r, Roles: []string{r}}, t.Route) == nil {
				visible[r] = append(visible[r], t.Name)
				names = append(names, t.Name)
			}
		}
		slices.Sort(visible[r])
	}
	slices.Sort(names)
	sorted := slices.Clone(roles)
	slices.Sort(sorted)
	return matrix.Text(sorted, slices.Compact(names), visible)
}

func goMod(mod Module) string {
	var b strings.Builder
	fmt.Fprintf(&b, "module %s\n\ngo %s\n", mod.Path, GoVersion)
	version := mod.Version
	if version == "" && mod.Replace != "" {
		version = "v0.0.0"
	}
	if version != "" {
		fmt.Fprintf(&b, "\nrequire %s %s\n", module, version)
	}
	if mod.Replace != "" {
		fmt.Fprintf(&b, "\nreplace %s => %s\n", module, modPath(mod.Replace))
	}
	return b.String()
}

// modPath quotes a go.mod path if it needs it.
func modPath(p string) string {
	if strings.ContainsAny(p, " \t\"'`\\") {
		return fmt.Sprintf("%q", p)
	}
	return p
}

func (s *Spec) mainFile(mod Module) string {
	var b strings.Builder
	comment(&b, "", fmt.Sprintf("Command %s serves the operations of %s as MCP tools, one per operation, on toolroute's service kit: run it with -upstream %s=URL -policy policy.json -tokens tokens.json (see README.md).", mod.Name, s.titleOr(), s.Service))
	b.WriteString("package main\n\n")
	fmt.Fprintf(&b, "import (\n\t\"go.uber.org/fx\"\n\n\t%q\n\t%q\n\n\t%q\n)\n\n", module+"/server", module+"/service", mod.Path+"/tools")
	b.WriteString("func main() {\n")
	fmt.Fprintf(&b, "\tservice.Main(%q, %q,\n\t\tserver.Tools(tools.Registry),\n\t\tfx.Provide(tools.NewDeps),\n\t)\n}\n", mod.Name, "0.1.0")
	return b.String()
}

func (s *Spec) titleOr() string {
	if t := strings.TrimSpace(s.Title); t != "" {
		return oneLine(t, 80)
	}
	return "the " + s.Service + " API"
}

func (s *Spec) mainTestFile(mod Module) string {
	return `package main

import (
	"flag"
	"os"
	"testing"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"

	"` + mod.Path + `/tools"
)

// update makes TestVisibility write testdata/visibility.golden: go test
// -update, then review the change.
var update = flag.Bool("update", false, "rewrite testdata/visibility.golden")

// TestVisibility pins which role sees which tool under policy.json (a
// change to the tools or the policy shows in review as a change to
// testdata/visibility.golden).
func TestVisibility(t *testing.T) {
	data, err := os.ReadFile("policy.json")
	if err != nil {
		t.Fatal(err)
	}
	policy, err := authz.ParsePolicy(data)
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.Options{Authorizer: policy}, server.Install(tools.Registry, &tools.Deps{}))
	if err != nil {
		t.Fatal(err)
	}
	servertest.CheckVisibility(t, s, "testdata/visibility.golden", policy.Roles()...)
}
`
}

func (s *Spec) readme(mod Module, roles []string) string {
	origin := s.Origin
	if origin == "" {
		origin = "http://127.0.0.1:8081"
	}
	run := fmt.Sprintf("go run . -upstream %s=%s -policy policy.json -tokens tokens.json", s.Service, origin)
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", mod.Name)
	fmt.Fprintf(&b, "An MCP server whose tools are the operations of %s (%s), one tool per operation, on [toolroute](https://%s)'s service kit. `toolroute new` wrote it; the tools package is regenerated with `toolroute gen`.\n\n", s.titleOr(), s.Source, module)
	b.WriteString("## Run it\n\n")
	fmt.Fprintf(&b, "```sh\n%s\n```\n\n", run)
	fmt.Fprintf(&b, "`-upstream %s=URL` is the origin of the API the tools call (scheme, host and port: the routes carry the base path", s.Service)
	if s.BasePath != "" {
		fmt.Fprintf(&b, " `%s`", s.BasePath)
	}
	b.WriteString("). The server listens on `127.0.0.1:8080` (`-addr`) and prints `serving MCP at http://127.0.0.1:8080/mcp`. Every flag is also an environment variable (`TOOLROUTE_` + the flag in upper snake case; `-upstream KEY=URL` is `TOOLROUTE_UPSTREAM_KEY`).\n\n")
	b.WriteString("Check the configuration without serving (it prints `ok` and exits 0, or each problem and exits 1):\n\n")
	fmt.Fprintf(&b, "```sh\n%s\n```\n\n", strings.Replace(run, "go run . ", "go run . check ", 1))
	b.WriteString("## Who sees what\n\n")
	b.WriteString("Callers present a bearer token; `tokens.json` gives each a subject and roles, and `policy.json` (the RBAC proxy's shape) the routes each role may reach. A caller sees, and may call, exactly the tools one of whose routes it may reach:\n\n")
	b.WriteString("| role | token (tokens.json) | tools |\n|------|-------|-------|\n")
	for _, r := range roles {
		tok, what := AdminToken, "all, every route"
		if r == ReaderRole {
			tok, what = ReaderToken, "the read-only ones (GET and HEAD routes)"
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", r, tok, what)
	}
	fmt.Fprintf(&b, "\nAn MCP client connects to the URL the server prints, with the header `Authorization: Bearer %s` (say). The tokens are **demo tokens** for trying the service on your machine: replace `tokens.json` (or use `-oidc-issuer` or `-proxy-auth`) before it serves anyone.\n\n", AdminToken)
	b.WriteString("`go test ./...` pins that matrix (`main_test.go`, `testdata/visibility.golden`): after a change to the tools or the policy, `go test -update .` rewrites the golden file, and the review shows who now sees what.\n\n")
	b.WriteString("## The tools\n\n| tool | operation | behaviour | route |\n|------|-----------|-----------|-------|\n")
	for _, t := range s.Tools {
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | `%s` |\n", t.Name, strings.ReplaceAll(t.Operation, "|", `\|`), t.Behaviour, t.Route)
	}
	if len(s.Skipped) > 0 {
		b.WriteString("\nOperations without a tool:\n\n")
		for _, k := range s.Skipped {
			fmt.Fprintf(&b, "- `%s`: %s\n", strings.ReplaceAll(k.Operation, "`", "'"), k.Reason)
		}
	}
	b.WriteString("\n## Regenerating\n\n")
	doc := s.Source
	if mod.Document != nil {
		doc = s.documentName()
		fmt.Fprintf(&b, "`%s` is the document the tools were generated from. After a change to it,\n\n", doc)
	}
	fmt.Fprintf(&b, "```sh\ntoolroute gen -openapi %s -service %s -out tools/\n```\n\n", doc, s.Service)
	b.WriteString("adds a file for each new operation and rewrites the generated files no one edited: each carries a header with the hash of its content, and a file whose content no longer matches it is yours, left alone (`-force` overwrites). Tools of new operations are in no role until `policy.json` grants their routes (`go run . routes -role admin -behaviour read-only,additive,destructive` prints a role policy granting every tool's routes).\n")
	return b.String()
}
