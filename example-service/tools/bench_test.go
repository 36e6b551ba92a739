package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/example-service/catalog"
	"github.com/toolroute/toolroute/example-service/tools"
	"github.com/toolroute/toolroute/internal/testing/mcptest"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
	"github.com/toolroute/toolroute/upstream"
)

// handClient is the hand-written catalog client get_item used before
// typed upstream calls (example-service/catalog/client.go, its Get and
// the plumbing Get ran through, as it was): the baseline of
// BenchmarkGetItem.
type handClient struct {
	BaseURL    string
	HTTPClient *http.Client
}

type handNotFound struct{ ID string }

func (e *handNotFound) Error() string { return fmt.Sprintf("item %.128q not found", e.ID) }

type handAPIError struct {
	Status        int
	Code, Message string
}

func (e *handAPIError) Error() string { return fmt.Sprintf("catalog: HTTP %d", e.Status) }

func (c *handClient) Get(ctx context.Context, id string) (catalog.Item, error) {
	var it catalog.Item
	err := c.do(ctx, catalog.GetRoute, map[string]string{"id": id}, http.StatusOK, &it)
	return it, err
}

func (c *handClient) do(ctx context.Context, r tool.Route, values map[string]string, want int, out any) error {
	base, err := url.Parse(c.BaseURL)
	if err != nil {
		return err
	}
	bound, err := r.Bind(values)
	if err != nil {
		return err
	}
	u := *base
	p, err := url.Parse(bound.ServicePath())
	if err != nil {
		return err
	}
	u.Path, u.RawPath = p.Path, p.RawPath
	req, err := http.NewRequestWithContext(ctx, r.Method, u.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.HTTPClient.Do(req)
	if err != nil {
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("catalog: %s: %w", r, err)
	}
	defer resp.Body.Close()
	lr := io.LimitReader(resp.Body, 1<<20)
	defer io.Copy(io.Discard, lr)
	if resp.StatusCode != want {
		var eb struct {
			Error catalog.ErrorDetail `json:"error"`
		}
		_ = json.NewDecoder(lr).Decode(&eb)
		if resp.StatusCode == http.StatusNotFound && eb.Error.Code == catalog.CodeNotFound {
			return &handNotFound{ID: values["id"]}
		}
		return &handAPIError{Status: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message}
	}
	return json.NewDecoder(lr).Decode(out)
}

type handDeps struct{ Catalog *handClient }

type handArgs struct {
	ID string `json:"id" jsonschema:"minLength=1,maxLength=200,description=the item's id (from list_items)"`
}

// BenchmarkGetItem pairs get_item as a typed upstream call (Forward,
// and Call) with the hand-written client call it replaces, against the
// same real catalog on 127.0.0.1: a whole tools/call over an in-memory
// MCP session through authz's upstream transport, and the upstream call
// alone.
func BenchmarkGetItem(b *testing.B) {
	api := httptest.NewServer(catalog.NewHandler(catalog.NewStore(catalog.DemoItems()...)))
	b.Cleanup(api.Close)
	transport := api.Client().Transport.(*http.Transport)
	transport.MaxIdleConnsPerHost = 64
	guarded := &http.Client{Transport: authz.Transport(transport, catalog.ServiceKey, api.URL, authz.AllowAll(), authz.Options{})}
	plain := &http.Client{Transport: transport}
	caller := authz.Caller{Subject: "bench", Bearer: "tok"}
	session := func(b *testing.B, install func(*mcp.Server)) *mcp.ClientSession {
		s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "v0"}, nil)
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				return next(authz.WithCaller(ctx, caller), method, req)
			}
		})
		install(s)
		return mcptest.Connect(b, s, nil)
	}
	hand := registry.New[*handDeps]()
	hand.Register(tool.Tool[*handDeps]{
		Name: "get_item", Description: "Fetch one catalog item by its id.", ServiceKey: catalog.ServiceKey,
		VisibilityRoutes: []tool.Route{catalog.GetRoute}, Behaviour: behaviour.ReadOnly,
		Handler: tool.Handle(func(ctx context.Context, d *handDeps, _ *mcp.CallToolRequest, in handArgs) (catalog.Item, error) {
			return d.Catalog.Get(ctx, in.ID)
		}),
	})
	params := &mcp.CallToolParams{Name: "get_item", Arguments: map[string]any{"id": "itm-2"}}
	call := func(b *testing.B, cs *mcp.ClientSession) {
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			res, err := cs.CallTool(ctx, params)
			if err != nil || res.IsError {
				b.Fatalf("get_item: %v %+v", err, res)
			}
		}
	}
	b.Run("tools-call/handwritten", func(b *testing.B) {
		call(b, session(b, func(s *mcp.Server) { hand.Install(s, &handDeps{&handClient{BaseURL: api.URL, HTTPClient: guarded}}) }))
	})
	b.Run("tools-call/forward", func(b *testing.B) {
		d := &tools.Deps{Clients: upstream.Endpoints{catalog.ServiceKey: {Origin: api.URL, Client: guarded}}}
		call(b, session(b, func(s *mcp.Server) { tools.Registry.Install(s, d) }))
	})

	ctx := context.Background()
	b.Run("call/handwritten", func(b *testing.B) {
		c := &handClient{BaseURL: api.URL, HTTPClient: plain}
		b.ReportAllocs()
		for b.Loop() {
			if it, err := c.Get(ctx, "itm-2"); err != nil || it.ID != "itm-2" {
				b.Fatal(it, err)
			}
		}
	})
	b.Run("call/upstream.Call", func(b *testing.B) {
		c := upstream.Endpoints{catalog.ServiceKey: {Origin: api.URL, Client: plain}}
		args := handArgs{ID: "itm-2"}
		b.ReportAllocs()
		for b.Loop() {
			if it, err := upstream.Call[catalog.Item](ctx, c, catalog.GetRoute, args); err != nil || it.ID != "itm-2" {
				b.Fatal(it, err)
			}
		}
	})
}
