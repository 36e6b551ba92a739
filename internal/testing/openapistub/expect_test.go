package openapistub_test

import (
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/toolroute/toolroute/internal/testing/openapistub"
	"github.com/toolroute/toolroute/internal/testing/schemavalue"
)

// TestExpect checks the request Expect derives from arguments, written
// out by hand from the document.
func TestExpect(t *testing.T) {
	_, stub, _ := features(t)
	obj := func(names ...string) *jsonschema.Schema {
		s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}
		for _, n := range names {
			s.Properties[n] = &jsonschema.Schema{}
		}
		return s
	}
	for _, tc := range []struct {
		name, op string
		input    *jsonschema.Schema
		args     map[string]any
		want     openapistub.Request
	}{{
		name: "path escaped as one segment, repeated and comma-joined arrays, an integer, a header",
		op:   "getThing", input: obj("id", "tags", "fields", "limit", "X-Request-Id"),
		args: map[string]any{"id": "a b/é", "tags": []any{"t&1", "t 2"}, "fields": []any{"f1", "f2"}, "limit": 3.0, "X-Request-Id": "r-1"},
		want: openapistub.Request{Operation: "getThing", Method: "GET", Path: "/base/things/a%20b%2F%C3%A9",
			RawQuery: "fields=f1%2Cf2&limit=3&tags=t%261&tags=t+2", Header: http.Header{"X-Request-Id": {"r-1"}}},
	}, {
		name: "names folded to parameters'; zero-valued optional arguments left out",
		op:   "getThing", input: &jsonschema.Schema{Type: "object", Required: []string{"ID"}, Properties: obj("ID", "x_request_id", "limit", "tags").Properties},
		args: map[string]any{"ID": "7", "x_request_id": "", "limit": 0.0, "tags": []any{}},
		want: openapistub.Request{Operation: "getThing", Method: "GET", Path: "/base/things/7"},
	}, {
		name: "a body whose properties are the other arguments",
		op:   "renameThing", input: obj("id", "name"),
		args: map[string]any{"id": "x", "name": "n"},
		want: openapistub.Request{Operation: "renameThing", Method: "PUT", Path: "/base/things/x", ContentType: "application/json", Body: []byte(`{"name":"n"}`)},
	}, {
		name: "a body property that clashes with a parameter: the body is one argument",
		op:   "createThing", input: obj("kind", "payload"),
		args: map[string]any{"kind": "small", "payload": map[string]any{"kind": "large", "secret": "s"}},
		want: openapistub.Request{Operation: "createThing", Method: "POST", Path: "/base/things", RawQuery: "kind=small",
			ContentType: "application/json", Body: []byte(`{"kind":"large","secret":"s"}`)},
	}, {
		name: "a whole body given as {} is sent",
		op:   "createThing", input: obj("kind", "payload"),
		args: map[string]any{"kind": "small", "payload": map[string]any{}},
		want: openapistub.Request{Operation: "createThing", Method: "POST", Path: "/base/things", RawQuery: "kind=small",
			ContentType: "application/json", Body: []byte(`{}`)},
	}, {
		name: "no arguments for the body's properties: an empty object",
		op:   "renameThing", input: obj("id", "name"),
		args: map[string]any{"id": "x"},
		want: openapistub.Request{Operation: "renameThing", Method: "PUT", Path: "/base/things/x", ContentType: "application/json", Body: []byte(`{}`)},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := openapistub.Expect(operation(t, stub, tc.op), tc.input, tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Expect (-want +got):\n%s", diff)
			}
		})
	}
}

// TestExpectRefuses checks that arguments with no place in the
// operation are errors, not a request Expect makes up.
func TestExpectRefuses(t *testing.T) {
	_, stub, _ := features(t)
	for _, tc := range []struct {
		name, op string
		args     map[string]any
		want     string
		noSer    bool
	}{
		{"an argument that is no parameter, and no body", "getThing", map[string]any{"id": "x", "extra": 1.0}, "takes no JSON body", false},
		{"a path parameter without an argument", "getThing", map[string]any{}, `path parameter "id" has no argument`, false},
		{"an object where a header value belongs", "getThing", map[string]any{"id": "x", "X-Request-Id": map[string]any{"a": 1.0}}, "an object where", true},
		{"an array of objects in a query", "getThing", map[string]any{"id": "x", "tags": []any{map[string]any{}}}, "an object where", true},
		{"two arguments beside the body's properties", "putThing", map[string]any{"id": "x", "a": 1.0, "b": 2.0}, "neither the body's properties nor one whole body", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := openapistub.Expect(operation(t, stub, tc.op), nil, tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, openapistub.ErrNoSerialization) != tc.noSer {
				t.Fatalf("Expect = %+v, %v; want an error containing %q (ErrNoSerialization: %v)", got, err, tc.want, tc.noSer)
			}
		})
	}
}

// TestDiff checks that Diff names each way a request can differ, and
// none where requests mean the same.
func TestDiff(t *testing.T) {
	want := openapistub.Request{Operation: "op", Method: "POST", Path: "/a/b%20c", RawQuery: "k=1&k=2&m=x",
		Header: http.Header{"X-Id": {"1"}}, ContentType: "application/json", Body: []byte(`{"a":1,"b":[1,2]}`)}
	same := want
	same.RawQuery = "m=x&k=1&k=2"
	same.Body = []byte(`{"b":[1,2],  "a":1.0}`)
	same.ContentType = "application/json; charset=utf-8"
	same.Header = http.Header{"X-Id": {"1"}}
	if d := openapistub.Diff(want, same); d != "" {
		t.Errorf("Diff of requests that mean the same: %s", d)
	}
	alike := want
	alike.Operation, alike.Alike = "other", []string{"op", "other"}
	if d := openapistub.Diff(want, alike); d != "" {
		t.Errorf("Diff of a request taken for an operation alike: %s", d)
	}
	for _, tc := range []struct {
		name   string
		change func(*openapistub.Request)
		want   string
	}{
		{"operation", func(r *openapistub.Request) { r.Operation = "other" }, "operation:"},
		{"method", func(r *openapistub.Request) { r.Method = "PUT" }, "method:"},
		{"path escaping", func(r *openapistub.Request) { r.Path = "/a/b c" }, "escaped path:"},
		{"a query value dropped", func(r *openapistub.Request) { r.RawQuery = "k=1&m=x" }, "query"},
		{"query values reordered", func(r *openapistub.Request) { r.RawQuery = "k=2&k=1&m=x" }, "query"},
		{"a query joined", func(r *openapistub.Request) { r.RawQuery = "k=1,2&m=x" }, "query"},
		{"a header", func(r *openapistub.Request) { r.Header = nil }, "header parameters"},
		{"a body value", func(r *openapistub.Request) { r.Body = []byte(`{"a":2,"b":[1,2]}`) }, "body"},
		{"a body not JSON", func(r *openapistub.Request) { r.Body = []byte(`a=1`) }, "not JSON"},
		{"no body", func(r *openapistub.Request) { r.Body = nil }, "body"},
		{"a content type", func(r *openapistub.Request) { r.ContentType = "text/plain" }, "content type"},
		{"a problem", func(r *openapistub.Request) { r.Problem = "bad" }, "refused"},
	} {
		got := want
		got.Header = want.Header.Clone()
		tc.change(&got)
		if d := openapistub.Diff(want, got); !strings.Contains(d, tc.want) {
			t.Errorf("%s: Diff = %q; want it to mention %q", tc.name, d, tc.want)
		}
	}
	if d := openapistub.Diff(openapistub.Request{Method: "GET", Path: "/"}, openapistub.Request{Method: "GET", Path: "/", Body: []byte("x")}); !strings.Contains(d, "want none") {
		t.Errorf("Diff of an unexpected body = %q", d)
	}
}

// TestJSONSchema checks the conversion of what OpenAPI 3.0 says in its
// own words: readOnly and writeOnly by use, nullable, a boolean
// exclusiveMinimum, a recursive $ref, a discriminator's mapping.
func TestJSONSchema(t *testing.T) {
	doc := load(t, "testdata/features.yaml")
	thing := doc.Components.Schemas["Thing"]
	for _, tc := range []struct {
		use           openapistub.Use
		props, absent string
		required      []string
	}{
		{openapistub.InResponse, "created", "secret", []string{"id", "created"}},
		{openapistub.InRequest, "secret", "created", []string{"id", "secret"}},
	} {
		s, err := openapistub.JSONSchema(&openapi3.SchemaRef{Ref: "#/components/schemas/Thing", Value: thing.Value}, tc.use)
		if err != nil {
			t.Fatal(err)
		}
		if s.Ref != "#/$defs/Thing" || s.Defs["Thing"] == nil {
			t.Fatalf("use %d: root %s: want a $ref to $defs/Thing", tc.use, schemavalue.Brief(s))
		}
		d := s.Defs["Thing"]
		if d.Properties[tc.props] == nil || d.Properties[tc.absent] != nil || !slices.Equal(d.Required, tc.required) {
			t.Errorf("use %d: properties %v, required %v; want %s, not %s, required %v", tc.use, slices.Sorted(maps.Keys(d.Properties)), d.Required, tc.props, tc.absent, tc.required)
		}
		size := d.Properties["size"]
		if size.Minimum != nil || size.ExclusiveMinimum == nil || *size.ExclusiveMinimum != 0 || *size.Maximum != 2 {
			t.Errorf("size: %s; want exclusiveMinimum 0 and maximum 2", schemavalue.Brief(size))
		}
		if note := d.Properties["note"]; !slices.Equal(note.Types, []string{"string", "null"}) {
			t.Errorf("note: %s; want type [string null]", schemavalue.Brief(note))
		}
		if parent := d.Properties["parent"]; parent.Ref != "#/$defs/Thing" {
			t.Errorf("parent: %s; want a $ref to $defs/Thing", schemavalue.Brief(parent))
		}
	}
	shape, err := openapistub.JSONSchema(doc.Components.Schemas["Shape"], openapistub.InResponse)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(shape.OneOf)
	for _, want := range []string{`"const":"round"`, `"const":"Square"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("Shape's alternatives %s: want %s", b, want)
		}
	}
}

// TestComponents makes a value for every component schema of the
// documents (the Box API's several hundred among them), converted by
// JSONSchema, and holds it to kin-openapi's validator: the conversion
// and the generation agree with how OpenAPI reads the schema.
func TestComponents(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(docs, "*"))
	n := 0
	for _, f := range files {
		if filepath.Base(f) == "NOTICE" {
			continue
		}
		doc := load(t, f)
		if doc.Components == nil {
			continue
		}
		opts := []openapi3.SchemaValidationOption{openapi3.VisitAsResponse(), openapi3.EnableFormatValidation()}
		if doc.IsOpenAPI31OrLater() {
			opts = append(opts, openapi3.EnableJSONSchema2020())
		}
		for _, name := range slices.Sorted(maps.Keys(doc.Components.Schemas)) {
			ref := doc.Components.Schemas[name]
			s, err := openapistub.JSONSchema(ref, openapistub.InResponse)
			if err != nil {
				t.Errorf("%s: %s: %v", filepath.Base(f), name, err)
				continue
			}
			for _, optional := range []bool{false, true} {
				v, err := schemavalue.Generate(s, schemavalue.Options{Optional: optional})
				if err != nil {
					t.Errorf("%s: %s: %v", filepath.Base(f), name, err)
					continue
				}
				if err := ref.Value.VisitJSON(v, opts...); err != nil {
					t.Errorf("%s: %s (optional %v): kin-openapi refuses %s: %v", filepath.Base(f), name, optional, schemavalue.Brief(v), err)
				}
				n++
			}
		}
	}
	t.Logf("%d values of component schemas", n)
	if n < 500 {
		t.Errorf("%d values; the Box API alone has more than 250 component schemas", n)
	}
}
