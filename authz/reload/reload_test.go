package reload_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/reload"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/testing/mcptest"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/tool"
)

var (
	items  = tool.ServiceRoute("svc", http.MethodGet, "/api/items/{id}")
	viewer = authz.Caller{Subject: "vera", Roles: []string{"viewer"}}
)

// policy is a policy whose role viewer reads items, or reads nothing.
func policy(t testing.TB, reads bool) *authz.Policy {
	t.Helper()
	rp := authz.RolePolicy{Role: "viewer"}
	if reads {
		rp = authz.RolePolicyFor("viewer", []tool.Route{items})
	} else {
		rp.AccessPolicies = []authz.AccessPolicy{{Path: "^/other$", Methods: []string{"GET"}, Effect: authz.Allow}}
	}
	p, err := authz.NewPolicy([]authz.RolePolicy{rp})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSwap: a decision without a pinned context follows Swap; a pinned
// one keeps the generation it was pinned to.
func TestSwap(t *testing.T) {
	r := reload.New(policy(t, true))
	ctx := context.Background()
	pinned := r.Pin(ctx)
	if err := r.Allow(ctx, viewer, items); err != nil {
		t.Fatalf("generation 1: %v, want allowed", err)
	}
	if g := r.Swap(policy(t, false)); g != 2 {
		t.Errorf("Swap = generation %d, want 2", g)
	}
	var denied *authz.DeniedError
	if err := r.Allow(ctx, viewer, items); !errors.As(err, &denied) {
		t.Errorf("after the swap: %v, want denied", err)
	}
	if err := r.Allow(pinned, viewer, items); err != nil {
		t.Errorf("pinned before the swap: %v, want allowed (the generation it began with)", err)
	}
	if got, err := r.AllowMany(pinned, viewer, []tool.Route{items}); err != nil || !got[0] {
		t.Errorf("AllowMany pinned before the swap = %v, %v; want [true]", got, err)
	}
	if g := r.Generation(pinned); g != 1 {
		t.Errorf("Generation(pinned) = %d, want 1", g)
	}
	if r.Pin(pinned) != pinned {
		t.Error("Pin of a pinned context pinned it again: a request must keep the generation it began with")
	}
	if _, g := r.Current(); g != 2 {
		t.Errorf("Current generation = %d, want 2", g)
	}
}

// TestCachedFollowsSwap: authz.Cached in front of an Authorizer never
// answers with a decision of an older generation once a newer one is
// current, though the entry has not expired; a context pinned to the
// old generation still gets the old decision.
func TestCachedFollowsSwap(t *testing.T) {
	r := reload.New(policy(t, true))
	c := authz.Cached(r, time.Hour, 100)
	ctx := context.Background()
	pinned := r.Pin(ctx)
	if err := c.Allow(ctx, viewer, items); err != nil {
		t.Fatalf("generation 1: %v", err)
	}
	if got, _ := c.AllowMany(ctx, viewer, []tool.Route{items}); !got[0] {
		t.Fatal("generation 1, AllowMany: denied")
	}
	r.Swap(policy(t, false))
	if err := c.Allow(ctx, viewer, items); err == nil {
		t.Error("Allow after the swap: allowed from the cache, a decision of the old policy")
	}
	if got, err := c.AllowMany(ctx, viewer, []tool.Route{items}); err != nil || got[0] {
		t.Errorf("AllowMany after the swap = %v, %v; want [false]", got, err)
	}
	if err := c.Allow(pinned, viewer, items); err != nil {
		t.Errorf("pinned to generation 1: %v, want its decision (allowed)", err)
	}
}

// TestNoHalfAppliedPolicy: while another goroutine swaps between a
// policy that allows both routes and one that allows neither, every
// request (a pinned context) decides both routes, asked separately,
// under one policy.
func TestNoHalfAppliedPolicy(t *testing.T) {
	other := tool.ServiceRoute("svc", http.MethodGet, "/api/other")
	both := func(allow bool) authz.Authorizer {
		rp := authz.RolePolicyFor("viewer", []tool.Route{items, other})
		if !allow {
			rp.AccessPolicies = []authz.AccessPolicy{{Path: "^/nothing$", Methods: []string{"GET"}, Effect: authz.Allow}}
		}
		p, err := authz.NewPolicy([]authz.RolePolicy{rp})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	allowAll, allowNone := both(true), both(false)
	r := reload.New(allowAll)
	c := authz.Cached(r, time.Hour, 1000)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%2 == 0 {
				r.Swap(allowNone)
			} else {
				r.Swap(allowAll)
			}
		}
	})
	for _, a := range []authz.Authorizer{r, c} {
		for range 2000 {
			ctx := r.Pin(context.Background())
			first := a.Allow(ctx, viewer, items) == nil
			second := a.Allow(ctx, viewer, other) == nil
			if first != second {
				close(stop)
				wg.Wait()
				t.Fatalf("%T: one request decided %v then %v: a half-applied policy", a, first, second)
			}
		}
	}
	close(stop)
	wg.Wait()
}

// TestCallKeepsItsPolicy: over a real server, a tools/call that begins
// under a policy finishes under it — its upstream request is allowed
// though the policy that allowed it was swapped out during the call —
// and the next call sees the new policy: the tool is hidden.
func TestCallKeepsItsPolicy(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`"item"`))
	}))
	defer up.Close()
	r := reload.New(policy(t, true))
	client := &http.Client{Transport: authz.Transport(nil, "svc", up.URL, r, authz.Options{})}
	swapped := false
	type args struct {
		ID string `json:"id"`
	}
	type out struct {
		Status int `json:"status"`
	}
	reg := registry.New[*http.Client]()
	reg.Register(tool.Tool[*http.Client]{
		Name:             "get_item",
		Description:      "Get an item.",
		ServiceKey:       "svc",
		VisibilityRoutes: []tool.Route{items},
		Behaviour:        behaviour.ReadOnly,
		Handler: tool.Handle(func(ctx context.Context, c *http.Client, _ *mcp.CallToolRequest, in args) (out, error) {
			if !swapped {
				r.Swap(policy(t, false)) // the reload lands during the call
				swapped = true
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, up.URL+"/api/items/"+in.ID, nil)
			resp, err := c.Do(req)
			if err != nil {
				return out{}, err
			}
			resp.Body.Close()
			return out{Status: resp.StatusCode}, nil
		}),
	})
	s, err := server.New(server.Options{Authorizer: r, Caller: &viewer, Observers: []mcp.Middleware{r.Middleware()}}, server.Install(reg, client))
	if err != nil {
		t.Fatal(err)
	}
	cs := mcptest.Connect(t, s, nil)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "get_item", Arguments: map[string]any{"id": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("the call during which the policy was swapped failed: %s (its upstream request was decided under the new policy)", res.Content[0].(*mcp.TextContent).Text)
	}
	_, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "get_item", Arguments: map[string]any{"id": "1"}})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("the call after the swap = %v, want unknown tool (hidden by the new policy)", err)
	}
	lr, err := cs.ListTools(t.Context(), nil)
	if err != nil || len(lr.Tools) != 0 {
		t.Errorf("tools/list after the swap = %v, %v; want no tool", lr, err)
	}
}

func ExampleAuthorizer() {
	viewer := authz.Caller{Subject: "vera", Roles: []string{"viewer"}}
	route := tool.ServiceRoute("svc", http.MethodGet, "/api/items/{id}")
	reads := authz.MustParsePolicy([]byte(`[{"role": "viewer", "accessPolicies": [{"path": "^/svc/api/items/[^/]+$", "methods": ["GET"], "effect": "allow"}]}]`))
	readsNothing := authz.MustParsePolicy([]byte(`[{"role": "viewer", "accessPolicies": [{"path": "^/svc/api/other$", "methods": ["GET"], "effect": "allow"}]}]`))

	r := reload.New(reads)
	request := r.Pin(context.Background()) // a request begins
	r.Swap(readsNothing)                   // the policy is reloaded

	fmt.Println("the request that began before:", r.Allow(request, viewer, route) == nil)
	fmt.Println("a request that begins after:", r.Allow(r.Pin(context.Background()), viewer, route) == nil)
	// Output:
	// the request that began before: true
	// a request that begins after: false
}
