package gen_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/toolroute/toolroute/authz/export"
	"github.com/toolroute/toolroute/internal/gen"
	"github.com/toolroute/toolroute/internal/testing/golden"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
)

// docs are the test documents, by file, with the service key each is
// generated for.
var docs = []struct{ file, service string }{
	{"petstore.yaml", "petstore"},
	{"things.yaml", "things"},
}

func parse(t *testing.T, file, service string) *gen.Spec {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "openapi", file))
	if err != nil {
		t.Fatal(err)
	}
	s, err := gen.Parse(data, gen.Options{Service: service, Source: file})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func moduleFiles(t *testing.T, s *gen.Spec) []gen.File {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("testdata", "openapi", s.Source))
	if err != nil {
		t.Fatal(err)
	}
	files, err := s.ModuleFiles(gen.Module{Path: "example.com/" + s.Service + "-mcp", Version: "v0.1.0", Document: doc})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestGolden pins every file toolroute new writes for each test document
// (testdata/golden/DOC/...), and what it reports skipping and leaving out
// (report.txt). go test -update rewrites them.
func TestGolden(t *testing.T) {
	for _, d := range docs {
		t.Run(d.file, func(t *testing.T) {
			s := parse(t, d.file, d.service)
			dir := filepath.Join("testdata", "golden", strings.TrimSuffix(d.file, filepath.Ext(d.file)))
			files := moduleFiles(t, s)
			var want []string
			for _, f := range files {
				want = append(want, f.Path)
				golden.Check(t, filepath.Join(dir, filepath.FromSlash(f.Path)), f.Data)
			}
			var report strings.Builder
			for _, k := range s.Skipped {
				report.WriteString("skipped " + k.String() + "\n")
			}
			for _, n := range s.Notes {
				report.WriteString(n.String() + "\n")
			}
			golden.Check(t, filepath.Join(dir, "report.txt"), []byte(report.String()))
			want = append(want, "report.txt")
			// No golden file of a file new no longer writes.
			var got []string
			filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
				if err == nil && !e.IsDir() {
					rel, _ := filepath.Rel(dir, path)
					got = append(got, filepath.ToSlash(rel))
				}
				return nil
			})
			slices.Sort(want)
			if !golden.Updating() {
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("golden files of %s (-written +in testdata):\n%s", d.file, diff)
				}
			}
		})
	}
}

// TestDeterministic: the same document gives the same bytes, generation
// after generation (Go's map order differs from one to the next, and
// kin-openapi keeps properties, paths and responses in maps).
func TestDeterministic(t *testing.T) {
	for _, d := range docs {
		first := moduleFiles(t, parse(t, d.file, d.service))
		for range 5 {
			again := moduleFiles(t, parse(t, d.file, d.service))
			if diff := cmp.Diff(first, again); diff != "" {
				t.Fatalf("%s: a second generation differs:\n%s", d.file, diff)
			}
		}
	}
}

// TestJSONAndYAML: a document in JSON and the same in YAML give the same
// files.
func TestJSONAndYAML(t *testing.T) {
	fromYAML := moduleFiles(t, parse(t, "petstore.yaml", "petstore"))
	data, err := os.ReadFile("testdata/openapi/petstore.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := gen.Parse(data, gen.Options{Service: "petstore", Source: "petstore.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fromYAML, moduleFiles(t, s)); diff != "" {
		t.Errorf("petstore.json and petstore.yaml give different files:\n%s", diff)
	}
}

// TestDrift: export.CheckOpenAPI finds every generated tool's route among
// the document's operations (under the first server's base path), and
// no operation unused but the skipped ones.
func TestDrift(t *testing.T) {
	for _, d := range docs {
		s := parse(t, d.file, d.service)
		var table registry.RouteTable
		for _, tl := range s.Tools {
			table.Tools = append(table.Tools, registry.RouteTableEntry{Name: tl.Name, ServiceKey: d.service, Routes: []tool.Route{tl.Route}})
		}
		raw, _ := os.ReadFile(filepath.Join("testdata", "openapi", d.file))
		doc, err := yaml.YAMLToJSON(raw)
		if err != nil {
			t.Fatal(err)
		}
		drift, err := export.CheckOpenAPI(table, d.service, doc)
		if err != nil {
			t.Fatal(err)
		}
		if err := drift.Err(); err != nil {
			t.Errorf("%s: %v", d.file, err)
		}
		var unused, skipped []string
		for _, op := range drift.Unused {
			unused = append(unused, op.String())
		}
		for _, k := range s.Skipped {
			op, _, _ := strings.Cut(k.Operation, " (")
			skipped = append(skipped, op)
		}
		slices.Sort(unused)
		slices.Sort(skipped)
		if diff := cmp.Diff(skipped, unused); diff != "" {
			t.Errorf("%s: operations without a tool (-skipped +unused by the drift check):\n%s", d.file, diff)
		}
	}
}

// TestSkipped: each operation the generator cannot make a tool of is
// skipped with its reason, and each part of one it leaves out is noted.
func TestSkipped(t *testing.T) {
	s := parse(t, "things.yaml", "things")
	want := []gen.Skip{
		{"GET /files/{name}.json (getFile)", `path segment "{name}.json": a path parameter must be a whole segment (a route placeholder stands for one segment)`},
		{"GET /reports/{id} (getReport)", "response 200: content type text/plain: upstream.Forward decodes JSON answers only"},
		{"GET /session (getSession)", `cookie parameter "sid" (required): cookie parameters are not supported (upstream.Forward sends no cookies)`},
		{"OPTIONS /things (thingsOptions)", "method OPTIONS: only GET, HEAD, POST, PUT, PATCH and DELETE operations become tools"},
		{"POST /exports (startExport)", "it names a server of its own (https://exports.things.example/v1), not the document's first: its requests go elsewhere than the service's (generate a service for that server)"},
		{"POST /uploads (upload)", "request body: content type multipart/form-data is not supported (upstream.Forward sends JSON)"},
	}
	if diff := cmp.Diff(want, s.Skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	wantNotes := []gen.Skip{
		{"GET /things (listThings)", `header parameter "Accept" left out: the header Accept is the HTTP client's to set`},
		{"GET /things (listThings)", `cookie parameter "session" left out: cookie parameters are not supported (upstream.Forward sends no cookies)`},
		{"GET /things (listThings)", `query parameter "filter" left out: style "deepObject" is not supported (upstream.Forward writes form style: key=value, a list as repeated keys)`},
	}
	if diff := cmp.Diff(wantNotes, s.Notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
}

// TestTools: names (operationId in snake case, else method and path;
// deduplicated), files (never read as a test or a build constraint, nor
// a file of the package's own), behaviours and routes (under the base
// path, placeholders renamed to identifiers).
func TestTools(t *testing.T) {
	s := parse(t, "things.yaml", "things")
	type row struct{ name, file, behaviour, route string }
	var got []row
	for _, tl := range s.Tools {
		b := tl.Behaviour.String()
		if tl.Idempotent {
			b += ", idempotent"
		}
		got = append(got, row{tl.Name, tl.File, b, tl.Route.String()})
	}
	want := []row{
		{"count_things", "count_things.go", "read-only", "HEAD /things/api/v2/things"},
		{"create_thing", "create_thing.go", "additive", "POST /things/api/v2/things"},
		{"delete_thing", "delete_thing.go", "destructive, idempotent", "DELETE /things/api/v2/things/{thing_id}"},
		{"get_thing", "get_thing.go", "read-only", "GET /things/api/v2/things/{thing_id}"},
		{"get_thing_2", "get_thing_2.go", "destructive", "PATCH /things/api/v2/things/{thing_id}"},
		{"list_archived_things", "list_archived_things.go", "read-only", "GET /things/api/v2/things"},
		{"list_lists", "list_lists.go", "read-only", "GET /things/api/v2/lists/"},
		{"list_things", "list_things.go", "read-only", "GET /things/api/v2/things"},
		{"post_things_thing_id_tags", "post_things_thing_id_tags.go", "additive", "POST /things/api/v2/things/{thing_id}/tags"},
		{"rate_thing", "rate_thing.go", "destructive, idempotent", "PUT /things/api/v2/things/{id}/rating"},
		{"registry", "registry_tool.go", "read-only", "GET /things/api/v2/trees"},
		{"replace_thing", "replace_thing.go", "destructive, idempotent", "PUT /things/api/v2/things/{thing_id}"},
		{"run_test", "run_test_tool.go", "read-only", "GET /things/api/v2/scores/{score}"},
		{"search", "search.go", "read-only", "GET /things/api/v2/search"},
		{"search_by_body", "search_by_body.go", "additive", "POST /things/api/v2/search"},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(row{})); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}

// TestDescription: a long description is cut at a paragraph, a sentence
// or a word, and an operation without one says what it sends.
func TestDescription(t *testing.T) {
	para := strings.Repeat("word ", 150) // 750 runes
	for _, tt := range []struct{ summary, description, want string }{
		{"", "", "Sends GET /x to the svc service."},
		{"Sum.", "", "Sum."},
		{"Sum", "Sum and more.", "Sum and more."},
		{"Sum", "More.", "Sum\n\nMore."},
		{"", para + "\n\n" + para, strings.TrimSpace(para)},
		{"", para + "end. " + para, para + "end."},
		{"", strings.Repeat("w ", 600), strings.TrimSpace(strings.Repeat("w ", 511)) + "…"},
	} {
		doc := `{"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": {"/x": {"get": {"operationId": "x", ` +
			`"summary": ` + quote(tt.summary) + `, "description": ` + quote(tt.description) + `, "responses": {"204": {"description": "ok"}}}}}}`
		s, err := gen.Parse([]byte(doc), gen.Options{Service: "svc"})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Tools[0].Description; got != tt.want {
			t.Errorf("summary %.20q, description %.20q: description %q, want %q", tt.summary, tt.description, got, tt.want)
		}
		if n := len([]rune(s.Tools[0].Description)); n > 1024 {
			t.Errorf("description of %d runes, want at most 1024", n)
		}
	}
}

func quote(s string) string {
	var b bytes.Buffer
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// TestParseRefuses: what is not an OpenAPI 3 document, and a service key
// that is not one plain segment, are refused with what to do.
func TestParseRefuses(t *testing.T) {
	for _, tt := range []struct{ doc, service, want string }{
		{`{"swagger": "2.0", "info": {"title": "t", "version": "1"}, "paths": {}}`, "svc", "a Swagger 2.0 document must be converted to OpenAPI 3 first"},
		{`{"openapi": "4.0.0", "info": {"title": "t", "version": "1"}, "paths": {}}`, "svc", `OpenAPI version "4.0.0": toolroute reads 3.0, 3.1 and 3.2`},
		{`not: [a document`, "svc", "OpenAPI document:"},
		{`{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {}}`, "Pet Store", `service key "Pet Store": use lower-case letters, digits and "-"`},
		{`{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {}}`, "", "a service key is required"},
	} {
		_, err := gen.Parse([]byte(tt.doc), gen.Options{Service: tt.service})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%.40s (service %q): %v, want an error containing %q", tt.doc, tt.service, err, tt.want)
		}
	}
}

// TestGoVersion: a generated module's go directive is toolroute's own.
func TestGoVersion(t *testing.T) {
	data, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "\ngo "+gen.GoVersion+"\n") {
		t.Errorf("gen.GoVersion is %s; toolroute's go.mod says otherwise", gen.GoVersion)
	}
}

// TestAnswerWithoutSchema: a JSON answer the document gives no schema is
// the result itself when its examples are all objects, and the result's
// "value" otherwise (an array or a string example, or none): a
// structured result is an object, and nothing says the answer is one.
func TestAnswerWithoutSchema(t *testing.T) {
	for _, tc := range []struct{ name, content, want string }{
		{"object examples", `{"examples": {"a": {"value": {"id": 1}}, "b": {"value": {}}}}`, "type GetVOutput map[string]json.RawMessage\n"},
		{"object example", `{"example": {"id": 1}}`, "type GetVOutput map[string]json.RawMessage\n"},
		{"an array example", `{"examples": {"a": {"value": {"id": 1}}, "b": {"value": [1]}}}`, "Value json.RawMessage `json:\"value\" in:\"body\""},
		{"a string example", `{"example": "{\"id\": 1}"}`, "Value json.RawMessage `json:\"value\" in:\"body\""},
		{"no example", `{}`, "Value json.RawMessage `json:\"value\" in:\"body\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := `{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {"/v": {"get": {"operationId": "getV",
				"responses": {"200": {"description": "ok", "content": {"application/json": ` + tc.content + `}}}}}}}`
			if got := fileOf(t, doc, "get_v.go"); !strings.Contains(got, tc.want) {
				t.Errorf("get_v.go does not hold %q:\n%s", tc.want, got)
			}
		})
	}
}

// fileOf returns the file path of the tools package generated from doc.
func fileOf(t *testing.T, doc, path string) string {
	t.Helper()
	s, err := gen.Parse([]byte(doc), gen.Options{Service: "svc", Source: "t.json"})
	if err != nil {
		t.Fatal(err)
	}
	files, err := s.ToolFiles()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(files, func(f gen.File) bool { return f.Path == path })
	if i < 0 {
		t.Fatalf("no %s among %d files", path, len(files))
	}
	return string(files[i].Data)
}

// TestUnions: a oneOf or anyOf of typed schemas is an upstream.OneOf or
// AnyOf of a struct of its alternatives (a component's named
// NAMEAlternatives), null members left out; a oneOf of objects as the
// answer is the result itself, its properties as they came; a member
// closing a cycle, or one of any JSON, makes the union any JSON.
func TestUnions(t *testing.T) {
	doc := `{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {"/v": {"post": {"operationId": "postV",
		"requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {
			"entity": {"$ref": "#/components/schemas/Entity"},
			"length": {"anyOf": [{"type": "string", "enum": ["none"]}, {"type": "integer", "minimum": 1}, {"type": "null"}]},
			"loose": {"oneOf": [{"type": "string"}, {}]},
			"node": {"$ref": "#/components/schemas/Node"}}}}}},
		"responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Entity"}}}}}}}},
		"components": {"schemas": {
			"Entity": {"type": "object", "oneOf": [{"$ref": "#/components/schemas/User"}, {"$ref": "#/components/schemas/Group"}]},
			"User": {"type": "object", "properties": {"id": {"type": "string"}}},
			"Group": {"type": "object", "properties": {"gid": {"type": "string"}}},
			"Node": {"oneOf": [{"type": "string"}, {"$ref": "#/components/schemas/Tree"}]},
			"Tree": {"type": "object", "properties": {"nodes": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}}}}}}`
	// gofmt aligns fields: compare with single spaces.
	spaces := regexp.MustCompile(` +`)
	tool := spaces.ReplaceAllString(fileOf(t, doc, "post_v.go"), " ")
	types := spaces.ReplaceAllString(fileOf(t, doc, "types.go"), " ")
	for _, want := range []string{
		"Entity Entity `json:\"entity,omitempty\"`",
		"Length upstream.AnyOf[PostVInputLengthAlternatives] `json:\"length,omitempty\"`",
		"Option1 string `json:\"option1\" jsonschema:\"enum=none\"`",
		"Option2 int64 `json:\"option2\" jsonschema:\"minimum=1\"`",
		"Loose json.RawMessage `json:\"loose,omitempty\"` // one of several schemas: any JSON here",
		"type PostVOutput map[string]json.RawMessage",
	} {
		if !strings.Contains(tool, want) {
			t.Errorf("post_v.go does not hold %q:\n%s", want, tool)
		}
	}
	for _, want := range []string{
		"type Entity = upstream.OneOf[EntityAlternatives]",
		"User User `json:\"user\"`",
		"Group Group `json:\"group\"`",
		`"github.com/toolroute/toolroute/upstream"`,
		"type Node = json.RawMessage",
	} {
		if !strings.Contains(types, want) {
			t.Errorf("types.go does not hold %q:\n%s", want, types)
		}
	}
}

// TestUndeclaredRequired: a property an object schema requires but does
// not declare (Box's SharedLink and "accessed") is a required field of
// any JSON, and a warning names it; a schema whose additional or
// alternative properties may declare it gets neither.
func TestUndeclaredRequired(t *testing.T) {
	doc := `{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {"/links/{id}": {"get": {"operationId": "getLink",
		"parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
		"responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Link"}}}}}}}},
		"components": {"schemas": {
			"Link": {"type": "object", "properties": {"url": {"type": "string"}, "extra": {"$ref": "#/components/schemas/Open"}},
				"allOf": [{"required": ["url", "accessed"]}]},
			"Open": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"], "additionalProperties": {"type": "string"}}}}}`
	s, err := gen.Parse([]byte(doc), gen.Options{Service: "svc", Source: "t.json"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`the schema of Link requires the property "accessed", which it does not declare (likely an error of the document; JSON Schema lets it be any value): Link.Accessed is any JSON`}
	if diff := cmp.Diff(want, s.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	types := regexp.MustCompile(` +`).ReplaceAllString(fileOf(t, doc, "types.go"), " ")
	if want := "Accessed json.RawMessage `json:\"accessed\"` // required by the schema, which declares no such property: any JSON here"; !strings.Contains(types, want) {
		t.Errorf("types.go does not hold %q:\n%s", want, types)
	}
	if strings.Contains(types, `json:"b"`) {
		t.Errorf("types.go has a field for Open's b, which its additionalProperties declare:\n%s", types)
	}
}
