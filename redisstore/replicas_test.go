package redisstore_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz/permission"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/testing/mcptest"
	"github.com/toolroute/toolroute/internal/testing/redistest"
	"github.com/toolroute/toolroute/redisstore"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
)

type readArgs struct {
	ID string `json:"id"`
}

type readOut struct {
	Granted []string `json:"granted"`
}

// replicaServer is one replica: a server whose "read" tool asks for
// "read" on the item, with a Checker on the shared stores.
func replicaServer(t *testing.T, opts permission.Options) *mcp.Server {
	t.Helper()
	perms := permission.New(opts)
	reg := registry.New[*permission.Checker]()
	reg.Register(tool.Tool[*permission.Checker]{
		Name:        "read",
		Description: "Read an item, with permission.",
		Local:       true,
		Behaviour:   behaviour.ReadOnly,
		Handler: tool.Handle(func(ctx context.Context, p *permission.Checker, req *mcp.CallToolRequest, in readArgs) (readOut, error) {
			g, err := p.Check(ctx, req, permission.Request{Subjects: []string{"item:" + in.ID}, Capabilities: []string{"read"}})
			return readOut{Granted: g.Capabilities()}, err
		}),
	})
	s := mcp.NewServer(&mcp.Implementation{Name: "replica", Version: "v0"}, nil)
	reg.Install(s, perms)
	return s
}

// TestAlwaysOnEveryReplica: an "allow always" given on one replica is
// honoured by the other two without asking; a "deny always" likewise.
func TestAlwaysOnEveryReplica(t *testing.T) {
	srv := redistest.Start(t)
	key := []byte(strings.Repeat("k", 32))
	var asked atomic.Int64
	mc := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			d := permission.AllowAlways
			if strings.Contains(req.Params.Message, "item:2") {
				d = permission.DenyAlways
			}
			asked.Add(1)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": d}}, nil
		},
	})
	var sessions []*mcp.ClientSession
	for range 3 {
		rdb := client(t, srv)
		s := replicaServer(t, permission.Options{
			Key:     key,
			Nonces:  redisstore.NewNonceStore(rdb, redisstore.Options{}),
			Answers: redisstore.NewAnswerStore(rdb, redisstore.Options{}),
		})
		sessions = append(sessions, mcptest.Connect(t, s, &mcptest.Options{Client: mc}))
	}
	read := func(cs *mcp.ClientSession, id string) string {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "read", Arguments: map[string]any{"id": id}})
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError {
			return "error: " + res.Content[0].(*mcp.TextContent).Text
		}
		return "granted"
	}
	for i, cs := range sessions {
		if got := read(cs, "1"); got != "granted" {
			t.Errorf("replica %d, item:1 = %q, want granted", i, got)
		}
		if got := read(cs, "2"); !strings.HasPrefix(got, "error: permission denied") {
			t.Errorf("replica %d, item:2 = %q, want denied", i, got)
		}
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("asked %d times, want 2 (once per item, on the first replica)", n)
	}
}
