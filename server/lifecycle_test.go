package server_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/testing/syncbuf"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/tool"
)

type lifeDeps struct{}

type lifeOut struct {
	OK bool `json:"ok"`
}

func lifeTool(name, method string, d *tool.Deprecation) tool.Tool[lifeDeps] {
	return tool.Tool[lifeDeps]{
		Name: name, Description: "Read things.", ServiceKey: "s", Behaviour: behaviour.ReadOnly,
		VisibilityRoutes: []tool.Route{tool.ServiceRoute("s", method, "/things")},
		Deprecated:       d, Version: "1", Tags: []string{"things"},
		Handler: tool.Handle(func(context.Context, lifeDeps, *mcp.CallToolRequest, noArgs) (lifeOut, error) {
			return lifeOut{OK: true}, nil
		}),
	}
}

// lifeServer serves read_things, deprecated in favour of
// read_things_v2, which only admins see (its route is a POST); viewers
// see read_things alone. Its calls are logged to log.
func lifeServer(t *testing.T, log *syncbuf.Buffer) *mcp.Server {
	t.Helper()
	reg := registry.New[lifeDeps]()
	reg.Register(lifeTool("read_things", "GET", &tool.Deprecation{Reason: "slow", Successor: "read_things_v2"}))
	reg.Register(lifeTool("read_things_v2", "POST", nil))
	p, err := authz.ParsePolicy([]byte(`[
	 {"role": "viewer", "accessPolicies": [{"path": "^/s/things$", "methods": ["GET"], "effect": "allow"}]},
	 {"role": "admin", "accessPolicies": [{"path": "^/s/things$", "methods": ["GET", "POST"], "effect": "allow"}]}]`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.Options{Authorizer: p, Logger: slog.New(slog.NewJSONHandler(log, nil))}, server.Install(reg, lifeDeps{}))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSuccessorHidden: a caller who sees the successor is told its name
// (description and _meta); one who cannot see it is told the tool is
// deprecated, why and nothing of the successor, in any protocol version,
// and the page's bytes never name it.
func TestSuccessorHidden(t *testing.T) {
	s := lifeServer(t, &syncbuf.Buffer{})
	for _, version := range []string{"", "2025-11-25"} {
		admin := servertest.Connect(t, s, &authz.Caller{Subject: "a", Roles: []string{"admin"}}, servertest.Options{ProtocolVersion: version})
		res, err := admin.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Tools) != 2 || res.Tools[0].Description != "DEPRECATED: slow. Use read_things_v2 instead.\n\nRead things." {
			t.Fatalf("admin's list: %d tools, first %q", len(res.Tools), res.Tools[0].Description)
		}

		viewer := servertest.Connect(t, s, &authz.Caller{Subject: "v", Roles: []string{"viewer"}}, servertest.Options{ProtocolVersion: version})
		res, err = viewer.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Tools) != 1 || res.Tools[0].Description != "DEPRECATED: slow.\n\nRead things." {
			t.Fatalf("viewer's list: %+v", res.Tools)
		}
		page, _ := json.Marshal(res)
		if strings.Contains(string(page), "read_things_v2") {
			t.Errorf("viewer's list names the hidden successor: %s", page)
		}
		meta, _ := json.Marshal(res.Tools[0].Meta)
		if want := `{"io.github.toolroute/lifecycle":{"deprecated":{"reason":"slow"},"tags":["things"],"version":"1"}}`; string(meta) != want {
			t.Errorf("viewer's _meta = %s, want %s", meta, want)
		}
	}
}

// TestDeprecatedCallLogged: a deprecated tool's call record says so;
// another tool's does not.
func TestDeprecatedCallLogged(t *testing.T) {
	var log syncbuf.Buffer
	cs := servertest.Connect(t, lifeServer(t, &log), &authz.Caller{Subject: "a", Roles: []string{"admin"}}, servertest.Options{})
	for _, name := range []string{"read_things", "read_things_v2"} {
		if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}}); err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		var r struct {
			Msg        string `json:"msg"`
			Tool       string `json:"tool"`
			Deprecated bool   `json:"deprecated"`
		}
		if json.Unmarshal([]byte(line), &r) == nil && r.Msg == "toolroute: tools/call" {
			got = append(got, r.Tool+map[bool]string{true: " deprecated"}[r.Deprecated])
		}
	}
	if strings.Join(got, ",") != "read_things deprecated,read_things_v2" {
		t.Errorf("call records: %q", got)
	}
}

// TestUnknownSuccessor: New refuses a successor no installer adds, and
// accepts one another registry adds.
func TestUnknownSuccessor(t *testing.T) {
	a := registry.New[lifeDeps]()
	a.Register(lifeTool("old", "GET", &tool.Deprecation{Reason: "r", Successor: "new"}))
	_, err := server.New(server.Options{Authorizer: authz.AllowAll()}, server.Install(a, lifeDeps{}))
	if want := `server: tool "old" is deprecated in favour of "new", which no installer (registry) adds`; err == nil || err.Error() != want {
		t.Errorf("New = %v, want %s", err, want)
	}
	b := registry.New[lifeDeps]()
	b.Register(lifeTool("new", "GET", nil))
	if _, err := server.New(server.Options{Authorizer: authz.AllowAll()}, server.Install(a, lifeDeps{}), server.Install(b, lifeDeps{})); err != nil {
		t.Errorf("New with the successor in another registry: %v", err)
	}
}
