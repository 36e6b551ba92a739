package openapistub_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/toolroute/toolroute/internal/testing/openapistub"
	"github.com/toolroute/toolroute/internal/testing/schemavalue"
)

// docs are the documents no one here wrote, which the generator's
// end-to-end tests serve with this stub.
const docs = "../../../cmd/toolroute/testdata/docs"

func load(t *testing.T, path string) *openapi3.T {
	t.Helper()
	doc, _, err := openapistub.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// inputSchema is the input schema a tool for op has by the generator's
// contract: a property per path, query and header parameter, named as
// the parameter; the JSON body's properties beside them when the body is
// an object whose properties clash with no parameter, else one "body"
// property holding the body.
func inputSchema(t *testing.T, op *openapistub.Operation) *jsonschema.Schema {
	t.Helper()
	root := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}, Defs: map[string]*jsonschema.Schema{}}
	add := func(name string, ref *openapi3.SchemaRef, required bool) {
		s, err := openapistub.JSONSchema(ref, openapistub.InRequest)
		if err != nil {
			t.Fatalf("%s: %s: %v", op.ID, name, err)
		}
		for k, d := range s.Defs {
			if _, ok := root.Defs[k]; !ok {
				root.Defs[k] = d
			}
		}
		s.Defs = nil
		root.Properties[name] = s
		if required {
			root.Required = append(root.Required, name)
		}
	}
	for _, p := range op.Params {
		if p.In != openapi3.ParameterInCookie {
			add(p.Name, p.Schema, p.Required || p.In == openapi3.ParameterInPath)
		}
	}
	rb := op.Op.RequestBody
	if rb == nil || rb.Value == nil {
		return root
	}
	var ref *openapi3.SchemaRef
	for _, ct := range slices.Sorted(maps.Keys(rb.Value.Content)) {
		if ct == "application/json" || strings.HasSuffix(ct, "+json") {
			ref = rb.Value.Content[ct].Schema
			break
		}
	}
	if ref == nil || ref.Value == nil {
		return root
	}
	body := ref.Value
	inline := len(body.Properties) > 0 && len(body.AllOf) == 0
	for name := range body.Properties {
		for _, p := range op.Params {
			if openapistub.Fold(name) == openapistub.Fold(p.Name) {
				inline = false
			}
		}
	}
	if !inline {
		add("body", ref, rb.Value.Required)
		return root
	}
	for _, name := range slices.Sorted(maps.Keys(body.Properties)) {
		if p := body.Properties[name]; p.Value == nil || !p.Value.ReadOnly {
			add(name, p, slices.Contains(body.Required, name))
		}
	}
	return root
}

// send sends the request want describes to origin and returns the answer.
func send(t *testing.T, origin string, want openapistub.Request) (*http.Response, []byte) {
	t.Helper()
	u := origin + want.Path
	if want.RawQuery != "" {
		u += "?" + want.RawQuery
	}
	req, err := http.NewRequest(want.Method, u, bytes.NewReader(want.Body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range want.Header {
		req.Header[k] = vs
	}
	if want.ContentType != "" {
		req.Header.Set("Content-Type", want.ContentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// TestDocuments serves each document no one here wrote and sends every
// operation a request made from arguments valid for a tool's input
// schema (with optional arguments and without): the stub must route it
// to its operation, find it conforming (kin-openapi's request
// validation, which knows nothing of Expect or schemavalue), record
// exactly what was sent, and answer with the operation's response, which
// kin-openapi's response validation accepts.
func TestDocuments(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(docs, "*"))
	if err != nil {
		t.Fatal(err)
	}
	total, unserializable := 0, 0
	for _, f := range files {
		if filepath.Base(f) == "NOTICE" {
			continue
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			doc := load(t, f)
			stub, origin := openapistub.Start(t, doc, openapistub.Options{})
			ops := stub.Operations()
			if len(ops) == 0 && len(doc.Webhooks) == 0 {
				t.Fatal("no operations")
			}
			for _, op := range ops {
				input := inputSchema(t, op)
				for _, optional := range []bool{false, true} {
					args, err := schemavalue.Object(input, schemavalue.Options{Optional: optional})
					if err != nil {
						t.Errorf("%s: arguments: %v", op.ID, err)
						continue
					}
					want, err := openapistub.Expect(op, input, args)
					if errors.Is(err, openapistub.ErrNoSerialization) {
						t.Logf("%s: no request to expect: %v", op.ID, err)
						unserializable++
						continue
					}
					if err != nil {
						t.Errorf("%s: %v", op.ID, err)
						continue
					}
					resp, body := send(t, origin, want)
					got := stub.Take()
					if len(got) != 1 {
						t.Fatalf("%s: the stub recorded %d requests, want 1", op.ID, len(got))
					}
					if d := openapistub.Diff(want, got[0]); d != "" {
						t.Errorf("%s (optional %v) with %s: %s", op.ID, optional, schemavalue.Brief(args), d)
						continue
					}
					if !bytes.Equal(got[0].Body, want.Body) || got[0].Path != want.Path || got[0].RawQuery != want.RawQuery {
						t.Errorf("%s: recorded %+v, sent %+v", op.ID, got[0], want)
					}
					// The answer is that of the operation the stub took the
					// request for (of operations alike, the first that
					// accepts it).
					checkAnswer(t, doc, operation(t, stub, got[0].Operation), resp, body)
					total++
				}
			}
			t.Logf("%d operations, each called twice", len(ops))
		})
	}
	if unserializable > 2 {
		t.Errorf("%d calls had no request to expect; box's get_search (an array of objects in a query) is the one known", unserializable)
	}
	if total < 600 {
		t.Errorf("%d calls in all; the documents have more than 300 operations", total)
	}
}

// checkAnswer checks a stub's answer to op: its recorded response, and
// valid for the operation by kin-openapi's response validation.
func checkAnswer(t *testing.T, doc *openapi3.T, op *openapistub.Operation, resp *http.Response, body []byte) {
	t.Helper()
	if resp.StatusCode != op.Response.Status || !bytes.Equal(body, op.Response.Body) || resp.Header.Get("Content-Type") != op.Response.ContentType {
		t.Errorf("%s: answered %d %q %q, want %d %q %q", op.ID, resp.StatusCode, resp.Header.Get("Content-Type"), body,
			op.Response.Status, op.Response.ContentType, op.Response.Body)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		t.Errorf("%s: status %d is not 2xx", op.ID, resp.StatusCode)
	}
	req, _ := http.NewRequest(op.Method, "http://stub"+op.Route, nil)
	err := openapi3filter.ValidateResponse(req.Context(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: req,
			Route:   &routers.Route{Spec: doc, Path: op.Path, PathItem: doc.Paths.Value(op.Path), Method: op.Method, Operation: op.Op},
		},
		Status: resp.StatusCode,
		Header: resp.Header,
		Body:   io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			// kin-openapi decodes JSON bodies only.
			ExcludeResponseBody: !strings.Contains(op.Response.ContentType, "json"),
		},
	})
	if err != nil {
		t.Errorf("%s: the answer %d %s is not valid for the operation: %v", op.ID, resp.StatusCode, schemavalue.Brief(json.RawMessage(body)), err)
	}
}

func features(t *testing.T) (*openapi3.T, *openapistub.Stub, string) {
	t.Helper()
	doc := load(t, "testdata/features.yaml")
	stub, origin := openapistub.Start(t, doc, openapistub.Options{})
	return doc, stub, origin
}

func operation(t *testing.T, stub *openapistub.Stub, id string) *openapistub.Operation {
	t.Helper()
	for _, op := range stub.Operations() {
		if op.ID == id {
			return op
		}
	}
	t.Fatalf("no operation %s", id)
	return nil
}

// TestAnswers checks which response the stub makes for each shape of
// operation: a valid example as it is, a value made for the schema when
// the example is not valid (writeOnly properties left out, readOnly
// ones in), no body for a 204, a 2XX range as 200, a discriminator's
// mapping honoured, and a binary body.
func TestAnswers(t *testing.T) {
	_, stub, _ := features(t)
	decode := func(op *openapistub.Operation) any {
		var v any
		if err := json.Unmarshal(op.Response.Body, &v); err != nil {
			t.Fatalf("%s: %v", op.ID, err)
		}
		return v
	}
	if diff := cmp.Diff(map[string]any{"id": "from-the-example", "kind": "small", "created": "2024-01-02T03:04:05Z"}, decode(operation(t, stub, "getThing"))); diff != "" {
		t.Errorf("getThing answers with its example (-want +got):\n%s", diff)
	}
	put := decode(operation(t, stub, "putThing")).(map[string]any)
	if _, ok := put["id"].(string); !ok || put["created"] != "2024-05-06T07:08:09Z" || put["secret"] != nil {
		t.Errorf("putThing answers %v: want a made value (the example's id is no string) with a string id and the readOnly created, without the writeOnly secret", put)
	}
	for id, want := range map[string]openapistub.Response{
		"deleteThing": {Status: 204},
		"renameThing": {Status: 204},
		"getFile":     {Status: 200, ContentType: "application/octet-stream", Body: []byte("stub")},
	} {
		if diff := cmp.Diff(want, operation(t, stub, id).Response); diff != "" {
			t.Errorf("%s answers (-want +got):\n%s", id, diff)
		}
	}
	if op := operation(t, stub, "createThing"); op.Response.Status != 201 || op.Response.ContentType != "application/json" {
		t.Errorf("createThing answers %d %s, want its 201 application/json", op.Response.Status, op.Response.ContentType)
	}
	shapes := operation(t, stub, "listShapes")
	if shapes.Response.Status != 200 {
		t.Errorf("listShapes (2XX) answers %d, want 200", shapes.Response.Status)
	}
	if got := decode(shapes).([]any)[0].(map[string]any)["type"]; got != "round" {
		t.Errorf("listShapes' first shape has type %v, want the discriminator's mapping for Circle, round", got)
	}
}

// TestRecords sends requests written by hand and checks that the stub
// records them byte for byte: the escaped path (an escaped "/" inside
// its segment, upper-case escapes), the raw query (repeated keys, a
// comma list, escapes), only the headers that are parameters, the body;
// and that paths told apart by a "#fragment" only reach the operation
// the request is for.
func TestRecords(t *testing.T) {
	_, stub, origin := features(t)
	req, _ := http.NewRequest("GET", origin+"/base/things/a%20b%C3%A9%2Fc?tags=t%261&tags=t+2&fields=f1,f2&limit=3", nil)
	req.Header.Set("X-Request-Id", "r-1")
	req.Header.Set("X-Other", "not a parameter")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := []openapistub.Request{{
		Operation: "getThing", Method: "GET", Path: "/base/things/a%20b%C3%A9%2Fc", RawQuery: "tags=t%261&tags=t+2&fields=f1,f2&limit=3",
		Header: http.Header{"X-Request-Id": {"r-1"}}, Body: []byte{},
	}}
	if diff := cmp.Diff(want, stub.Take()); diff != "" || resp.StatusCode != 200 {
		t.Errorf("GET: status %d; recorded (-want +got):\n%s", resp.StatusCode, diff)
	}

	for _, tc := range []struct {
		body, op string
	}{
		{`{"name":"n"}`, "renameThing"},
		{`{"id":"a","secret":"s"}`, "putThing"},
	} {
		req, _ := http.NewRequest("PUT", origin+"/base/things/x", strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		got := stub.Take()
		want := []openapistub.Request{{Operation: tc.op, Alike: []string{"putThing", "renameThing"}, Method: "PUT", Path: "/base/things/x",
			ContentType: "application/json", Body: []byte(tc.body)}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("PUT %s: recorded (-want +got):\n%s", tc.body, diff)
		}
	}
}

// TestPrefer: of operations alike that a request conforms to, the stub
// answers as the first by ID, or as the one Prefer names.
func TestPrefer(t *testing.T) {
	_, stub, origin := features(t)
	for _, tc := range []struct{ prefer, op, body string }{
		{"", "countNotes", `{"count":2}`},
		{"listNotes", "listNotes", `{"notes":["a","b"]}`},
		{"getThing", "countNotes", `{"count":2}`}, // not alike: the order by ID
		{"", "countNotes", `{"count":2}`},
	} {
		stub.Prefer(tc.prefer)
		resp, err := http.Get(origin + "/base/notes")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got := stub.Take()
		if len(got) != 1 || got[0].Operation != tc.op || string(body) != tc.body {
			t.Errorf("Prefer(%q): recorded %+v, answered %s; want %s answering %s", tc.prefer, got, body, tc.op, tc.body)
		}
	}
}

// TestRefuses checks that a request the document does not allow is
// recorded with its problem and answered 404 or 400, and that Diff
// reports the problem.
func TestRefuses(t *testing.T) {
	_, stub, origin := features(t)
	for _, tc := range []struct {
		name, method, target, ct, body string
		status                         int
		problem                        string
	}{
		{"no such path", "GET", "/base/nothing", "", "", 404, "no operation of the document"},
		{"outside the base path", "GET", "/things/x", "", "", 404, "not under the base path"},
		{"no such method", "PATCH", "/base/things/x", "", "", 404, "no operation of the document"},
		{"a required query parameter missing", "POST", "/base/things", "application/json", `{"kind":"small"}`, 400, `"kind"`},
		{"a value outside the enum", "POST", "/base/things?kind=huge", "application/json", `{"kind":"small"}`, 400, "allowed values"},
		{"a body its schema refuses", "POST", "/base/things?kind=small", "application/json", `{"kind":5}`, 400, "kind"},
		{"a required body missing", "POST", "/base/things?kind=small", "", "", 400, "body"},
		{"a content type the operation does not take", "POST", "/base/things?kind=small", "text/plain", `kind`, 400, "text/plain"},
		{"a bound", "GET", "/base/things/x?limit=11", "", "", 400, "limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, origin+tc.target, strings.NewReader(tc.body))
			if tc.ct != "" {
				req.Header.Set("Content-Type", tc.ct)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var msg struct{ Message string }
			json.NewDecoder(resp.Body).Decode(&msg)
			resp.Body.Close()
			got := stub.Take()
			if resp.StatusCode != tc.status || len(got) != 1 || !strings.Contains(got[0].Problem, tc.problem) || msg.Message != got[0].Problem {
				t.Fatalf("status %d, answer %q, recorded %+v; want %d and a problem containing %q", resp.StatusCode, msg.Message, got, tc.status, tc.problem)
			}
			if d := openapistub.Diff(got[0], got[0]); !strings.Contains(d, "the stub refused the request") {
				t.Errorf("Diff of a refused request: %q; want it to say the stub refused it", d)
			}
		})
	}
}
