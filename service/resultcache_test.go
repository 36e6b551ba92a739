package service_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/fx"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/testing/redistest"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/service"
	"github.com/toolroute/toolroute/tool"
	"github.com/toolroute/toolroute/upstream"
)

// cachedCommand serves get_thing, cached for a minute, forwarding to
// the things API.
func cachedCommand() service.Command {
	reg := registry.New[service.Upstreams]()
	reg.Register(tool.Tool[service.Upstreams]{
		Name: "get_thing", Description: "Get a thing.", ServiceKey: "things", Behaviour: behaviour.ReadOnly,
		VisibilityRoutes: []tool.Route{pingRoute}, Cache: &tool.ResultCache{TTL: time.Minute},
		Handler: upstream.Forward[service.Upstreams, struct {
			ID string `json:"id"`
		}, struct {
			Name string `json:"name"`
		}](pingRoute),
	})
	return service.Command{Name: "cached-mcp", Options: []fx.Option{server.Tools(reg)}}
}

// TestKitResultCache: the kit caches the results of a tool with Cache,
// per caller, in memory without -redis; with -redis (a real
// redis-server) two replicas share the results.
func TestKitResultCache(t *testing.T) {
	api, seen := thingsAPI(t)
	tokens := writeFile(t, "tokens.json", `[{"token": "viewer-token", "subject": "vera", "roles": ["viewer"]},
	 {"token": "other-token", "subject": "otto", "roles": ["viewer"]}]`)
	cfg := service.Config{Addr: "127.0.0.1:0", PolicyFile: "testdata/things/policy.json", TokensFile: tokens,
		Upstreams: map[string]string{"things": api.URL}}
	call := func(url, token string) {
		t.Helper()
		cs := servertest.ConnectHTTP(t, url, token, servertest.Options{})
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_thing", Arguments: map[string]any{"id": "1"}})
		if err != nil || res.IsError {
			t.Fatalf("get_thing as %s: %v %+v", token, err, res)
		}
	}
	one := serveConfig(t, cachedCommand(), cfg)
	call(one, "viewer-token")
	call(one, "viewer-token")
	call(one, "other-token")
	if got := seen(); strings.Join(got, ",") != "Bearer viewer-token,Bearer other-token" {
		t.Errorf("in memory: the upstream saw %q, want one request per caller", got)
	}

	srv := redistest.Start(t)
	cfg.Redis, cfg.StateKeyFile = srv.URL(), writeFile(t, "state.key", strings.Repeat("k", 32))
	a, b := serveConfig(t, cachedCommand(), cfg), serveConfig(t, cachedCommand(), cfg)
	call(a, "viewer-token")
	call(b, "viewer-token")
	call(b, "other-token")
	if got := seen()[2:]; strings.Join(got, ",") != "Bearer viewer-token,Bearer other-token" {
		t.Errorf("with -redis: the upstream saw %q, want one request per caller across the replicas", got)
	}
}

// TestKitResultCacheFollowsReload: a result cached under one policy never
// answers under another. vera reads thing 2, cached for a minute; the
// policy is reloaded to deny thing 2 (get_thing stays visible); her next read of thing 2 is
// refused, not served from the cache (the cache's scope is the digest of
// the policy a request decides under).
func TestKitResultCacheFollowsReload(t *testing.T) {
	api, seen := thingsAPI(t)
	tokens := writeFile(t, "tokens.json", `[{"token": "viewer-token", "subject": "vera", "roles": ["viewer"]}]`)
	policy := writeFile(t, "policy.json", `[{"role": "viewer", "accessPolicies": [{"path": "^/things/api/v1/things/[^/]+$", "methods": ["GET"], "effect": "allow"}]}]`)
	// A handler with logic: only the upstream transport checks the route
	// its request takes (a Forward's bound route is checked before the
	// call, and so before the cache).
	type thingID struct {
		ID string `json:"id"`
	}
	type thing struct {
		Name string `json:"name"`
	}
	reg := registry.New[service.Upstreams]()
	reg.Register(tool.Tool[service.Upstreams]{
		Name: "get_thing", Description: "Get a thing.", ServiceKey: "things", Behaviour: behaviour.ReadOnly,
		VisibilityRoutes: []tool.Route{pingRoute}, Cache: &tool.ResultCache{TTL: time.Minute},
		Handler: tool.Handle(func(ctx context.Context, up service.Upstreams, _ *mcp.CallToolRequest, in thingID) (thing, error) {
			return upstream.Call[thing](ctx, up, pingRoute, in)
		}),
	})
	cmd := service.Command{Name: "cached-mcp", Options: []fx.Option{server.Tools(reg)}}
	url := serveConfig(t, cmd, service.Config{Addr: "127.0.0.1:0", PolicyFile: policy, TokensFile: tokens,
		ReloadInterval: 10 * time.Millisecond, Upstreams: map[string]string{"things": api.URL}})
	read := func(id string) (*mcp.CallToolResult, error) {
		cs := servertest.ConnectHTTP(t, url, "viewer-token", servertest.Options{})
		return cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_thing", Arguments: map[string]any{"id": id}})
	}
	for range 2 {
		if res, err := read("2"); err != nil || res.IsError {
			t.Fatalf("get_thing 2 under the first policy: %v %+v", err, res)
		}
	}
	if n := len(seen()); n != 1 {
		t.Fatalf("the upstream saw %d requests for two reads, want 1 (the second from the cache)", n)
	}
	replace(t, policy, `[{"role": "viewer", "accessPolicies": [{"path": "^/things/api/v1/things/[^/]+$", "methods": ["GET"], "effect": "allow"},
	 {"path": "^/things/api/v1/things/2$", "methods": ["GET"], "effect": "deny"}]}]`)
	until(t, "get_thing 2 refused under the reloaded policy", func() bool {
		res, err := read("2")
		return err != nil || res.IsError
	})
	if n := len(seen()); n != 1 {
		t.Errorf("the upstream saw %d requests, want 1: the refused read must not reach it", n)
	}
}
