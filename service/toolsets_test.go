package service_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/fx"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/service"
	"github.com/toolroute/toolroute/tool"
)

// TestKitToolsets: the kit limits a caller to its role's toolsets from
// the -policy file's "toolsets": a role limited to x sees the x tool
// alone, an unlimited role both.
func TestKitToolsets(t *testing.T) {
	reg := registry.New[*pingDeps]()
	for _, tag := range []string{"x", "y"} {
		reg.Register(tool.Tool[*pingDeps]{
			Name: "read_" + tag, Description: "Read.", ServiceKey: "things", Tags: []string{tag},
			VisibilityRoutes: []tool.Route{pingRoute}, Behaviour: behaviour.ReadOnly,
			Handler: tool.Handle(func(context.Context, *pingDeps, *mcp.CallToolRequest, struct{}) (struct{}, error) {
				return struct{}{}, nil
			}),
		})
	}
	cmd := service.Command{Name: "toolsets-mcp", Options: []fx.Option{
		server.Tools(reg),
		fx.Provide(func(up service.Upstreams) *pingDeps { return &pingDeps{up.URL("things"), up.Client("things")} }),
	}}
	allow := `"accessPolicies": [{"path": "^/things/api/v1/things/[^/]+$", "methods": ["GET"], "effect": "allow"}]`
	policy := writeFile(t, "policy.json", `[{"role": "narrow", "toolsets": ["x"], `+allow+`}, {"role": "wide", `+allow+`}]`)
	tokens := writeFile(t, "tokens.json", `[{"token": "narrow-token", "subject": "n", "roles": ["narrow"]}, {"token": "wide-token", "subject": "w", "roles": ["wide"]}]`)
	api, _ := thingsAPI(t)
	url := serveConfig(t, cmd, service.Config{Addr: "127.0.0.1:0", PolicyFile: policy, TokensFile: tokens, ReloadInterval: 10 * time.Millisecond, Upstreams: map[string]string{"things": api.URL}})
	for token, want := range map[string][]string{"narrow-token": {"read_x"}, "wide-token": {"read_x", "read_y"}} {
		got := servertest.ToolNames(t, servertest.ConnectHTTP(t, url, token, servertest.Options{}))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s sees (-want +got):\n%s", token, diff)
		}
	}
	// A reload changes a role's toolsets as it changes its routes: the
	// toolsets are read from the policy the request is pinned to.
	replace(t, policy, `[{"role": "narrow", "toolsets": ["y"], `+allow+`}, {"role": "wide", `+allow+`}]`)
	until(t, "narrow-token limited to toolset y", func() bool {
		got := servertest.ToolNames(t, servertest.ConnectHTTP(t, url, "narrow-token", servertest.Options{}))
		return slices.Equal(got, []string{"read_y"})
	})
}
