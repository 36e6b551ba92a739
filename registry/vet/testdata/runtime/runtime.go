// Package runtime declares tools from values built at run time: the
// analyzer must say nothing of them, whatever the registry says when
// they run.
package runtime

import (
	"context"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
	"github.com/toolroute/toolroute/upstream"

	"vettest/svc"
)

type Deps struct{}

var Registry = registry.New[*Deps]()

type args struct {
	ID string `json:"id"`
}

func get(context.Context, *Deps, *mcp.CallToolRequest, args) (args, error) { return args{}, nil }

var (
	name     = os.Getenv("TOOL_NAME")
	desc     = os.Getenv("TOOL_DESCRIPTION")
	key      = os.Getenv("TOOL_SERVICE")
	method   = os.Getenv("TOOL_METHOD")
	local    = os.Getenv("TOOL_LOCAL") != ""
	behav    behaviour.Behaviour
	handler  = tool.Handle(get)
	routes   = svc.Routes()
	variable = tool.ServiceRoute("svc", "GET", "/items")
)

func init() { variable = tool.Route{URI: os.Getenv("URI"), Method: "GET"} }

func routeOf(m, p string) tool.Route { return tool.ServiceRoute(key, m, p) }

func init() {
	Registry.Register(tool.Tool[*Deps]{
		Name:             name,
		Description:      desc,
		ServiceKey:       key,
		VisibilityRoutes: routes,
		Local:            local,
		Behaviour:        behav,
		Handler:          handler,
	})
	Registry.Register(tool.Tool[*Deps]{
		Name:        "runtime_routes",
		Description: "d",
		ServiceKey:  "svc",
		VisibilityRoutes: []tool.Route{
			tool.ServiceRoute("svc", method, "/items"),
			routeOf("GET", "/x"),
			svc.Moved,
			svc.Patched,
			svc.Route(method, "/x"),
			svc.Runtime("/x"),
			svc.Item(name),
			svc.Dynamic,
			variable,
			{URI: "/svc/" + name, Method: "GET"},
		},
		Behaviour: behaviour.ReadOnly,
		Handler:   tool.Handle(get),
	})
	// A name repeated outside init, or on a registry that is not a
	// package-level variable, is the registry's to refuse.
	r := registry.New[*Deps]()
	for range 2 {
		r.Register(tool.Tool[*Deps]{Name: "loop", Description: "d", Local: true, Behaviour: behaviour.ReadOnly, Handler: tool.Handle(get)})
	}
	// Registrations that may not both run.
	if os.Getenv("A") != "" {
		Registry.Register(tool.Tool[*Deps]{Name: "either", Description: "d", Local: true, Behaviour: behaviour.ReadOnly, Handler: tool.Handle(get)})
	} else {
		Registry.Register(tool.Tool[*Deps]{Name: "either", Description: "d", Local: true, Behaviour: behaviour.ReadOnly, Handler: tool.Handle(get)})
	}
	// A generic In or Out type is reflect's to spell.
	Registry.Register(tool.Tool[*Deps]{
		Name:        "generic",
		Description: "d",
		Local:       true,
		Behaviour:   behaviour.ReadOnly,
		Handler: tool.Handle(func(context.Context, *Deps, *mcp.CallToolRequest, args) (box[args], error) {
			return box[args]{}, nil
		}),
	})
}

type box[T any] struct{ V T }

var (
	mode   = tool.TaskMode(len(os.Args))
	after  = time.Duration(len(os.Args)) * -time.Second
	dep    = &tool.Deprecation{}
	reason = os.Getenv("REASON")
	tags   = []string{"A", "A"}
	icon   = mcp.Icon{}
	ttl    = time.Duration(len(os.Args) - 1)
	cache  = &tool.ResultCache{}
)

func tagsOf(s ...string) []string { return s }

// Task, lifecycle and caching values known only at run time (which the
// registry may well refuse) are not the analyzer's to judge.
func init() {
	Registry.Register(tool.Tool[*Deps]{
		Name:        "runtime_lifecycle",
		Description: "d",
		Local:       true,
		Behaviour:   behav,
		Handler:     tool.Handle(get),
		Task:        mode,
		TaskAfter:   after,
		Deprecated:  dep,
		Version:     os.Getenv("VERSION"),
		Tags:        tags,
		Icons:       []mcp.Icon{icon},
		Cache:       cache,
	})
	Registry.Register(tool.Tool[*Deps]{
		Name:        name,
		Description: "d",
		Local:       true,
		Behaviour:   behav,
		Handler:     tool.Handle(get),
		TaskAfter:   time.Second * time.Duration(len(os.Args)),
		Deprecated:  &tool.Deprecation{Reason: reason, Successor: name},
		Tags:        tagsOf("A"),
		Icons:       []mcp.Icon{{Source: reason}},
		Cache:       &tool.ResultCache{TTL: ttl, StaleOnError: -ttl},
	})
	Registry.Register(tool.Tool[*Deps]{
		Name:        "runtime_tags",
		Description: "d",
		Local:       true,
		Behaviour:   behaviour.ReadOnly,
		Handler:     tool.Handle(get),
		Tags:        []string{"ok", reason},
	})
}

func later() {
	Registry.Register(tool.Tool[*Deps]{Name: "later", Description: "d", Local: true, Behaviour: behaviour.ReadOnly, Handler: tool.Handle(get)})
	Registry.Register(tool.Tool[*Deps]{Name: "later", Description: "d", Local: true, Behaviour: behaviour.ReadOnly, Handler: tool.Handle(get)})
}

var _ = later

// FwdDeps is the container of handler-free tools.
type FwdDeps struct{ upstream.Endpoints }

var Forwarding = registry.New[*FwdDeps]()

func init() {
	// The forwarded route is built at run time: not known.
	Forwarding.Register(tool.Tool[*FwdDeps]{
		Name:             "forward",
		Description:      "d",
		ServiceKey:       "svc",
		VisibilityRoutes: []tool.Route{svc.List},
		Behaviour:        behaviour.ReadOnly,
		Handler:          upstream.Forward[*FwdDeps, args, args](svc.Runtime("/items/{id}")),
	})
	// The declared routes are: not known.
	Forwarding.Register(tool.Tool[*FwdDeps]{
		Name:             "forward2",
		Description:      "d",
		ServiceKey:       "svc",
		VisibilityRoutes: routes,
		Behaviour:        behaviour.ReadOnly,
		Handler:          upstream.Forward[*FwdDeps, args, args](svc.Get),
	})
}
