package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"sigs.k8s.io/yaml"

	"github.com/toolroute/toolroute/authz/export"
	"github.com/toolroute/toolroute/internal/gen"
	"github.com/toolroute/toolroute/internal/testing/await"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server/servertest"
)

const testdata = "../../internal/gen/testdata/openapi/"

func runArgs(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

// TestUsage: a command-line mistake exits 2 naming the flag, the value
// and what it accepts; a document or directory that fails exits 1.
func TestUsage(t *testing.T) {
	dir := t.TempDir()
	notEmpty := filepath.Join(dir, "full")
	os.MkdirAll(notEmpty, 0o755)
	os.WriteFile(filepath.Join(notEmpty, "x"), nil, 0o644)
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("openapi: 3.0.3\ninfo: [\n"), 0o644)
	pet := testdata + "petstore.yaml"
	out := filepath.Join(dir, "out")
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "Usage:\n  toolroute new"},
		{[]string{"frob"}, 2, `toolroute: unknown command "frob" (want new, gen or version)`},
		{[]string{"new", "-bogus"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"new", "-openapi", pet, "-module", "example.com/p", "-service", "petstore", "-out", out, "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"new", "-openapi", pet, "-service", "petstore", "-out", out}, 2, "-module is required: the new module's path, e.g. -module example.com/petstore-mcp"},
		{[]string{"new", "-openapi", pet, "-module", "example.com/a b", "-service", "petstore", "-out", out}, 2, `-module "example.com/a b": malformed module path`},
		{[]string{"new", "-openapi", pet, "-module", "example.com/p", "-service", "petstore"}, 2, "-out is required"},
		{[]string{"new", "-openapi", pet, "-module", "example.com/p", "-service", "petstore", "-out", out, "-name", "pet store"}, 2, `-name "pet store": use letters, digits`},
		{[]string{"new", "-openapi", pet, "-module", "example.com/p", "-service", "petstore", "-out", out, "-replace", dir}, 2, "-replace \"" + dir + "\": not the directory of the module github.com/toolroute/toolroute"},
		{[]string{"new", "-module", "example.com/p", "-service", "petstore", "-out", out}, 2, "-openapi is required: the OpenAPI document"},
		{[]string{"new", "-openapi", pet, "-module", "example.com/p", "-service", "Pet_Store", "-out", out}, 2, `-service: service key "Pet_Store": use lower-case letters, digits and "-"`},
		{[]string{"new", "-openapi", pet, "-module", "example.com/p", "-out", out}, 2, "-service: a service key is required"},
		{[]string{"gen", "-openapi", pet, "-service", "petstore"}, 2, "-out is required: the tools package's directory"},
		{[]string{"new", "-openapi", filepath.Join(dir, "none.yaml"), "-module", "example.com/p", "-service", "petstore", "-out", out}, 1, "no such file"},
		{[]string{"new", "-openapi", bad, "-module", "example.com/p", "-service", "petstore", "-out", out}, 1, "toolroute new: -openapi " + bad + ": OpenAPI document:"},
		{[]string{"new", "-openapi", pet, "-module", "example.com/p", "-service", "petstore", "-out", notEmpty, "-tidy=false"}, 1, "is not empty: toolroute new writes a new module"},
		{[]string{"new", "-h"}, 0, "-openapi FILE"},
	} {
		code, _, stderr := runArgs(tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("toolroute %q: exit %d, stderr:\n%s\nwant exit %d and %q", tt.args, code, stderr, tt.code, tt.want)
		}
	}
}

// goCmd runs the go command in dir as an outside module is built here
// (service/outside_test.go): requirements resolved from the module
// cache, no workspace.
func goCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// TestEndToEnd: toolroute new writes, for each test document, a module
// that builds against this checkout, passes go vet and its own test (the
// pinned visibility matrix); its route table holds no route the document
// lacks (export.CheckOpenAPI); it serves the tools to each role as the
// matrix says and forwards a call to the upstream; and toolroute gen
// run on it, with the module's copy of the document, finds nothing to
// change.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a service module per document: not with -short")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct {
		file, service string
		call          func(t *testing.T, reader, admin *mcp.ClientSession, seen func() []request)
	}{
		{"petstore.yaml", "petstore", callPetstore},
		{"things.yaml", "things", callThings},
	} {
		t.Run(d.file, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), d.service+"-mcp")
			t.Setenv("GOFLAGS", "-mod=mod") // for new's go mod tidy
			code, stdout, stderr := runArgs("new", "-openapi", testdata+d.file, "-module", "example.com/"+d.service+"-mcp", "-service", d.service, "-out", dir, "-replace", root)
			if code != 0 {
				t.Fatalf("toolroute new: exit %d\n%s%s", code, stdout, stderr)
			}
			for _, want := range []string{"toolroute new: wrote " + d.service + "-mcp", "go mod tidy: done", "go run . -upstream " + d.service + "="} {
				if !strings.Contains(stdout, want) {
					t.Errorf("toolroute new's output lacks %q:\n%s", want, stdout)
				}
			}
			goCmd(t, dir, "vet", "./...")
			goCmd(t, dir, "test", "./...")
			bin := filepath.Join(dir, d.service+"-mcp")
			goCmd(t, dir, "build", "-o", bin, ".")

			// The drift check: every route is an operation of the document.
			table := routeTable(t, bin)
			raw, _ := os.ReadFile(testdata + d.file)
			doc, err := yaml.YAMLToJSON(raw)
			if err != nil {
				t.Fatal(err)
			}
			drift, err := export.CheckOpenAPI(table, d.service, doc)
			if err != nil {
				t.Fatal(err)
			}
			if err := drift.Err(); err != nil {
				t.Error(err)
			}
			spec, err := gen.Parse(raw, gen.Options{Service: d.service, Source: d.file})
			if err != nil {
				t.Fatal(err)
			}
			if len(drift.Unused) != len(spec.Skipped) {
				t.Errorf("the drift check finds %d operations without a tool (%v), the generator skipped %d", len(drift.Unused), drift.Unused, len(spec.Skipped))
			}

			// Serve, against a stub upstream.
			api, seen := stubUpstream(t)
			url := serve(t, bin, dir, "-upstream", d.service+"="+api.URL, "-policy", "policy.json", "-tokens", "tokens.json")
			reader := servertest.ConnectHTTP(t, url, gen.ReaderToken, servertest.Options{})
			admin := servertest.ConnectHTTP(t, url, gen.AdminToken, servertest.Options{})
			golden, _ := os.ReadFile(filepath.Join(dir, "testdata", "visibility.golden"))
			for _, c := range []struct {
				role string
				cs   *mcp.ClientSession
			}{{gen.ReaderRole, reader}, {gen.AdminRole, admin}} {
				if diff := cmp.Diff(column(string(golden), c.role), servertest.ToolNames(t, c.cs)); diff != "" {
					t.Errorf("%s sees (-golden matrix +tools/list):\n%s", c.role, diff)
				}
			}
			d.call(t, reader, admin, seen)

			// gen on the new module's tools changes nothing.
			code, stdout, stderr = runArgs("gen", "-openapi", filepath.Join(dir, d.file), "-service", d.service, "-out", filepath.Join(dir, "tools"))
			if code != 0 || strings.Contains(stdout, "created ") || strings.Contains(stdout, "updated ") || strings.Contains(stderr, "kept ") {
				t.Errorf("toolroute gen on the new module: exit %d\n%s%s", code, stdout, stderr)
			}
		})
	}
}

// column is the tools the role's column of a text matrix marks.
func column(matrix, role string) []string {
	lines := strings.Split(strings.TrimSpace(matrix), "\n")
	col := slices.Index(strings.Fields(lines[0]), role)
	names := []string{}
	for _, l := range lines[1:] {
		if f := strings.Fields(l); f[col] == "x" {
			names = append(names, f[0])
		}
	}
	return names
}

func routeTable(t *testing.T, bin string) registry.RouteTable {
	t.Helper()
	out, err := exec.Command(bin, "routes").Output()
	if err != nil {
		t.Fatalf("%s routes: %v", bin, err)
	}
	var table registry.RouteTable
	if err := json.Unmarshal(out, &table); err != nil {
		t.Fatalf("%s routes: %v\n%s", bin, err, out)
	}
	return table
}

// request is what the stub upstream received.
type request struct {
	Method, Path string // the escaped path
	Query        map[string][]string
	Header       http.Header
	Body         string
}

// stubUpstream answers every request with a JSON object that fits both
// documents' answers where they are objects, and records it.
func stubUpstream(t *testing.T) (*httptest.Server, func() []request) {
	var mu sync.Mutex
	var seen []request
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, request{r.Method, r.URL.EscapedPath(), r.URL.Query(), r.Header.Clone(), string(body)})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/pets":
			w.WriteHeader(http.StatusCreated)
		case strings.HasPrefix(r.URL.Path, "/v1/pets/"):
			io.WriteString(w, `{"id": 7, "name": "rex"}`)
		case strings.HasSuffix(r.URL.Path, "/tags"):
			io.WriteString(w, `["a", "b"]`)
		case r.URL.Path == "/api/v2/things":
			io.WriteString(w, `{"items": [{"id": "t-1", "name": "one", "kind": "gadget"}], "next": null}`)
		default:
			io.WriteString(w, `{}`)
		}
	}))
	t.Cleanup(s.Close)
	return s, func() []request { mu.Lock(); defer mu.Unlock(); return slices.Clone(seen) }
}

// serve starts bin in dir with args, stopped when the test ends, and
// returns its MCP endpoint.
func serve(t *testing.T, bin, dir string, args ...string) string {
	t.Helper()
	var log syncBuffer
	cmd := exec.Command(bin, append([]string{"-addr", "127.0.0.1:0"}, args...)...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		await.Recv(t, exited, "the exit of %s", filepath.Base(bin))
	})
	rx := regexp.MustCompile(`serving MCP at (http://\S+)`)
	for range 3000 { // bounded: a hang guard, no performance assertion
		if m := rx.FindStringSubmatch(log.String()); m != nil {
			return m[1]
		}
		select {
		case <-exited:
			t.Fatalf("%s exited:\n%s", bin, log.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("%s printed no MCP URL within 30s:\n%s", bin, log.String())
	return ""
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// call calls a tool and compares its structured content with want
// (JSON).
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, want string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s: %s", name, res.Content[0].(*mcp.TextContent).Text)
	}
	var w any
	json.Unmarshal([]byte(want), &w)
	if diff := cmp.Diff(w, res.StructuredContent); diff != "" {
		t.Errorf("%s's result (-want +got):\n%s", name, diff)
	}
}

// last is the last request the upstream received.
func last(t *testing.T, seen func() []request) request {
	t.Helper()
	all := seen()
	if len(all) == 0 {
		t.Fatal("the upstream received no request")
	}
	return all[len(all)-1]
}

func callPetstore(t *testing.T, reader, admin *mcp.ClientSession, seen func() []request) {
	call(t, reader, "show_pet_by_id", map[string]any{"petId": "a b"}, `{"id": 7, "name": "rex"}`)
	if r := last(t, seen); r.Method != "GET" || r.Path != "/v1/pets/a%20b" {
		t.Errorf("show_pet_by_id sent %s %s, want GET /v1/pets/a%%20b", r.Method, r.Path)
	}
	call(t, admin, "create_pets", map[string]any{"id": 7, "name": "rex"}, `{}`)
	r := last(t, seen)
	var body map[string]any
	json.Unmarshal([]byte(r.Body), &body)
	if r.Method != "POST" || r.Path != "/v1/pets" || !cmp.Equal(body, map[string]any{"id": 7.0, "name": "rex"}) {
		t.Errorf("create_pets sent %s %s %s, want POST /v1/pets {\"id\":7,\"name\":\"rex\"}", r.Method, r.Path, r.Body)
	}
}

func callThings(t *testing.T, reader, admin *mcp.ClientSession, seen func() []request) {
	call(t, reader, "list_things", map[string]any{"tag": []string{"red", "green, or blue"}, "limit": 5, "X-Request-Id": "0b6e3c1e-8d8e-4d7e-9a51-3f6c1a2b4c5d"},
		`{"items": [{"id": "t-1", "name": "one", "kind": "gadget"}]}`)
	r := last(t, seen)
	if r.Method != "GET" || r.Path != "/api/v2/things" || !cmp.Equal(r.Query, map[string][]string{"tag": {"red", "green, or blue"}, "limit": {"5"}}) || r.Header.Get("X-Request-Id") != "0b6e3c1e-8d8e-4d7e-9a51-3f6c1a2b4c5d" {
		t.Errorf("list_things sent %s %s %v (X-Request-Id %q)", r.Method, r.Path, r.Query, r.Header.Get("X-Request-Id"))
	}
	call(t, reader, "search", map[string]any{"ids": []any{"t-1", "t-2"}}, `{}`)
	if r := last(t, seen); r.Method != "GET" || r.Path != "/api/v2/search" || !cmp.Equal(r.Query, map[string][]string{"ids": {"t-1,t-2"}}) {
		t.Errorf("search sent %s %s %v, want ids=t-1,t-2 (explode: false)", r.Method, r.Path, r.Query)
	}
	call(t, admin, "post_things_thing_id_tags", map[string]any{"thing_id": "t-1", "body": []string{"a", "b"}}, `{"items": ["a", "b"]}`)
	if r := last(t, seen); r.Method != "POST" || r.Path != "/api/v2/things/t-1/tags" || strings.TrimSpace(r.Body) != `["a","b"]` {
		t.Errorf("post_things_thing_id_tags sent %s %s %s", r.Method, r.Path, r.Body)
	}
}
