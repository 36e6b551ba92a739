package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolroute/toolroute/internal/testing/proc"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/gen"
	"github.com/toolroute/toolroute/internal/testing/golden"
	"github.com/toolroute/toolroute/internal/testing/openapistub"
	"github.com/toolroute/toolroute/internal/testing/schemavalue"
	"github.com/toolroute/toolroute/server/servertest"
)

// The generator on documents no one here wrote (testdata/docs, see its
// NOTICE): each is generated into a service module, which is built and
// run against a stub upstream made from the same document; the reader
// and the admin of the generated policy list their tools, and the admin
// calls every tool with arguments valid for its input schema, twice
// (required arguments only, then all), each call checked against the
// exact request the document says it must send and its result against
// the stub's answer.
//
// What the generator skipped and left out, and every call that did not
// go as the document asks, are pinned per document in
// testdata/outcomes/DOCUMENT.golden (go test -run TestDocuments -update
// rewrites them): a change of the generator or of the typed calls shows
// there, a fixed call as a line gone. What must hold whatever the
// generator does fails the test outright: the module builds and serves,
// the reader lists exactly the GET and HEAD tools, the admin every tool,
// each tool's route is its operation's, and each call sends one request.

// docCase is one document of testdata/docs.
type docCase struct {
	file, service string
	// noTools: the generator must refuse the document (it has no
	// operation), with this in its error.
	noTools string
}

var documents = []docCase{
	{file: "petstore.yaml", service: "petstore"},
	{file: "petstore-expanded.yaml", service: "petstore"},
	{file: "api-with-examples.yaml", service: "versions"},
	{file: "uspto.yaml", service: "uspto"},
	{file: "link-example.yaml", service: "links"},
	{file: "callback-example.yaml", service: "streams"},
	{file: "non-oauth-scopes.yaml", service: "users"},
	{file: "webhook-example.yaml", service: "pets", noTools: "no operation"},
	{file: "box.json.gz", service: "box"},
}

func TestDocuments(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and builds a service module per document: not with -short")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range documents {
		t.Run(d.file, func(t *testing.T) {
			doc, data, err := openapistub.Load(filepath.Join("testdata/docs", d.file))
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			spec, err := gen.Parse(data, gen.Options{Service: d.service, Source: d.file})
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			files, err := spec.ModuleFiles(gen.Module{Path: "example.com/" + d.service + "-mcp", Replace: root})
			elapsed := time.Since(start)
			if d.noTools != "" {
				if err == nil || !strings.Contains(err.Error(), d.noTools) {
					t.Fatalf("ModuleFiles = %d files, %v; want an error saying %q", len(files), err, d.noTools)
				}
				return
			}
			if err != nil {
				t.Fatalf("ModuleFiles: %v", err)
			}
			var out outcomes
			out.addf("# %s: %d operations, %d tools, %d skipped", d.file, len(spec.Tools)+len(spec.Skipped), len(spec.Tools), len(spec.Skipped))
			for _, s := range spec.Skipped {
				out.addf("skipped %s", s)
			}
			for _, s := range spec.Notes {
				out.addf("note %s", s)
			}
			for _, s := range spec.Warnings {
				out.addf("warning %s", s)
			}
			dir := t.TempDir()
			if err := gen.Create(dir, files); err != nil {
				t.Fatal(err)
			}
			lines := 0
			for _, f := range files {
				if strings.HasPrefix(f.Path, "tools/") && strings.HasSuffix(f.Path, ".go") {
					lines += strings.Count(string(f.Data), "\n")
				}
			}
			ops := len(spec.Tools) + len(spec.Skipped)
			t.Logf("%d operations: %d tools, %d skipped, %d notes; generated in %v; %d lines of Go in tools/ (%.0f per tool)",
				ops, len(spec.Tools), len(spec.Skipped), len(spec.Notes), elapsed.Round(time.Millisecond), lines, float64(lines)/float64(len(spec.Tools)))
			bin := build(t, root, dir)
			stub, origin := openapistub.Start(t, doc, openapistub.Options{})
			p := proc.Start(t, bin, proc.Options{Dir: dir}, "-upstream", d.service+"="+origin,
				"-policy", "policy.json", "-tokens", "tokens.json", "-addr", "127.0.0.1:0")
			url := p.Wait(t, `serving MCP at (http://\S+)`)
			exercise(t, spec, stub, url, readerToken(t, dir), &out)
			golden.Check(t, filepath.Join("testdata/outcomes", d.file+".golden"), []byte(strings.Join(out.lines, "\n")+"\n"))
		})
	}
}

// outcomes are the lines of a document's golden file.
type outcomes struct{ lines []string }

func (o *outcomes) addf(format string, a ...any) {
	o.lines = append(o.lines, fmt.Sprintf(format, a...))
}

// readerToken returns the reader's token of the generated tokens.json,
// or "" if it has none (a document without GET or HEAD operations has
// no reader role).
func readerToken(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "tokens.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tokens []struct {
		Token string   `json:"token"`
		Roles []string `json:"roles"`
	}
	if err := json.Unmarshal(data, &tokens); err != nil {
		t.Fatalf("tokens.json: %v", err)
	}
	for _, tk := range tokens {
		if slices.Contains(tk.Roles, gen.ReaderRole) {
			return tk.Token
		}
	}
	return ""
}

// build builds the module in dir (requiring this module at root through
// the replace directive the generator wrote) and returns the binary.
func build(t *testing.T, root, dir string) string {
	t.Helper()
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	bin := proc.Build(t, dir, filepath.Join(dir, "service"))
	t.Logf("built in %v", time.Since(start).Round(time.Millisecond))
	return bin
}

// exercise lists the service's tools as the reader (if there is one) and
// as the admin, and calls each of the admin's with valid arguments,
// checking the request the stub received and the tool's result; calls
// that do not go as the document asks are outcomes.
func exercise(t *testing.T, spec *gen.Spec, stub *openapistub.Stub, url, reader string, out *outcomes) {
	t.Helper()
	ctx := context.Background()
	var all, reads []string
	for _, tl := range spec.Tools {
		all = append(all, tl.Name)
		if tl.Method == http.MethodGet || tl.Method == http.MethodHead {
			reads = append(reads, tl.Name)
		}
	}
	slices.Sort(all)
	slices.Sort(reads)

	switch {
	case reader != "":
		cs := servertest.ConnectHTTP(t, url, reader, servertest.Options{})
		if got := names(t, cs); !slices.Equal(got, reads) {
			t.Errorf("the reader lists %v; want the GET and HEAD tools %v", got, reads)
		}
	case len(reads) > 0:
		t.Errorf("tokens.json has no reader, though the GET and HEAD tools %v are", reads)
	}
	admin := servertest.ConnectHTTP(t, url, gen.AdminToken, servertest.Options{})
	tools := list(t, admin)
	if got := slices.Sorted(maps.Keys(tools)); !slices.Equal(got, all) {
		t.Fatalf("the admin lists %v; want every tool %v", got, all)
	}
	calls, exact := 0, 0
	for _, tl := range spec.Tools {
		op := operationOf(t, stub, tl)
		if op == nil {
			continue
		}
		input := inputSchema(t, tools[tl.Name])
		for _, optional := range []bool{false, true} {
			variant := map[bool]string{false: "required arguments", true: "all arguments"}[optional]
			fail := func(format string, a ...any) {
				out.addf("FAIL %s (%s): %s", tl.Name, variant, fmt.Sprintf(format, a...))
			}
			args, err := schemavalue.Object(input, schemavalue.Options{Optional: optional})
			if err != nil {
				fail("no arguments valid for its input schema: %v", err)
				continue
			}
			want, err := openapistub.Expect(op, input, args)
			if err != nil {
				fail("%v", err)
				continue
			}
			stub.Prefer(op.ID)
			res, err := admin.CallTool(ctx, &mcp.CallToolParams{Name: tl.Name, Arguments: args})
			got := stub.Take()
			calls++
			switch {
			case err != nil:
				t.Errorf("%s with %s: %v", tl.Name, schemavalue.Brief(args), err)
				continue
			case len(got) != 1:
				t.Errorf("%s with %s: the stub received %d requests, want 1 (%s)", tl.Name, schemavalue.Brief(args), len(got), text(res))
				continue
			}
			if d := openapistub.Diff(want, got[0]); d != "" {
				t.Logf("%s (%s) with %s:\n%s", tl.Name, variant, schemavalue.Brief(args), d)
				fail("%s", summary(d))
				continue
			}
			if res.IsError {
				fail("a tool error for the stub's %d answer: %s", op.Response.Status, text(res))
				continue
			}
			if d := resultDiff(stub, got[0], res); d != "" {
				t.Logf("%s (%s): the result differs from the stub's answer:\n%s", tl.Name, variant, d)
				fail("the result differs from the stub's answer: %s", summary(d))
				continue
			}
			exact++
		}
	}
	out.addf("%d calls, %d as the document asks, with the stub's answer as their result", calls, exact)
	t.Logf("%d calls, %d as the document asks, with the stub's answer as their result", calls, exact)
}

// summary is the first line of a Diff with the " | "-joined errors of
// kin-openapi in it sorted (they come in map order), cut to 300 bytes:
// a stable line for a golden file.
func summary(d string) string {
	line, _, _ := strings.Cut(d, "\n")
	head := ""
	if rest, ok := strings.CutPrefix(line, refused); ok {
		head, line = refused, rest
	}
	if parts := strings.Split(line, " | "); len(parts) > 1 {
		prefix := ""
		if i := strings.LastIndex(parts[0], "at /"); i > 0 {
			prefix, parts[0] = parts[0][:i], parts[0][i:]
		}
		slices.Sort(parts)
		line = prefix + strings.Join(parts, " | ")
	}
	line = head + line
	if len(line) > 300 {
		line = line[:300] + "…"
	}
	return line
}

// refused starts the line of Diff for a request the stub refused.
const refused = "the stub refused the request: "

// resultDiff compares a tool's structured result with the stub's answer
// to the request it sent: an object answer is the result; another
// answer is the one property of the result (the generator's wrapper:
// "items" for an array); no answer, an empty result.
func resultDiff(stub *openapistub.Stub, got openapistub.Request, res *mcp.CallToolResult) string {
	var op *openapistub.Operation
	for _, o := range stub.Operations() {
		if o.ID == got.Operation {
			op = o
		}
	}
	var answer any = map[string]any{}
	if len(op.Response.Body) > 0 {
		if err := json.Unmarshal(op.Response.Body, &answer); err != nil {
			return "" // not JSON: the generator skips such operations
		}
	}
	var result any
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &result)
	if result == nil {
		result = map[string]any{}
	}
	if _, ok := answer.(map[string]any); !ok {
		wrapped, _ := result.(map[string]any)
		if len(wrapped) != 1 {
			return fmt.Sprintf("the answer %s is no object, and the result %s has not one property to hold it", schemavalue.Brief(answer), schemavalue.Brief(result))
		}
		for _, v := range wrapped {
			result = v
		}
	}
	return firstDifference("", answer, result)
}

// firstDifference returns where got first differs from want (JSON
// values), by JSON pointer, or "".
func firstDifference(at string, want, got any) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			break
		}
		for _, k := range slices.Sorted(maps.Keys(w)) {
			if _, ok := g[k]; !ok {
				return fmt.Sprintf("at %s/%s: %s is missing", at, k, schemavalue.Brief(w[k]))
			}
			if d := firstDifference(at+"/"+k, w[k], g[k]); d != "" {
				return d
			}
		}
		for _, k := range slices.Sorted(maps.Keys(g)) {
			if _, ok := w[k]; !ok {
				return fmt.Sprintf("at %s/%s: %s is not in the answer", at, k, schemavalue.Brief(g[k]))
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			break
		}
		for i := range w {
			if d := firstDifference(fmt.Sprintf("%s/%d", at, i), w[i], g[i]); d != "" {
				return d
			}
		}
		return ""
	}
	if schemavalue.Brief(want) == schemavalue.Brief(got) {
		return ""
	}
	if at == "" {
		at = "/"
	}
	return fmt.Sprintf("at %s: want %s, got %s", at, schemavalue.Brief(want), schemavalue.Brief(got))
}

// operationOf returns the stub's operation a generated tool is for.
func operationOf(t *testing.T, stub *openapistub.Stub, tl gen.Tool) *openapistub.Operation {
	t.Helper()
	for _, op := range stub.Operations() {
		if op.Method == tl.Method && op.Path == tl.Path {
			if prefix := "/" + tl.Route.URI[1:strings.IndexByte(tl.Route.URI[1:], '/')+1]; !slices.Contains(stub.Find(tl.Route.Method, strings.TrimPrefix(tl.Route.URI, prefix)), op) {
				t.Errorf("%s: route %s is not the operation's %s %s", tl.Name, tl.Route, op.Method, op.Route)
			}
			return op
		}
	}
	t.Errorf("%s: no operation %s %s in the document", tl.Name, tl.Method, tl.Path)
	return nil
}

func list(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	out := map[string]*mcp.Tool{}
	for tl, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		out[tl.Name] = tl
	}
	return out
}

func names(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	return slices.Sorted(maps.Keys(list(t, cs)))
}

// inputSchema is a tool's input schema as tools/list gives it.
func inputSchema(t *testing.T, tl *mcp.Tool) *jsonschema.Schema {
	t.Helper()
	b, err := json.Marshal(tl.InputSchema)
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s: input schema %s: %v", tl.Name, b, err)
	}
	return &s
}

// text is a result's text contents, for messages.
func text(res *mcp.CallToolResult) string {
	if res == nil {
		return "no result"
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return fmt.Sprintf("isError %v: %s", res.IsError, strings.Join(parts, " | "))
}

// BenchmarkGenerate measures the generation of the service module of
// the largest document, the Box API's (296 operations), from its bytes
// to the module's files in memory: go test ./cmd/toolroute -run X
// -bench Generate. It reports the Go lines of tools/ per operation.
func BenchmarkGenerate(b *testing.B) {
	_, data, err := openapistub.Load("testdata/docs/box.json.gz")
	if err != nil {
		b.Fatal(err)
	}
	var lines, ops int
	for b.Loop() {
		spec, err := gen.Parse(data, gen.Options{Service: "box", Source: "box.json"})
		if err != nil {
			b.Fatal(err)
		}
		files, err := spec.ModuleFiles(gen.Module{Path: "example.com/box-mcp", Replace: "/toolroute"})
		if err != nil {
			b.Fatal(err)
		}
		lines, ops = 0, len(spec.Tools)+len(spec.Skipped)
		for _, f := range files {
			if strings.HasPrefix(f.Path, "tools/") && strings.HasSuffix(f.Path, ".go") {
				lines += strings.Count(string(f.Data), "\n")
			}
		}
	}
	b.ReportMetric(float64(lines)/float64(ops), "lines/operation")
}
