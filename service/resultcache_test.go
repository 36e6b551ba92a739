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
