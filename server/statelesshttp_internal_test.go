package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	invopop "github.com/invopop/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/serve/statelesshttp"
	"github.com/toolroute/toolroute/internal/testing/mcptest"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
)

// TestStatelessTransportByDefault: a stateless endpoint serves through
// toolroute's transport unless HTTPOptions.SDKTransport is set; a
// stateful one never does. (TestTransportsAnswerAlike shows that both
// answer alike, which it cannot tell apart.)
func TestStatelessTransportByDefault(t *testing.T) {
	made := 0
	defer func(f func(*mcp.Server, http.Handler, statelesshttp.Options) *statelesshttp.Handler) {
		statelessTransport = f
	}(statelessTransport)
	statelessTransport = func(s *mcp.Server, sdk http.Handler, opts statelesshttp.Options) *statelesshttp.Handler {
		made++
		return statelesshttp.New(s, sdk, opts)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	verifier := StaticTokens(map[string]authz.Caller{"t": {Subject: "s"}})
	for _, c := range []struct {
		opts HTTPOptions
		want int
	}{
		{HTTPOptions{Verifier: verifier}, 1},
		{HTTPOptions{Verifier: verifier, SDKTransport: true}, 0},
		{HTTPOptions{Verifier: verifier, Stateful: true}, 0},
	} {
		made = 0
		if _, err := HTTPHandler(s, c.opts); err != nil {
			t.Fatal(err)
		}
		if made != c.want {
			t.Errorf("SDKTransport %v, Stateful %v: %d handlers of toolroute's transport, want %d", c.opts.SDKTransport, c.opts.Stateful, made, c.want)
		}
	}
}

type regionArgs struct {
	Region string `json:"region"`
}

// JSONSchema gives the region argument an x-mcp-header annotation.
func (regionArgs) JSONSchema() *invopop.Schema {
	props := invopop.NewProperties()
	props.Set("region", &invopop.Schema{Type: "string", Extras: map[string]any{"x-mcp-header": "Region"}})
	return &invopop.Schema{Type: "object", Properties: props}
}

type echoIn struct {
	Text string `json:"text"`
}

// withUndescribed adds, besides in's tools, one it does not describe
// (hidden from every caller).
type withUndescribed struct{ Installer }

func (w withUndescribed) Install(s *mcp.Server) {
	w.Installer.Install(s)
	s.AddTool(&mcp.Tool{Name: "secret", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "secret"}}}, nil
	})
}

// TestNewProtocolCallsOnFastPath: toolroute's transport serves a
// 2026-07-28 tools/call of a server New built itself exactly when its
// Mcp-Name matches and the tool is a described one without x-mcp-header
// arguments; every other goes to go-sdk's handler, and each is answered
// as SDKTransport answers it.
func TestNewProtocolCallsOnFastPath(t *testing.T) {
	var handedOn atomic.Int64
	defer func(f func(*mcp.Server, http.Handler, statelesshttp.Options) *statelesshttp.Handler) {
		statelessTransport = f
	}(statelessTransport)
	statelessTransport = func(s *mcp.Server, sdk http.Handler, opts statelesshttp.Options) *statelesshttp.Handler {
		return statelesshttp.New(s, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			handedOn.Add(1)
			sdk.ServeHTTP(w, r)
		}), opts)
	}
	r := registry.New[struct{}]()
	r.Register(tool.Tool[struct{}]{Name: "echo", Description: "Echo.", Local: true, Behaviour: behaviour.ReadOnly,
		Handler: tool.Handle(func(_ context.Context, _ struct{}, _ *mcp.CallToolRequest, in echoIn) (echoIn, error) { return in, nil })})
	r.Register(tool.Tool[struct{}]{Name: "region", Description: "Has a header argument.", Local: true, Behaviour: behaviour.ReadOnly,
		Handler: tool.Handle(func(_ context.Context, _ struct{}, _ *mcp.CallToolRequest, in regionArgs) (regionArgs, error) {
			return in, nil
		})})
	s, err := New(Options{Authorizer: authz.AllowAll(), Logger: slog.New(slog.DiscardHandler)}, withUndescribed{Install(r, struct{}{})})
	if err != nil {
		t.Fatal(err)
	}
	urls := map[bool]string{}
	for _, sdk := range []bool{false, true} {
		h, err := HTTPHandler(s, HTTPOptions{Verifier: StaticTokens(map[string]authz.Caller{"t": {Subject: "s"}}), SDKTransport: sdk})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(h)
		t.Cleanup(ts.Close)
		urls[sdk] = ts.URL
	}
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	header := func(method, name string, more ...string) map[string]string {
		h := map[string]string{"Authorization": "Bearer t", "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method}
		if name != "" {
			h["Mcp-Name"] = name
		}
		for i := 0; i+1 < len(more); i += 2 {
			h[more[i]] = more[i+1]
		}
		return h
	}
	body := func(name, args string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `,` + meta + `}}`
	}
	for _, p := range []struct {
		name   string
		header map[string]string
		body   string
		fast   bool
	}{
		{"echo", header("tools/call", "echo"), body("echo", `{"text":"hi"}`), true},
		{"echo, bad arguments", header("tools/call", "echo"), body("echo", `{"text":1}`), true},
		{"echo, name mismatch", header("tools/call", "region"), body("echo", `{"text":"hi"}`), false},
		{"echo, no Mcp-Name", header("tools/call", ""), body("echo", `{"text":"hi"}`), false},
		{"echo, wrong Mcp-Method", header("tools/list", "echo"), body("echo", `{"text":"hi"}`), false},
		{"region, right Mcp-Param", header("tools/call", "region", "Mcp-Param-Region", "eu"), body("region", `{"region":"eu"}`), false},
		{"region, wrong Mcp-Param", header("tools/call", "region", "Mcp-Param-Region", "us"), body("region", `{"region":"eu"}`), false},
		{"undescribed tool", header("tools/call", "secret"), body("secret", `{}`), false},
		{"unknown tool", header("tools/call", "nope"), body("nope", `{}`), false},
	} {
		t.Run(p.name, func(t *testing.T) {
			want := mcptest.Do(t, mcptest.Request(t, "", urls[true], p.header, p.body))
			before := handedOn.Load()
			got := mcptest.Do(t, mcptest.Request(t, "", urls[false], p.header, p.body))
			if diff := gocmp.Diff(want, got); diff != "" {
				t.Errorf("answers differ (-SDKTransport +default):\n%s", diff)
			}
			if fast := handedOn.Load() == before; fast != p.fast {
				t.Errorf("served by the fast path: %v, want %v", fast, p.fast)
			}
		})
	}
}
