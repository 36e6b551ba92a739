package upstream_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/tool"
	"github.com/toolroute/toolroute/upstream"
)

type userRef struct {
	Type string `json:"type" jsonschema:"enum=user"`
	ID   string `json:"id" jsonschema:"minLength=1"`
}

type groupRef struct {
	Type string `json:"type" jsonschema:"enum=group"`
	ID   string `json:"id" jsonschema:"minLength=1"`
}

type entityAlternatives struct {
	User  userRef  `json:"user"`
	Group groupRef `json:"group"`
}

type lengthAlternatives struct {
	None string `json:"none" jsonschema:"enum=none"`
	Days int32  `json:"days" jsonschema:"minimum=1"`
}

type grantArgs struct {
	ID       string                                        `json:"id"`
	Entities []upstream.OneOf[entityAlternatives]          `json:"entities"`
	Length   upstream.AnyOf[lengthAlternatives]            `json:"length,omitempty"`
	Owner    upstream.OneOf[entityAlternatives]            `json:"owner,omitempty"`
	Extra    map[string]upstream.OneOf[lengthAlternatives] `json:"extra,omitempty"`
}

type grantResult struct {
	Owner   upstream.OneOf[entityAlternatives]   `json:"owner"`
	Granted []upstream.AnyOf[lengthAlternatives] `json:"granted"`
}

// TestUnionSchema: a OneOf's schema is a oneOf of its alternatives'
// schemas, an AnyOf's an anyOf, each with its field's tags, objects open
// to properties they do not name.
func TestUnionSchema(t *testing.T) {
	route := svc("POST", "/things/{id}/grants")
	h := upstream.Forward[*deps, grantArgs, grantResult](route)
	if err := h.Err(); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(h.InputSchema().Properties["entities"].Items)
	if err != nil {
		t.Fatal(err)
	}
	var got any
	json.Unmarshal(data, &got)
	want := map[string]any{"oneOf": []any{
		map[string]any{"type": "object", "required": []any{"type", "id"}, "properties": map[string]any{
			"type": map[string]any{"type": "string", "enum": []any{"user"}}, "id": map[string]any{"type": "string", "minLength": float64(1)}}},
		map[string]any{"type": "object", "required": []any{"type", "id"}, "properties": map[string]any{
			"type": map[string]any{"type": "string", "enum": []any{"group"}}, "id": map[string]any{"type": "string", "minLength": float64(1)}}},
	}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the items' schema (-want +got):\n%s", d)
	}
	data, _ = json.Marshal(h.InputSchema().Properties["length"])
	if want := `{"anyOf":[{"type":"string","enum":["none"]},{"type":"integer","minimum":1}]}`; string(data) != want {
		t.Errorf("length's schema is %s, want %s", data, want)
	}
}

// TestUnionRequest: arguments valid for one alternative reach the
// upstream as they were given (a property no alternative names too);
// arguments valid for none, or for both of a oneOf, are refused by the
// input schema and nothing is sent; the answer's unions reach the client
// as the upstream sent them, and a missing one is null.
func TestUnionRequest(t *testing.T) {
	rec := newRecorder(t, answerJSON(http.StatusOK, `{"owner": {"type": "group", "id": "g1", "since": 2020}, "granted": ["none", 30]}`))
	d := &deps{Endpoints: upstream.Endpoints{"svc": {Origin: rec.url}}}
	route := svc("POST", "/things/{id}/grants")
	cs := serve(t, d, authz.Caller{Subject: "alice"}, forwarding("grant", route, upstream.Forward[*deps, grantArgs, grantResult](route)))

	args := map[string]any{"id": "t1", "entities": []any{
		map[string]any{"type": "user", "id": "u1", "note": "kept"},
		map[string]any{"id": "g2", "type": "group"},
	}, "length": 7}
	text, isErr, out := callTool(t, cs, "grant", args)
	if isErr {
		t.Fatalf("error result %q", text)
	}
	wantBody := `{"entities":[{"id":"u1","note":"kept","type":"user"},{"id":"g2","type":"group"}],"length":7}`
	if d := cmp.Diff([]seen{{Method: "POST", URI: "/things/t1/grants", Header: http.Header{"Accept": {"application/json"}, "Content-Type": {"application/json"}}, Body: wantBody}}, rec.requests()); d != "" {
		t.Errorf("the upstream received (-want +got):\n%s", d)
	}
	wantOut := map[string]any{"owner": map[string]any{"type": "group", "id": "g1", "since": float64(2020)}, "granted": []any{"none", float64(30)}}
	if d := cmp.Diff(wantOut, out); d != "" {
		t.Errorf("the result (-want +got):\n%s", d)
	}

	for _, bad := range []map[string]any{
		{"id": "t1", "entities": []any{map[string]any{"type": "robot", "id": "r1"}}},
		{"id": "t1", "entities": []any{}, "length": "forever"},
		{"id": "t1", "entities": []any{}, "length": 0},
	} {
		text, isErr, _ := callTool(t, cs, "grant", bad)
		if !isErr || !strings.Contains(text, "validating") {
			t.Errorf("arguments %v: error %v %q, want a validation error", bad, isErr, text)
		}
	}
	if n := len(rec.requests()); n != 1 {
		t.Errorf("the upstream received %d requests, want only the valid one", n)
	}

	rec.answer = answerJSON(http.StatusOK, `{"granted": []}`)
	text, isErr, out = callTool(t, cs, "grant", args)
	if isErr {
		t.Fatalf("an answer without its owner: error result %q", text)
	}
	if d := cmp.Diff(map[string]any{"owner": nil, "granted": []any{}}, out); d != "" {
		t.Errorf("the result of an answer without its owner (-want +got):\n%s", d)
	}
}

type selfAlternatives struct {
	Leaf string                             `json:"leaf"`
	Tree []upstream.OneOf[selfAlternatives] `json:"tree"`
}

type notStructArgs struct {
	V upstream.OneOf[string] `json:"v"`
}

type noAlternatives struct{}

type noAlternativesArgs struct {
	V upstream.AnyOf[noAlternatives] `json:"v"`
}

type selfArgs struct {
	V upstream.OneOf[selfAlternatives] `json:"v"`
}

// TestUnionRefused: a union whose alternatives are no struct, none, or
// contain the union itself panics when its schema is reflected, naming
// its type: the tool fails where it is made.
func TestUnionRefused(t *testing.T) {
	route := svc("POST", "/things")
	for _, tc := range []struct {
		name string
		make func() tool.Handler[*deps]
		want string
	}{
		{"not a struct", func() tool.Handler[*deps] { return upstream.Forward[*deps, notStructArgs, okResult](route) }, "upstream: OneOf[string]: string is not a struct"},
		{"no alternatives", func() tool.Handler[*deps] { return upstream.Forward[*deps, noAlternativesArgs, okResult](route) }, "upstream: AnyOf[upstream_test.noAlternatives]: upstream_test.noAlternatives has no field"},
		{"contains itself", func() tool.Handler[*deps] { return upstream.Forward[*deps, selfArgs, okResult](route) }, "upstream: OneOf[upstream_test.selfAlternatives]: upstream_test.selfAlternatives contains a union of itself"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				msg, _ := recover().(string)
				if !strings.HasPrefix(msg, tc.want) {
					t.Errorf("panic %q, want one starting %q", msg, tc.want)
				}
			}()
			tc.make()
		})
	}
}
