package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/tool"
)

type filterArg struct {
	Min  int      `json:"min"`
	Tags []string `json:"tags,omitempty"`
}

type structuredArgs struct {
	IDs    []string          `json:"ids"`
	Filter *filterArg        `json:"filter,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	Name   string            `json:"name,omitempty"`
}

// decodeServer serves "structured", which echoes its arguments.
func decodeServer(t *testing.T) *mcp.Server {
	t.Helper()
	r := registry.New[struct{}]()
	r.Register(tool.Tool[struct{}]{
		Name: "structured", Description: "Echo structured arguments.", Local: true, Behaviour: behaviour.ReadOnly,
		Handler: tool.Handle(func(_ context.Context, _ struct{}, _ *mcp.CallToolRequest, in structuredArgs) (structuredArgs, error) {
			return in, nil
		}),
	})
	s, err := server.New(server.Options{Authorizer: authz.AllowAll(), Caller: &authz.Caller{Subject: "local"}}, server.Install(r, struct{}{}))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRobustArgumentDecoding(t *testing.T) {
	tests := []struct {
		name    string
		args    map[string]any
		want    structuredArgs
		wantErr string // a tool error containing this
	}{
		{
			name: "string-encoded array, object and map",
			args: map[string]any{"ids": `["a","b"]`, "filter": `{"min":2,"tags":["x"]}`, "labels": ` {"k":"v"} `},
			want: structuredArgs{IDs: []string{"a", "b"}, Filter: &filterArg{Min: 2, Tags: []string{"x"}}, Labels: map[string]string{"k": "v"}},
		},
		{
			name: "real JSON untouched",
			args: map[string]any{"ids": []string{"a"}, "filter": map[string]any{"min": 1}},
			want: structuredArgs{IDs: []string{"a"}, Filter: &filterArg{Min: 1}},
		},
		{
			name: "a string where a string is expected stays a string",
			args: map[string]any{"ids": []string{}, "name": `["x"]`},
			want: structuredArgs{IDs: []string{}, Name: `["x"]`},
		},
		{
			name:    "not JSON",
			args:    map[string]any{"ids": "a,b"},
			wantErr: "validating",
		},
		{
			name:    "broken JSON",
			args:    map[string]any{"ids": `["a",`},
			wantErr: "validating",
		},
		{
			name:    "an object where an array is expected",
			args:    map[string]any{"ids": `{"a":1}`},
			wantErr: "validating",
		},
		{
			name:    "an encoded array of the wrong items",
			args:    map[string]any{"ids": `[1,2]`},
			wantErr: "validating",
		},
		{
			name: "null for optional arguments, as models send: left out",
			args: map[string]any{"ids": []string{"a"}, "filter": nil, "name": nil, "labels": nil},
			want: structuredArgs{IDs: []string{"a"}},
		},
		{
			name:    "null for a required argument",
			args:    map[string]any{"ids": nil},
			wantErr: "validating",
		},
		{
			name:    "nested properties are not decoded",
			args:    map[string]any{"ids": []string{}, "filter": map[string]any{"min": 1, "tags": `["t"]`}},
			wantErr: "validating",
		},
	}
	for _, tr := range []transport{inMemory, statelessHTTP} {
		for _, version := range lcVersions {
			t.Run(tr.name+"/"+version, func(t *testing.T) {
				cs := tr.connect(t, decodeServer(t), mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, nil), version)
				for _, tt := range tests {
					t.Run(tt.name, func(t *testing.T) {
						res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "structured", Arguments: tt.args})
						if err != nil {
							t.Fatalf("CallTool: %v", err)
						}
						if tt.wantErr != "" {
							if !res.IsError || !strings.Contains(text(res), tt.wantErr) {
								t.Errorf("result = %s (isError %v), want an error containing %q", text(res), res.IsError, tt.wantErr)
							}
							return
						}
						if diff := cmp.Diff(tt.want, structured[structuredArgs](t, res)); diff != "" {
							t.Errorf("arguments the tool got (-want +got):\n%s", diff)
						}
					})
				}
			})
		}
	}
}
