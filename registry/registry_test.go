package registry_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/testing/golden"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
	"github.com/toolroute/toolroute/upstream"
)

// Deps is the dependency container of these tests.
type Deps struct {
	Items map[string]string
}

// Upstream makes Deps an upstream.Clients, for the cases of forwarding
// tools (which Check refuses or accepts, never calls).
func (*Deps) Upstream(string) (string, *http.Client) { return "", nil }

type getItemArgs struct {
	ID string `json:"id" jsonschema:"minLength=1,description=the item's id"`
}

type Item struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

func getItem(ctx context.Context, d *Deps, req *mcp.CallToolRequest, in getItemArgs) (Item, error) {
	name, ok := d.Items[in.ID]
	if !ok {
		return Item{}, fmt.Errorf("no item %q", in.ID)
	}
	return Item{ID: in.ID, Name: name}, nil
}

type badPatternArgs struct {
	Code string `json:"code" jsonschema:"pattern=(unclosed"`
}

type treeResult struct {
	Children []treeResult `json:"children"`
}

func catalog(method, path string) tool.Route { return tool.ServiceRoute("catalog", method, path) }

// mapped returns a valid mapped tool; rows of the tables below break it.
func mapped() tool.Tool[*Deps] {
	return tool.Tool[*Deps]{
		Name:             "get_item",
		Description:      "Fetch one catalog item by its id.",
		ServiceKey:       "catalog",
		VisibilityRoutes: []tool.Route{catalog(http.MethodGet, "/api/v1/items/{id}")},
		Behaviour:        behaviour.ReadOnly,
		Handler:          tool.Handle(getItem),
	}
}

// local returns a valid local tool.
func local() tool.Tool[*Deps] {
	return tool.Tool[*Deps]{
		Name:        "server_info",
		Description: "Describe this server.",
		Local:       true,
		Behaviour:   behaviour.ReadOnly,
		Handler:     tool.Handle(getItem),
	}
}

// checkAt calls r.Check(t) and returns its error and the FILE:LINE of
// the call.
func checkAt(r *registry.Registry[*Deps], t tool.Tool[*Deps]) (err error, site string) {
	_, file, line, _ := runtime.Caller(0)
	err = r.Check(t)
	return err, fmt.Sprintf("%s:%d", file, line+1)
}

// registerAt calls r.Register(t) and returns the message it panicked with
// ("" if none) and the FILE:LINE of the call.
func registerAt(r *registry.Registry[*Deps], t tool.Tool[*Deps]) (msg, site string) {
	defer func() {
		if p := recover(); p != nil {
			msg = fmt.Sprint(p)
		}
	}()
	_, file, line, _ := runtime.Caller(0)
	site = fmt.Sprintf("%s:%d", file, line+2)
	r.Register(t)
	return "", site
}

// checkCase is a case of Check's rules: a change to the valid mapped() or
// local() tool, made in Go by mutate and written as source by src.
type checkCase struct {
	name   string
	mutate func(*tool.Tool[*Deps])
	local  bool   // start from local() instead of mapped()
	want   string // the RULE part of the message; "" = valid
	// src is the same change as fields of the tool's literal, one a
	// line, each replacing the base literal's field of its name; see
	// TestCheckVet, which holds registry/vet to Check's verdicts.
	src string
	// runtimeOnly marks a rule the source does not show (the analyzer
	// must say nothing of the tool).
	runtimeOnly bool
}

// longName is a tool name of 128 bytes.
const longName = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

// checkCases are the cases of TestCheck and TestCheckVet.
func checkCases() []checkCase {
	long := longName
	return []checkCase{
		// Positive controls.
		{name: "mapped", src: ``, mutate: func(*tool.Tool[*Deps]) {}},
		{name: "local", src: ``, local: true, mutate: func(*tool.Tool[*Deps]) {}},
		{name: "name of 128 bytes", src: `Name: long`, mutate: func(tl *tool.Tool[*Deps]) { tl.Name = long }},
		{name: "name of every allowed class", src: `Name: "Az09_.-"`, mutate: func(tl *tool.Tool[*Deps]) { tl.Name = "Az09_.-" }},
		{name: "one-letter name", src: `Name: "x"`, mutate: func(tl *tool.Tool[*Deps]) { tl.Name = "x" }},
		{name: "additive idempotent", src: `Behaviour: behaviour.Additive
Idempotent: true`, mutate: func(tl *tool.Tool[*Deps]) { tl.Behaviour, tl.Idempotent = behaviour.Additive, true }},
		{name: "destructive open world", src: `Behaviour: behaviour.Destructive
OpenWorld: true`, mutate: func(tl *tool.Tool[*Deps]) { tl.Behaviour, tl.OpenWorld = behaviour.Destructive, true }},
		{name: "title", src: `Title: "Get item"`, mutate: func(tl *tool.Tool[*Deps]) { tl.Title = "Get item" }},
		{name: "indented description", src: `Description: "\n\t\tFetch.\n\n\t\tMore.\n\t"`, mutate: func(tl *tool.Tool[*Deps]) { tl.Description = "\n\t\tFetch.\n\n\t\tMore.\n\t" }},
		{name: "several routes", src: `VisibilityRoutes: []tool.Route{catalog(http.MethodGet, "/api/v1/items/{id}"), catalog("HEAD", "/api/v1/items/{id}"), catalog("GET", "/api/v1/items")}`, mutate: func(tl *tool.Tool[*Deps]) {
			tl.VisibilityRoutes = append(tl.VisibilityRoutes, catalog("HEAD", "/api/v1/items/{id}"), catalog("GET", "/api/v1/items"))
		}},
		{name: "route at the service's first level", src: `VisibilityRoutes: []tool.Route{catalog("GET", "/items")}`, mutate: func(tl *tool.Tool[*Deps]) { tl.VisibilityRoutes = []tool.Route{catalog("GET", "/items")} }},
		{name: "HandleResult handler", src: `Handler: tool.HandleResult(func(context.Context, *Deps, *mcp.CallToolRequest, getItemArgs) (*mcp.CallToolResult, error) { return nil, nil })`, mutate: func(tl *tool.Tool[*Deps]) {
			tl.Handler = tool.HandleResult(func(context.Context, *Deps, *mcp.CallToolRequest, getItemArgs) (*mcp.CallToolResult, error) {
				return nil, nil
			})
		}},
		{name: "map arguments", src: `Handler: tool.Handle(func(context.Context, *Deps, *mcp.CallToolRequest, map[string]string) (Item, error) { return Item{}, nil })`, mutate: func(tl *tool.Tool[*Deps]) {
			tl.Handler = tool.Handle(func(context.Context, *Deps, *mcp.CallToolRequest, map[string]string) (Item, error) {
				return Item{}, nil
			})
		}},

		// Name.
		{name: "empty name", src: `Name: ""`, mutate: func(tl *tool.Tool[*Deps]) { tl.Name = "" }, want: "empty Name"},
		{name: "name with space", src: `Name: "get item"`, mutate: func(tl *tool.Tool[*Deps]) { tl.Name = "get item" }, want: `Name contains ' ': only A-Z a-z 0-9 _ . - are allowed`},
		{name: "name with slash", src: `Name: "catalog/get"`, mutate: func(tl *tool.Tool[*Deps]) { tl.Name = "catalog/get" }, want: `Name contains '/'`},
		{name: "name with colon", src: `Name: "catalog:get"`, mutate: func(tl *tool.Tool[*Deps]) { tl.Name = "catalog:get" }, want: `Name contains ':'`},
		{name: "name with unicode", src: `Name: "naïve"`, mutate: func(tl *tool.Tool[*Deps]) { tl.Name = "naïve" }, want: `Name contains 'ï'`},
		{name: "name with newline", src: `Name: "a\nb"`, mutate: func(tl *tool.Tool[*Deps]) { tl.Name = "a\nb" }, want: `Name contains '\n'`},
		{name: "name of 129 bytes", src: `Name: long + "a"`, mutate: func(tl *tool.Tool[*Deps]) { tl.Name = long + "a" }, want: "Name is 129 bytes long, at most 128 allowed"},

		// Description.
		{name: "empty description", src: `Description: ""`, mutate: func(tl *tool.Tool[*Deps]) { tl.Description = "" }, want: "missing Description"},
		{name: "blank description", src: `Description: " \n\t "`, mutate: func(tl *tool.Tool[*Deps]) { tl.Description = " \n\t " }, want: "missing Description"},

		// Behaviour.
		{name: "unset behaviour", src: `Behaviour: behaviour.Unset`, mutate: func(tl *tool.Tool[*Deps]) { tl.Behaviour = behaviour.Unset }, want: "Behaviour is unset: declare behaviour.ReadOnly, behaviour.Additive or behaviour.Destructive"},
		{name: "unknown behaviour", src: `Behaviour: 7`, mutate: func(tl *tool.Tool[*Deps]) { tl.Behaviour = 7 }, want: "Behaviour is Behaviour(7)"},
		{name: "negative behaviour", src: `Behaviour: -1`, mutate: func(tl *tool.Tool[*Deps]) { tl.Behaviour = -1 }, want: "Behaviour is Behaviour(-1)"},

		// Handler.
		{name: "missing handler", src: `Handler: tool.Handler[*Deps]{}`, mutate: func(tl *tool.Tool[*Deps]) { tl.Handler = tool.Handler[*Deps]{} }, want: "missing Handler (use tool.Handle or tool.HandleResult)"},
		{name: "nil handler func", src: `Handler: tool.Handle[*Deps, getItemArgs, Item](nil)`, mutate: func(tl *tool.Tool[*Deps]) { tl.Handler = tool.Handle[*Deps, getItemArgs, Item](nil) }, want: "missing Handler"},
		{name: "non-object In", src: `Handler: tool.Handle(func(context.Context, *Deps, *mcp.CallToolRequest, []string) (Item, error) { return Item{}, nil })`, mutate: func(tl *tool.Tool[*Deps]) {
			tl.Handler = tool.Handle(func(context.Context, *Deps, *mcp.CallToolRequest, []string) (Item, error) { return Item{}, nil })
		}, want: "input type []string reflects to an array schema, want an object"},
		{name: "interface In", src: `Handler: tool.Handle(func(context.Context, *Deps, *mcp.CallToolRequest, any) (Item, error) { return Item{}, nil })`, mutate: func(tl *tool.Tool[*Deps]) {
			tl.Handler = tool.Handle(func(context.Context, *Deps, *mcp.CallToolRequest, any) (Item, error) { return Item{}, nil })
		}, want: "input type: interface {} is an interface"},
		{name: "non-object Out", src: `Handler: tool.Handle(func(context.Context, *Deps, *mcp.CallToolRequest, getItemArgs) (string, error) { return "", nil })`, mutate: func(tl *tool.Tool[*Deps]) {
			tl.Handler = tool.Handle(func(context.Context, *Deps, *mcp.CallToolRequest, getItemArgs) (string, error) { return "", nil })
		}, want: "output type string reflects to a string schema, want an object"},
		{name: "list Out", src: `Handler: tool.Handle(func(context.Context, *Deps, *mcp.CallToolRequest, getItemArgs) ([]Item, error) { return nil, nil })`, mutate: func(tl *tool.Tool[*Deps]) {
			tl.Handler = tool.Handle(func(context.Context, *Deps, *mcp.CallToolRequest, getItemArgs) ([]Item, error) { return nil, nil })
		}, want: "output type []registry_test.Item reflects to an array schema"},
		{name: "invalid schema", src: `Handler: tool.Handle(func(context.Context, *Deps, *mcp.CallToolRequest, badPatternArgs) (Item, error) { return Item{}, nil })`, runtimeOnly: true, mutate: func(tl *tool.Tool[*Deps]) {
			tl.Handler = tool.Handle(func(context.Context, *Deps, *mcp.CallToolRequest, badPatternArgs) (Item, error) { return Item{}, nil })
		}, want: "input type registry_test.badPatternArgs: invalid schema"},
		{name: "recursive type", src: `Handler: tool.Handle(func(context.Context, *Deps, *mcp.CallToolRequest, getItemArgs) (treeResult, error) { return treeResult{}, nil })`, runtimeOnly: true, mutate: func(tl *tool.Tool[*Deps]) {
			tl.Handler = tool.Handle(func(context.Context, *Deps, *mcp.CallToolRequest, getItemArgs) (treeResult, error) {
				return treeResult{}, nil
			})
		}, want: "output type: registry_test.treeResult contains itself"},
		{name: "forwarded route declared", src: `Handler: upstream.Forward[*Deps, getItemArgs, Item](catalog(http.MethodGet, "/api/v1/items/{id}"))`, mutate: func(tl *tool.Tool[*Deps]) {
			tl.Handler = upstream.Forward[*Deps, getItemArgs, Item](catalog(http.MethodGet, "/api/v1/items/{id}"))
		}},
		{name: "forwarded route not declared", src: `Handler: upstream.Forward[*Deps, getItemArgs, Item](catalog(http.MethodGet, "/api/v1/items/{id}/history"))`, mutate: func(tl *tool.Tool[*Deps]) {
			tl.Handler = upstream.Forward[*Deps, getItemArgs, Item](catalog(http.MethodGet, "/api/v1/items/{id}/history"))
		}, want: "the handler sends requests on GET /catalog/api/v1/items/{id}/history, which VisibilityRoutes does not declare: add it there (a tool's routes decide who sees it, and its upstream transport refuses every request outside them)"},
		{name: "forwarded route without a field for a placeholder", src: `VisibilityRoutes: []tool.Route{catalog(http.MethodGet, "/api/v1/items/{id}/{rev}")}
Handler: upstream.Forward[*Deps, getItemArgs, Item](catalog(http.MethodGet, "/api/v1/items/{id}/{rev}"))`, runtimeOnly: true, mutate: func(tl *tool.Tool[*Deps]) {
			tl.VisibilityRoutes = []tool.Route{catalog(http.MethodGet, "/api/v1/items/{id}/{rev}")}
			tl.Handler = upstream.Forward[*Deps, getItemArgs, Item](catalog(http.MethodGet, "/api/v1/items/{id}/{rev}"))
		}, want: `upstream GET /catalog/api/v1/items/{id}/{rev}: placeholder {rev} has no field in registry_test.getItemArgs: add one with json:"rev" (untagged or in:"path")`},
		{name: "non-object HandleResult In", src: `Handler: tool.HandleResult(func(context.Context, *Deps, *mcp.CallToolRequest, int) (*mcp.CallToolResult, error) { return nil, nil })`, mutate: func(tl *tool.Tool[*Deps]) {
			tl.Handler = tool.HandleResult(func(context.Context, *Deps, *mcp.CallToolRequest, int) (*mcp.CallToolResult, error) { return nil, nil })
		}, want: "input type int reflects to an integer schema"},

		// Local and mapped.
		{name: "local with routes", src: `VisibilityRoutes: []tool.Route{catalog("GET", "/x")}`, local: true, mutate: func(tl *tool.Tool[*Deps]) { tl.VisibilityRoutes = []tool.Route{catalog("GET", "/x")} }, want: "a Local tool must not declare VisibilityRoutes (it calls no upstream)"},
		{name: "local with service key", src: `ServiceKey: "catalog"`, local: true, mutate: func(tl *tool.Tool[*Deps]) { tl.ServiceKey = "catalog" }, want: "a Local tool must not declare a ServiceKey (it calls no upstream)"},
		{name: "neither routes nor local", src: `VisibilityRoutes: nil`, mutate: func(tl *tool.Tool[*Deps]) { tl.VisibilityRoutes = nil }, want: "no VisibilityRoutes and not Local"},
		{name: "empty routes, not local", src: `VisibilityRoutes: []tool.Route{}`, mutate: func(tl *tool.Tool[*Deps]) { tl.VisibilityRoutes = []tool.Route{} }, want: "no VisibilityRoutes and not Local"},
		{name: "nothing declared", src: `VisibilityRoutes: nil
ServiceKey: ""`, mutate: func(tl *tool.Tool[*Deps]) { tl.VisibilityRoutes, tl.ServiceKey = nil, "" }, want: "no VisibilityRoutes and not Local"},
		{name: "mapped without service key", src: `ServiceKey: ""`, mutate: func(tl *tool.Tool[*Deps]) { tl.ServiceKey = "" }, want: "VisibilityRoutes without a ServiceKey: name the upstream service the tool calls"},
		{name: "service key with slash", src: `ServiceKey: "cat/alog"
VisibilityRoutes: []tool.Route{{URI: "/cat/alog/x", Method: "GET"}}`, mutate: func(tl *tool.Tool[*Deps]) {
			tl.ServiceKey = "cat/alog"
			tl.VisibilityRoutes = []tool.Route{{URI: "/cat/alog/x", Method: "GET"}}
		}, want: `ServiceKey "cat/alog" is not a plain path segment: use letters, digits, "-", ".", "_" and "~"`},
		{name: "service key dot-dot", src: `ServiceKey: ".."`, mutate: func(tl *tool.Tool[*Deps]) {
			tl.ServiceKey = ".."
		}, want: `ServiceKey ".." is not a plain path segment`},
		{name: "service key that needs escaping", src: `ServiceKey: "café"`, mutate: func(tl *tool.Tool[*Deps]) {
			tl.ServiceKey = "café"
		}, want: `ServiceKey "café" is not a plain path segment`},

		// Routes and the service.
		{name: "route of another service", src: `VisibilityRoutes: []tool.Route{tool.ServiceRoute("billing", "GET", "/api/v1/items/{id}")}`, mutate: func(tl *tool.Tool[*Deps]) {
			tl.VisibilityRoutes = []tool.Route{tool.ServiceRoute("billing", "GET", "/api/v1/items/{id}")}
		}, want: `route GET /billing/api/v1/items/{id} is outside service "catalog" (its URI must start with "/catalog/")`},
		{name: "route sharing the key's prefix", src: `VisibilityRoutes: []tool.Route{{URI: "/catalogue/x", Method: "GET"}}`, mutate: func(tl *tool.Tool[*Deps]) {
			tl.VisibilityRoutes = []tool.Route{{URI: "/catalogue/x", Method: "GET"}}
		}, want: `route GET /catalogue/x is outside service "catalog"`},
		{name: "ServiceRoute path without its slash", src: `VisibilityRoutes: []tool.Route{tool.ServiceRoute("catalog", "GET", "api/v1/items")}`, mutate: func(tl *tool.Tool[*Deps]) {
			tl.VisibilityRoutes = []tool.Route{tool.ServiceRoute("catalog", "GET", "api/v1/items")}
		}, want: `route GET /catalogapi/v1/items is outside service "catalog" (its URI must start with "/catalog/"; if it was built with tool.ServiceRoute, the path must start with "/")`},
		{name: "route of the service root", src: `VisibilityRoutes: []tool.Route{{URI: "/catalog", Method: "GET"}}`, mutate: func(tl *tool.Tool[*Deps]) {
			tl.VisibilityRoutes = []tool.Route{{URI: "/catalog", Method: "GET"}}
		}, want: `route GET /catalog is outside service "catalog"`},
		{name: "route placeholder as service", src: `VisibilityRoutes: []tool.Route{{URI: "/{svc}/x", Method: "GET"}}`, mutate: func(tl *tool.Tool[*Deps]) {
			tl.VisibilityRoutes = []tool.Route{{URI: "/{svc}/x", Method: "GET"}}
		}, want: `route GET /{svc}/x is outside service "catalog"`},
		{name: "no leading slash", src: `VisibilityRoutes: []tool.Route{{URI: "catalog/x", Method: "GET"}}`, mutate: func(tl *tool.Tool[*Deps]) { tl.VisibilityRoutes = []tool.Route{{URI: "catalog/x", Method: "GET"}} }, want: `invalid route GET catalog/x: URI must start with "/"`},
		{name: "dot-dot segment", src: `VisibilityRoutes: []tool.Route{catalog("GET", "/api/../admin")}`, mutate: func(tl *tool.Tool[*Deps]) { tl.VisibilityRoutes = []tool.Route{catalog("GET", "/api/../admin")} }, want: `invalid route GET /catalog/api/../admin: URI must not contain a ".." segment`},
		{name: "dot segment", src: `VisibilityRoutes: []tool.Route{catalog("GET", "/./x")}`, mutate: func(tl *tool.Tool[*Deps]) { tl.VisibilityRoutes = []tool.Route{catalog("GET", "/./x")} }, want: `URI must not contain a "." segment`},
		{name: "escaped dot-dot segment", src: `VisibilityRoutes: []tool.Route{catalog("GET", "/%2e%2e/admin")}`, mutate: func(tl *tool.Tool[*Deps]) { tl.VisibilityRoutes = []tool.Route{catalog("GET", "/%2e%2e/admin")} }, want: `segment "%2e%2e": must not decode to ".."`},
		{name: "query", src: `VisibilityRoutes: []tool.Route{catalog("GET", "/items?all=1")}`, mutate: func(tl *tool.Tool[*Deps]) { tl.VisibilityRoutes = []tool.Route{catalog("GET", "/items?all=1")} }, want: "URI must not contain a query or fragment"},
		{name: "fragment", src: `VisibilityRoutes: []tool.Route{catalog("GET", "/items#x")}`, mutate: func(tl *tool.Tool[*Deps]) { tl.VisibilityRoutes = []tool.Route{catalog("GET", "/items#x")} }, want: "URI must not contain a query or fragment"},
		{name: "white space", src: `VisibilityRoutes: []tool.Route{catalog("GET", "/my items")}`, mutate: func(tl *tool.Tool[*Deps]) { tl.VisibilityRoutes = []tool.Route{catalog("GET", "/my items")} }, want: "URI must not contain white space or control characters"},
		{name: "control character", src: `VisibilityRoutes: []tool.Route{catalog("GET", "/items\x00")}`, mutate: func(tl *tool.Tool[*Deps]) { tl.VisibilityRoutes = []tool.Route{catalog("GET", "/items\x00")} }, want: "URI must not contain white space or control characters"},
		{name: "empty segment", src: `VisibilityRoutes: []tool.Route{catalog("GET", "//items")}`, mutate: func(tl *tool.Tool[*Deps]) { tl.VisibilityRoutes = []tool.Route{catalog("GET", "//items")} }, want: "URI must not contain an empty segment"},
		{name: "two trailing slashes", src: `VisibilityRoutes: []tool.Route{catalog("GET", "/items//")}`, mutate: func(tl *tool.Tool[*Deps]) { tl.VisibilityRoutes = []tool.Route{catalog("GET", "/items//")} }, want: "URI must not contain an empty segment"},
		{name: "malformed placeholder", src: `VisibilityRoutes: []tool.Route{catalog("GET", "/items/{id")}`, mutate: func(tl *tool.Tool[*Deps]) { tl.VisibilityRoutes = []tool.Route{catalog("GET", "/items/{id")} }, want: `segment "{id": a placeholder must be a whole segment "{name}"`},
		{name: "placeholder name", src: `VisibilityRoutes: []tool.Route{catalog("GET", "/items/{item-id}")}`, mutate: func(tl *tool.Tool[*Deps]) { tl.VisibilityRoutes = []tool.Route{catalog("GET", "/items/{item-id}")} }, want: `placeholder "{item-id}": name must be an identifier`},
		{name: "partial placeholder", src: `VisibilityRoutes: []tool.Route{catalog("GET", "/items/id-{id}")}`, mutate: func(tl *tool.Tool[*Deps]) { tl.VisibilityRoutes = []tool.Route{catalog("GET", "/items/id-{id}")} }, want: "a placeholder must be a whole segment"},
		{name: "duplicate placeholder", src: `VisibilityRoutes: []tool.Route{catalog("GET", "/{id}/items/{id}")}`, mutate: func(tl *tool.Tool[*Deps]) { tl.VisibilityRoutes = []tool.Route{catalog("GET", "/{id}/items/{id}")} }, want: "placeholder {id} appears twice"},
		{name: "bad percent-escape", src: `VisibilityRoutes: []tool.Route{catalog("GET", "/100%")}`, mutate: func(tl *tool.Tool[*Deps]) { tl.VisibilityRoutes = []tool.Route{catalog("GET", "/100%")} }, want: `segment "100%": malformed percent-escape`},
		{name: "lowercase method", src: `VisibilityRoutes: []tool.Route{catalog("get", "/items")}`, mutate: func(tl *tool.Tool[*Deps]) { tl.VisibilityRoutes = []tool.Route{catalog("get", "/items")} }, want: `invalid route get /catalog/items: method "get" is not an upper-case HTTP method`},
		{name: "unknown method", src: `VisibilityRoutes: []tool.Route{catalog("FETCH", "/items")}`, mutate: func(tl *tool.Tool[*Deps]) { tl.VisibilityRoutes = []tool.Route{catalog("FETCH", "/items")} }, want: `method "FETCH" is not an upper-case HTTP method`},
		{name: "empty method", src: `VisibilityRoutes: []tool.Route{catalog("", "/items")}`, mutate: func(tl *tool.Tool[*Deps]) { tl.VisibilityRoutes = []tool.Route{catalog("", "/items")} }, want: `method "" is not an upper-case HTTP method`},
		{name: "zero route", src: `VisibilityRoutes: []tool.Route{{}}`, mutate: func(tl *tool.Tool[*Deps]) { tl.VisibilityRoutes = []tool.Route{{}} }, want: "invalid route"},
		{name: "duplicate route", src: `VisibilityRoutes: []tool.Route{catalog("GET", "/items"), catalog("POST", "/items"), catalog("GET", "/items")}`, mutate: func(tl *tool.Tool[*Deps]) {
			tl.VisibilityRoutes = []tool.Route{catalog("GET", "/items"), catalog("POST", "/items"), catalog("GET", "/items")}
		}, want: "duplicate route GET /catalog/items"},
		{name: "duplicate route but for a placeholder's name", src: `VisibilityRoutes: []tool.Route{catalog("GET", "/items/{id}"), catalog("GET", "/items/{name}")}`, mutate: func(tl *tool.Tool[*Deps]) {
			tl.VisibilityRoutes = []tool.Route{catalog("GET", "/items/{id}"), catalog("GET", "/items/{name}")}
		}, want: "duplicate route GET /catalog/items/{name} (the same as GET /catalog/items/{id}: placeholder names do not tell routes apart)"},

		// Task.
		{name: "task never", src: `Task: tool.TaskNever`, mutate: func(tl *tool.Tool[*Deps]) { tl.Task = tool.TaskNever }},
		{name: "task allowed with the default", src: `Task: tool.TaskAllowed`, mutate: func(tl *tool.Tool[*Deps]) { tl.Task = tool.TaskAllowed }},
		{name: "task allowed after 2s", src: `Task: tool.TaskAllowed
TaskAfter: 2 * time.Second`, mutate: func(tl *tool.Tool[*Deps]) { tl.Task, tl.TaskAfter = tool.TaskAllowed, 2*time.Second }},
		{name: "task always", src: `Task: tool.TaskAlways`, mutate: func(tl *tool.Tool[*Deps]) { tl.Task = tool.TaskAlways }},
		{name: "unknown task mode", src: `Task: 7`, mutate: func(tl *tool.Tool[*Deps]) { tl.Task = 7 },
			want: "unknown Task TaskMode(7) (want tool.TaskNever, tool.TaskAllowed or tool.TaskAlways)"},
		{name: "negative task after", src: `Task: tool.TaskAllowed
TaskAfter: -time.Second`, mutate: func(tl *tool.Tool[*Deps]) { tl.Task, tl.TaskAfter = tool.TaskAllowed, -time.Second }, want: "negative TaskAfter -1s"},
		{name: "task after without a task", src: `TaskAfter: time.Second`, mutate: func(tl *tool.Tool[*Deps]) { tl.TaskAfter = time.Second },
			want: "TaskAfter 1s with Task never: only a TaskAllowed tool becomes a task after a while"},
		{name: "task after with always", src: `Task: tool.TaskAlways
TaskAfter: time.Second`, mutate: func(tl *tool.Tool[*Deps]) { tl.Task, tl.TaskAfter = tool.TaskAlways, time.Second }, want: "TaskAfter 1s with Task always"},

		// Lifecycle.
		{name: "every lifecycle field", src: `Deprecated: &tool.Deprecation{Reason: "old", Successor: "other", Sunset: time.Date(2027, 6, 30, 0, 0, 0, 0, time.UTC)}
Version: "v1.2.3-rc.1+x"
Tags: []string{"a", "b-2", "c.d", "e_f"}
Icons: []mcp.Icon{{Source: "data:image/png;base64,AA=="}}`, mutate: func(tl *tool.Tool[*Deps]) {
			tl.Deprecated = &tool.Deprecation{Reason: "old", Successor: "other", Sunset: time.Date(2027, 6, 30, 0, 0, 0, 0, time.UTC)}
			tl.Version, tl.Tags, tl.Icons = "v1.2.3-rc.1+x", []string{"a", "b-2", "c.d", "e_f"}, []mcp.Icon{{Source: "data:image/png;base64,AA=="}}
		}},
		{name: "not deprecated", src: `Deprecated: nil`, mutate: func(tl *tool.Tool[*Deps]) { tl.Deprecated = nil }},
		{name: "blank deprecation reason", src: `Deprecated: &tool.Deprecation{Reason: " \t", Successor: "x"}`, mutate: func(tl *tool.Tool[*Deps]) {
			tl.Deprecated = &tool.Deprecation{Reason: " \t", Successor: "x"}
		}, want: "Deprecated without a Reason (say why, and what to use instead)"},
		{name: "deprecation without a reason", src: `Deprecated: &tool.Deprecation{}`, mutate: func(tl *tool.Tool[*Deps]) { tl.Deprecated = &tool.Deprecation{} },
			want: "Deprecated without a Reason (say why, and what to use instead)"},
		{name: "deprecation reason of two lines", src: `Deprecated: &tool.Deprecation{Reason: "a\nb"}`, mutate: func(tl *tool.Tool[*Deps]) { tl.Deprecated = &tool.Deprecation{Reason: "a\nb"} },
			want: "Deprecated.Reason holds a line break or control character (write one line)"},
		{name: "successor is the tool itself", src: `Deprecated: &tool.Deprecation{Reason: "r", Successor: "get_item"}`, mutate: func(tl *tool.Tool[*Deps]) {
			tl.Deprecated = &tool.Deprecation{Reason: "r", Successor: "get_item"}
		}, want: "Deprecated.Successor names the tool itself"},
		{name: "successor not a tool name", src: `Deprecated: &tool.Deprecation{Reason: "r", Successor: "get item"}`, mutate: func(tl *tool.Tool[*Deps]) {
			tl.Deprecated = &tool.Deprecation{Reason: "r", Successor: "get item"}
		}, want: `Deprecated.Successor "get item" is not a valid tool name: Name contains ' ': only A-Z a-z 0-9 _ . - are allowed`},
		{name: "version with a space", src: `Version: "1 0"`, mutate: func(tl *tool.Tool[*Deps]) { tl.Version = "1 0" },
			want: `Version "1 0": at most 64 characters, no space or control character`},
		{name: "version of 65 characters", src: `Version: "11111111111111111111111111111111111111111111111111111111111111111"`, mutate: func(tl *tool.Tool[*Deps]) { tl.Version = strings.Repeat("1", 65) },
			want: `Version "11111111111111111111111111111111111111111111111111111111111111111": at most 64 characters, no space or control character`},
		{name: "upper-case tag", src: `Tags: []string{"Reads"}`, mutate: func(tl *tool.Tool[*Deps]) { tl.Tags = []string{"Reads"} },
			want: `tag "Reads": 1 to 64 of a-z 0-9 _ . -, starting with a letter or digit`},
		{name: "tag starting with a dash", src: `Tags: []string{"ok", "-x"}`, mutate: func(tl *tool.Tool[*Deps]) { tl.Tags = []string{"ok", "-x"} },
			want: `tag "-x": 1 to 64 of a-z 0-9 _ . -, starting with a letter or digit`},
		{name: "empty tag", src: `Tags: []string{""}`, mutate: func(tl *tool.Tool[*Deps]) { tl.Tags = []string{""} },
			want: `tag "": 1 to 64 of a-z 0-9 _ . -, starting with a letter or digit`},
		{name: "tag with a comma", src: `Tags: []string{"a,b"}`, mutate: func(tl *tool.Tool[*Deps]) { tl.Tags = []string{"a,b"} },
			want: `tag "a,b": 1 to 64 of a-z 0-9 _ . -, starting with a letter or digit`},
		{name: "duplicate tag", src: `Tags: []string{"a", "b", "a"}`, mutate: func(tl *tool.Tool[*Deps]) { tl.Tags = []string{"a", "b", "a"} }, want: `duplicate tag "a"`},
		{name: "icon without a source", src: `Icons: []mcp.Icon{{Source: "x"}, {MIMEType: "image/png"}}`, mutate: func(tl *tool.Tool[*Deps]) {
			tl.Icons = []mcp.Icon{{Source: "x"}, {MIMEType: "image/png"}}
		}, want: "Icons[1] has no Source"},

		// Result caching.
		{name: "cache on a read-only tool", src: `Cache: &tool.ResultCache{TTL: time.Second, StaleOnError: time.Minute}`, mutate: func(tl *tool.Tool[*Deps]) {
			tl.Cache = &tool.ResultCache{TTL: time.Second, StaleOnError: time.Minute}
		}},
		{name: "cache on an additive tool", src: `Behaviour: behaviour.Additive
Cache: &tool.ResultCache{TTL: time.Second}`, mutate: func(tl *tool.Tool[*Deps]) {
			tl.Behaviour, tl.Cache = behaviour.Additive, &tool.ResultCache{TTL: time.Second}
		}, want: "Cache on a tool of behaviour additive: only ReadOnly tools' results may be cached"},
		{name: "cache without a TTL", src: `Cache: &tool.ResultCache{}`, mutate: func(tl *tool.Tool[*Deps]) { tl.Cache = &tool.ResultCache{} },
			want: "Cache.TTL is 0s: give a positive duration"},
		{name: "cache with a negative stale time", src: `Cache: &tool.ResultCache{TTL: time.Second, StaleOnError: -1}`, mutate: func(tl *tool.Tool[*Deps]) {
			tl.Cache = &tool.ResultCache{TTL: time.Second, StaleOnError: -1}
		}, want: "Cache.StaleOnError is -1ns: give 0 (never) or a positive duration"},
	}
}

func TestCheck(t *testing.T) {
	tests := checkCases()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := mapped()
			if tt.local {
				tl = local()
			}
			tt.mutate(&tl)

			r := registry.New[*Deps]()
			err, site := checkAt(r, tl)
			if len(r.All()) != 0 {
				t.Fatalf("Check registered the tool")
			}
			prefix := fmt.Sprintf("registry: tool %q (registered at %s): ", tl.Name, site)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
			} else {
				if err == nil {
					t.Fatalf("Check = nil, want %q", tt.want)
				}
				checkMessage(t, err.Error(), prefix, tt.want)
			}

			// Register applies the same rules, with the same message.
			msg, rsite := registerAt(r, tl)
			if tt.want == "" {
				if msg != "" {
					t.Fatalf("Register panicked: %s", msg)
				}
				if _, ok := r.Lookup(tl.Name); !ok {
					t.Fatalf("Register did not register %q", tl.Name)
				}
				return
			}
			if msg == "" {
				t.Fatal("Register did not panic")
			}
			if want := strings.ReplaceAll(err.Error(), site, rsite); msg != want {
				t.Errorf("Register panicked with\n%s\nwant Check's message\n%s", msg, want)
			}
			if len(r.All()) != 0 {
				t.Errorf("a refused tool was registered")
			}
		})
	}
}

// checkMessage checks that msg is one or more lines, each starting with
// prefix, one of them with rule after it.
func checkMessage(t *testing.T, msg, prefix, rule string) {
	t.Helper()
	found := false
	for _, line := range strings.Split(msg, "\n") {
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			t.Errorf("message line %q does not start with %q", line, prefix)
			continue
		}
		found = found || strings.Contains(rest, rule)
	}
	if !found {
		t.Errorf("message %q does not contain the rule %q", msg, rule)
	}
}

// TestCheckMessage pins one message exactly.
func TestCheckMessage(t *testing.T) {
	tl := mapped()
	tl.Description = ""
	_, file, line, _ := runtime.Caller(0)
	err := registry.New[*Deps]().Check(tl)
	want := fmt.Sprintf(`registry: tool "get_item" (registered at %s:%d): missing Description`, file, line+1)
	if err == nil || err.Error() != want {
		t.Errorf("Check = %v, want %s", err, want)
	}
	if !filepath.IsAbs(file) || filepath.Base(file) != "registry_test.go" {
		t.Errorf("site file %q", file)
	}
}

// TestCheckJoins checks that Check reports every problem of a tool, one a
// line, in Register's form.
func TestCheckJoins(t *testing.T) {
	tl := tool.Tool[*Deps]{
		Name:             "bad tool",
		ServiceKey:       "catalog",
		VisibilityRoutes: []tool.Route{catalog("GET", "/a/../b"), tool.ServiceRoute("billing", "GET", "/x"), catalog("GET", "/ok"), catalog("GET", "/ok")},
	}
	err, site := checkAt(registry.New[*Deps](), tl)
	if err == nil {
		t.Fatal("Check = nil")
	}
	prefix := fmt.Sprintf(`registry: tool "bad tool" (registered at %s): `, site)
	want := []string{
		prefix + `Name contains ' ': only A-Z a-z 0-9 _ . - are allowed`,
		prefix + "missing Description",
		prefix + "Behaviour is unset: declare behaviour.ReadOnly, behaviour.Additive or behaviour.Destructive",
		prefix + "missing Handler (use tool.Handle or tool.HandleResult)",
		prefix + `invalid route GET /catalog/a/../b: URI must not contain a ".." segment`,
		prefix + `route GET /billing/x is outside service "catalog" (its URI must start with "/catalog/")`,
		prefix + "duplicate route GET /catalog/ok",
	}
	if diff := cmp.Diff(want, strings.Split(err.Error(), "\n")); diff != "" {
		t.Errorf("Check mismatch (-want +got):\n%s", diff)
	}
	// The joined error unwraps to one error a problem.
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != len(want) {
		t.Errorf("Check's error does not unwrap to %d errors", len(want))
	}
}

// TestCheckJoinsLocalProblems: a Local tool with both routes and a
// ServiceKey has both problems reported, not only the first.
func TestCheckJoinsLocalProblems(t *testing.T) {
	tl := local()
	tl.VisibilityRoutes = []tool.Route{catalog("GET", "/x")}
	tl.ServiceKey = "catalog"
	err, site := checkAt(registry.New[*Deps](), tl)
	prefix := fmt.Sprintf(`registry: tool %q (registered at %s): `, tl.Name, site)
	want := []string{
		prefix + "a Local tool must not declare VisibilityRoutes (it calls no upstream)",
		prefix + "a Local tool must not declare a ServiceKey (it calls no upstream)",
	}
	if err == nil {
		t.Fatal("Check = nil")
	}
	if diff := cmp.Diff(want, strings.Split(err.Error(), "\n")); diff != "" {
		t.Errorf("Check mismatch (-want +got):\n%s", diff)
	}
}

func TestDuplicate(t *testing.T) {
	r := registry.New[*Deps]()
	_, file, line, _ := runtime.Caller(0)
	r.Register(mapped())
	msg := panicMessage(func() { r.Register(mapped()) })
	first, second := fmt.Sprintf("%s:%d", file, line+1), fmt.Sprintf("%s:%d", file, line+2)
	want := fmt.Sprintf(`registry: tool "get_item" (registered at %s): duplicate tool name, first registered at %s`, second, first)
	if msg != want {
		t.Errorf("duplicate Register panicked with\n%s\nwant\n%s", msg, want)
	}
	// Check reports it too, naming the first site.
	err, site := checkAt(r, mapped())
	if err == nil || err.Error() != fmt.Sprintf(`registry: tool "get_item" (registered at %s): duplicate tool name, first registered at %s`, site, first) {
		t.Errorf("Check of a duplicate = %v", err)
	}
	// The first registration stays; a different tool of the same name
	// does not replace it (no "last writer wins").
	other := local()
	other.Name = "get_item"
	if panicMessage(func() { r.Register(other) }) == "" {
		t.Fatal("duplicate local tool registered")
	}
	if got, _ := r.Lookup("get_item"); got.Local || len(r.All()) != 1 {
		t.Errorf("the duplicate replaced the first tool: %+v", got)
	}
}

func TestRegisterAfterInstall(t *testing.T) {
	r := registry.New[*Deps]()
	r.Register(mapped())
	r.Install(mcp.NewServer(&mcp.Implementation{Name: "s"}, nil), &Deps{})

	msg, site := registerAt(r, local())
	want := fmt.Sprintf(`registry: tool "server_info" (registered at %s): Register after Install (register tools in init functions)`, site)
	if msg != want {
		t.Errorf("Register after Install panicked with\n%s\nwant\n%s", msg, want)
	}
	if localTools(r)["server_info"] || len(r.All()) != 1 {
		t.Error("Register after Install registered the tool")
	}
	err, site := checkAt(r, local())
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("(registered at %s): Register after Install", site)) {
		t.Errorf("Check after Install = %v", err)
	}
	// Register after Install also reports the tool's other problems.
	bad := local()
	bad.Description = ""
	msg, _ = registerAt(r, bad)
	if !strings.Contains(msg, "Register after Install") || !strings.Contains(msg, "missing Description") {
		t.Errorf("Register after Install of a bad tool panicked with %q", msg)
	}
}

func panicMessage(f func()) (msg string) {
	defer func() {
		if p := recover(); p != nil {
			msg = fmt.Sprint(p)
		}
	}()
	f()
	return ""
}

func TestDedent(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"one line", "Fetch one item.", "Fetch one item."},
		{"one line padded", "  \n\tFetch one item.  \n ", "Fetch one item."},
		{"raw string", `
			Fetch one catalog item by its id.

			Use it when the id is known.
		`, "Fetch one catalog item by its id.\n\nUse it when the id is known."},
		{"first line after the backtick", `Fetch one item.
			Use it when the id is known.
			Never guess ids.`, "Fetch one item.\nUse it when the id is known.\nNever guess ids."},
		{"nested indentation kept", `
			Arguments:
			  - id: the item
			    (required)
			Returns the item.`, "Arguments:\n  - id: the item\n    (required)\nReturns the item."},
		{"least indented line decides", "A\n      b\n    c\n        d", "A\n  b\nc\n    d"},
		{"mixed tabs and spaces", "A\n\t  b\n\t c", "A\n b\nc"},
		{"tab versus spaces share nothing", "A\n\tb\n    c", "A\n\tb\n    c"},
		{"blank lines with white space emptied", "A\n    b\n      \n\t\n    c", "A\nb\n\n\nc"},
		{"trailing white space trimmed", "A  \n    b\t\n    c   ", "A\nb\nc"},
		{"unindented body", "A\nb\nc", "A\nb\nc"},
		{"markdown list", "\n\t- one\n\t- two\n", "- one\n- two"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := local()
			tl.Description = tt.in
			r := registry.New[*Deps]()
			r.Register(tl)
			got, ok := r.Lookup(tl.Name)
			if !ok {
				t.Fatal("Lookup failed")
			}
			if diff := cmp.Diff(tt.want, got.Description); diff != "" {
				t.Errorf("Lookup description mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, r.All()[0].Description); diff != "" {
				t.Errorf("All description mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// tools is a registry's worth of tools of every kind.
func tools() []tool.Tool[*Deps] {
	billing := func(method, path string) tool.Route { return tool.ServiceRoute("billing", method, path) }
	return []tool.Tool[*Deps]{
		{
			Name:        "list_items",
			Title:       "List items",
			Description: "List catalog items.",
			ServiceKey:  "catalog",
			VisibilityRoutes: []tool.Route{
				catalog("GET", "/api/v1/items"),
				catalog("GET", "/api/v1/shops/{shop}/items"),
			},
			Behaviour: behaviour.ReadOnly,
			Handler:   tool.Handle(getItem),
		},
		{
			Name:             "delete_item",
			Description:      "Delete one item.",
			ServiceKey:       "catalog",
			VisibilityRoutes: []tool.Route{catalog("DELETE", "/api/v1/items/{id}")},
			Behaviour:        behaviour.Destructive,
			Idempotent:       true,
			Handler:          tool.Handle(getItem),
		},
		{
			Name:             "create_invoice",
			Title:            "Create an invoice",
			Description:      "Create an invoice.",
			ServiceKey:       "billing",
			VisibilityRoutes: []tool.Route{billing("POST", "/invoices")},
			Behaviour:        behaviour.Additive,
			OpenWorld:        true,
			Handler:          tool.Handle(getItem),
		},
		{
			Name:        "server_info",
			Description: "Describe this server.",
			Local:       true,
			Behaviour:   behaviour.ReadOnly,
			Handler:     tool.Handle(getItem),
		},
		{
			Name:        "add_note",
			Description: "Keep a note in the server's memory.",
			Local:       true,
			Behaviour:   behaviour.Additive,
			Handler:     tool.Handle(getItem),
		},
	}
}

func newRegistry(t testing.TB) *registry.Registry[*Deps] {
	t.Helper()
	r := registry.New[*Deps]()
	for _, tl := range tools() {
		r.Register(tl)
	}
	return r
}

func TestViews(t *testing.T) {
	r := newRegistry(t)

	wantNames := []string{"add_note", "create_invoice", "delete_item", "list_items", "server_info"}
	var all []string
	for _, tl := range r.All() {
		all = append(all, tl.Name)
	}
	if diff := cmp.Diff(wantNames, all); diff != "" {
		t.Errorf("All is not sorted by name (-want +got):\n%s", diff)
	}
	var calls []string
	for _, c := range r.Calls() {
		calls = append(calls, c.Tool)
	}
	if diff := cmp.Diff(wantNames, calls); diff != "" {
		t.Errorf("Calls is not sorted by name (-want +got):\n%s", diff)
	}

	got, ok := r.Lookup("list_items")
	if !ok || got.Title != "List items" || got.ServiceKey != "catalog" || len(got.VisibilityRoutes) != 2 || got.Handler.Err() != nil {
		t.Errorf("Lookup(list_items) = %+v, %v", got, ok)
	}
	if got, ok := r.Lookup("nope"); ok || got.Name != "" {
		t.Errorf("Lookup(nope) = %+v, %v", got, ok)
	}

	wantLocal := map[string]bool{"server_info": true, "add_note": true}
	if diff := cmp.Diff(wantLocal, localTools(r)); diff != "" {
		t.Errorf("local tools of Calls mismatch (-want +got):\n%s", diff)
	}

	wantRoutes := map[string][]tool.Route{
		"create_invoice": {{URI: "/billing/invoices", Method: "POST"}},
		"delete_item":    {{URI: "/catalog/api/v1/items/{id}", Method: "DELETE"}},
		"list_items":     {{URI: "/catalog/api/v1/items", Method: "GET"}, {URI: "/catalog/api/v1/shops/{shop}/items", Method: "GET"}},
	}
	if diff := cmp.Diff(wantRoutes, routesOf(r)); diff != "" {
		t.Errorf("routes of Calls mismatch (-want +got):\n%s", diff)
	}

	if diff := cmp.Diff([]string{"billing", "catalog"}, r.ServiceKeys()); diff != "" {
		t.Errorf("ServiceKeys mismatch (-want +got):\n%s", diff)
	}
	if keys := registry.New[*Deps]().ServiceKeys(); len(keys) != 0 {
		t.Errorf("ServiceKeys of an empty registry = %q", keys)
	}
	onlyLocal := registry.New[*Deps]()
	onlyLocal.Register(local())
	if keys := onlyLocal.ServiceKeys(); len(keys) != 0 {
		t.Errorf("ServiceKeys of local tools = %q", keys)
	}
}

// TestViewsAreCopies checks that nothing a view returns, nor the tool
// Register was given, can change the registry.
func TestViewsAreCopies(t *testing.T) {
	r := registry.New[*Deps]()
	tl := mapped()
	r.Register(tl)
	want := routesOf(r)

	tl.VisibilityRoutes[0].URI = "/catalog/admin" // the caller's slice
	got, _ := r.Lookup("get_item")
	got.VisibilityRoutes[0].URI = "/catalog/lookup"
	r.All()[0].VisibilityRoutes[0].URI = "/catalog/all"
	tbl := r.Table()
	tbl.Tools[0].Routes[0].URI = "/catalog/table"

	if diff := cmp.Diff(want, routesOf(r)); diff != "" {
		t.Errorf("routes changed (-want +got):\n%s", diff)
	}
	if got, _ := r.Lookup("get_item"); got.VisibilityRoutes[0].URI != "/catalog/api/v1/items/{id}" {
		t.Errorf("Lookup route changed to %q", got.VisibilityRoutes[0].URI)
	}
}

// localTools returns the set of r's local tools, read from its Calls.
func localTools[C any](r *registry.Registry[C]) map[string]bool {
	m := map[string]bool{}
	for _, c := range r.Calls() {
		if c.Local {
			m[c.Tool] = true
		}
	}
	return m
}

// routesOf returns the routes of r's mapped tools, read from its Calls.
func routesOf[C any](r *registry.Registry[C]) map[string][]tool.Route {
	m := map[string][]tool.Route{}
	for _, c := range r.Calls() {
		if !c.Local {
			m[c.Tool] = slices.Clone(c.Routes)
		}
	}
	return m
}

func TestAnnotationsFor(t *testing.T) {
	r := newRegistry(t)
	if a := r.AnnotationsFor("nope"); a != nil {
		t.Errorf("AnnotationsFor(nope) = %+v, want nil", a)
	}
	tests := []struct {
		name string
		want *mcp.ToolAnnotations
	}{
		{"list_items", behaviour.ReadOnly.Annotations("List items", false, false)},
		{"delete_item", behaviour.Destructive.Annotations("", true, false)},
		{"create_invoice", behaviour.Additive.Annotations("Create an invoice", false, true)},
		{"server_info", behaviour.ReadOnly.Annotations("", false, false)},
		{"add_note", behaviour.Additive.Annotations("", false, false)},
	}
	for _, tt := range tests {
		got := r.AnnotationsFor(tt.name)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("AnnotationsFor(%q) mismatch (-want +got):\n%s", tt.name, diff)
		}
	}

	// A copy: changing it changes nothing in the registry.
	a := r.AnnotationsFor("list_items")
	a.Title = "changed"
	a.ReadOnlyHint = false
	*a.DestructiveHint = true
	*a.OpenWorldHint = true
	if diff := cmp.Diff(behaviour.ReadOnly.Annotations("List items", false, false), r.AnnotationsFor("list_items")); diff != "" {
		t.Errorf("mutating a copy changed the registry (-want +got):\n%s", diff)
	}
}

func TestTable(t *testing.T) {
	r := newRegistry(t)
	data, err := jsonIndent(r.Table())
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "table.golden.json"), data)

	// An empty registry's table is an empty list, not null.
	data, err = jsonIndent(registry.New[*Deps]().Table())
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != "{\n  \"tools\": []\n}\n" {
		t.Errorf("empty table = %s", data)
	}
}
