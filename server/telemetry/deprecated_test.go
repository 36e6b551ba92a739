package telemetry_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/server/telemetry"
	"github.com/toolroute/toolroute/tool"
)

// TestDeprecatedCalls: every call of a deprecated tool is counted in
// toolroute.calls.deprecated, by tool, and its audit record says so;
// calls of other tools are neither.
func TestDeprecatedCalls(t *testing.T) {
	e := newEnv(t, envOptions{registry: func(r *registry.Registry[*deps]) {
		r.Register(tool.Tool[*deps]{
			Name: "whoami_old", Description: "Who am I, the old way.", Local: true, Behaviour: behaviour.ReadOnly,
			Deprecated: &tool.Deprecation{Reason: "renamed", Successor: "whoami"},
			Handler: tool.Handle(func(context.Context, *deps, *mcp.CallToolRequest, noArgs) (whoami, error) {
				return whoami{}, nil
			}),
		})
	}})
	cs := servertest.Connect(t, e.server, &viewer, servertest.Options{})
	ctx := context.Background()
	for _, name := range []string{"whoami_old", "whoami", "whoami_old"} {
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}}); err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
	}
	if diff := cmp.Diff(map[string]int64{"gen_ai.tool.name=whoami_old": 2}, points(e.collect(t)[telemetry.MetricDeprecatedCalls])); diff != "" {
		t.Errorf("%s (-want +got):\n%s", telemetry.MetricDeprecatedCalls, diff)
	}
	var got []string
	for _, r := range e.records(t) {
		if r.Event == telemetry.EventCall {
			if r.Deprecated {
				got = append(got, r.Tool+" deprecated")
			} else {
				got = append(got, r.Tool)
			}
		}
	}
	if diff := cmp.Diff([]string{"whoami_old deprecated", "whoami", "whoami_old deprecated"}, got); diff != "" {
		t.Errorf("audit records (-want +got):\n%s", diff)
	}
}
