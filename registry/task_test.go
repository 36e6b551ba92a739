package registry_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
)

// TestTaskDerived: the tool's Call carries its task setting with the
// default applied, and its definition advertises it under TaskMetaKey;
// a tool without one advertises nothing.
func TestTaskDerived(t *testing.T) {
	r := registry.New[*Deps]()
	allowed := mapped()
	allowed.Task = tool.TaskAllowed
	always := local()
	always.Name, always.Task = "always_tool", tool.TaskAlways
	plain := mapped()
	plain.Name = "plain_tool"
	r.Register(allowed)
	r.Register(always)
	r.Register(plain)

	got := map[string][2]any{}
	for _, c := range r.Calls() {
		got[c.Tool] = [2]any{c.Task, c.TaskAfter}
	}
	want := map[string][2]any{
		"always_tool": {tool.TaskAlways, time.Duration(0)},
		"get_item":    {tool.TaskAllowed, time.Second},
		"plain_tool":  {tool.TaskNever, time.Duration(0)},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Calls' task settings (-want +got):\n%s", d)
	}

	s := mcp.NewServer(&mcp.Implementation{Name: "t"}, nil)
	r.Install(s, &Deps{})
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string]any{}
	for _, tl := range res.Tools {
		meta[tl.Name] = tl.Meta["io.github.toolroute/task"]
	}
	wantMeta := map[string]any{
		"always_tool": map[string]any{"mode": "always"},
		"get_item":    map[string]any{"mode": "allowed", "afterMs": float64(1000)},
		"plain_tool":  nil,
	}
	if d := cmp.Diff(wantMeta, meta); d != "" {
		t.Errorf("definitions' %s (-want +got):\n%s", "io.github.toolroute/task", d)
	}
}
