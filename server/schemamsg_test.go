package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/tool"
)

type boundsArgs struct {
	Count int     `json:"count" jsonschema:"minimum=0,maximum=1000000"`
	Ratio float64 `json:"ratio,omitempty" jsonschema:"exclusiveMinimum=0.5,exclusiveMaximum=2.25"`
	Step  int     `json:"step,omitempty" jsonschema:"multipleOf=5"`
	Name  string  `json:"name" jsonschema:"minLength=1"`
	Inner *struct {
		Level int `json:"level" jsonschema:"maximum=3"`
	} `json:"inner,omitempty"`
	Tags []string `json:"tags,omitempty"`
	Kind string   `json:"kind,omitempty" jsonschema:"enum=a,enum=b"`
}

// TestPlainSchemaMessages: the validator's texts for a null argument and
// for a number out of bounds reach the client as plain text naming the
// argument; the other texts stay as the SDK writes them.
func TestPlainSchemaMessages(t *testing.T) {
	r := registry.New[struct{}]()
	r.Register(tool.Tool[struct{}]{
		Name: "bounds", Description: "Check bounds.", Local: true, Behaviour: behaviour.ReadOnly,
		Handler: tool.Handle(func(_ context.Context, _ struct{}, _ *mcp.CallToolRequest, in boundsArgs) (boundsArgs, error) {
			return in, nil
		}),
	})
	s, err := server.New(server.Options{Authorizer: authz.AllowAll(), Caller: &authz.Caller{Subject: "local"}}, server.Install(r, struct{}{}))
	if err != nil {
		t.Fatal(err)
	}
	cs := servertest.Connect(t, s, &authz.Caller{Subject: "local"}, servertest.Options{})
	for _, tt := range []struct{ args, want string }{
		{`{"count": null, "name": "x"}`, `argument "count": null is not allowed (want integer)`},
		{`{"count": 1, "name": null}`, `argument "name": null is not allowed (want string)`},
		{`{"count": 1, "name": "x", "inner": {"level": null}}`, `argument "inner.level": null is not allowed (want integer)`},
		{`{"count": 1, "name": "x", "tags": [null]}`, `argument "tags[]": null is not allowed (want string)`},
		{`{"count": 1e20, "name": "x"}`, `argument "count": maximum: 1e+20 is greater than 1000000`},
		{`{"count": 100000000000000000000, "name": "x"}`, `argument "count": maximum: 1e+20 is greater than 1000000`},
		{`{"count": 1.5e300, "name": "x"}`, `argument "count": maximum: 1.5e+300 is greater than 1000000`},
		{`{"count": -1, "name": "x"}`, `argument "count": minimum: -1 is less than 0`},
		{`{"count": 1, "name": "x", "ratio": 0.5}`, `argument "ratio": exclusiveMinimum: 0.5 is less than or equal to 0.5`},
		{`{"count": 1, "name": "x", "ratio": 3}`, `argument "ratio": exclusiveMaximum: 3 is greater than or equal to 2.25`},
		{`{"count": 1, "name": "x", "step": 7}`, `argument "step": multipleOf: 7 is not a multiple of 5`},
		{`{"count": 1, "name": "x", "inner": {"level": 4}}`, `argument "inner.level": maximum: 4 is greater than 3`},
		// Left as they are.
		{`{"count": 1, "name": "x", "kind": "c"}`, `validating "arguments": validating root: validating /properties/kind: enum: c does not equal any of: [a b]`},
		{`{"count": 0.5, "name": "x"}`, `validating "arguments": validating root: validating /properties/count: type: 0.5 has type "number", want "integer"`},
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "bounds", Arguments: json.RawMessage(tt.args)})
		if err != nil {
			t.Errorf("%s: %v", tt.args, err)
			continue
		}
		if want := `validating "arguments": ` + strings.TrimPrefix(tt.want, `validating "arguments": `); !res.IsError || text(res) != want {
			t.Errorf("%s: isError %v, text %q; want %q", tt.args, res.IsError, text(res), want)
		}
	}
}
