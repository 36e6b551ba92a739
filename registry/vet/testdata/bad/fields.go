package bad

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/tool"

	"vettest/svc"
)

func init() {
	Registry.Register(tool.Tool[*Deps]{ // want `empty Name`
		Description:      "d",
		ServiceKey:       svc.Key,
		VisibilityRoutes: []tool.Route{svc.Get},
		Behaviour:        behaviour.ReadOnly,
		Handler:          tool.Handle(get),
	})
	Registry.Register(tool.Tool[*Deps]{
		Name:             "get item", // want `Name contains ' ': only A-Z a-z 0-9 _ \. - are allowed`
		Description:      "d",
		ServiceKey:       svc.Key,
		VisibilityRoutes: []tool.Route{svc.Get},
		Behaviour:        behaviour.ReadOnly,
		Handler:          tool.Handle(get),
	})
	Registry.Register(tool.Tool[*Deps]{
		Name:             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", // want `Name is 129 bytes long, at most 128 allowed`
		Description:      "d",
		ServiceKey:       svc.Key,
		VisibilityRoutes: []tool.Route{svc.Get},
		Behaviour:        behaviour.ReadOnly,
		Handler:          tool.Handle(get),
	})
	Registry.Register(tool.Tool[*Deps]{ // want `missing Description`
		Name:             "no_description",
		ServiceKey:       svc.Key,
		VisibilityRoutes: []tool.Route{svc.Get},
		Behaviour:        behaviour.ReadOnly,
		Handler:          tool.Handle(get),
	})
	Registry.Register(tool.Tool[*Deps]{
		Name: "blank_description",
		Description: // want `missing Description`
		` 
		`,
		ServiceKey:       svc.Key,
		VisibilityRoutes: []tool.Route{svc.Get},
		Behaviour:        behaviour.ReadOnly,
		Handler:          tool.Handle(get),
	})
	Registry.Register(tool.Tool[*Deps]{
		Name:             "blank_raw_description",
		Description:      `  	 `, // want `missing Description`
		ServiceKey:       svc.Key,
		VisibilityRoutes: []tool.Route{svc.Get},
		Behaviour:        behaviour.ReadOnly,
		Handler:          tool.Handle(get),
	})
	Registry.Register(tool.Tool[*Deps]{ // want `Behaviour is unset: declare behaviour.ReadOnly, behaviour.Additive or behaviour.Destructive`
		Name:             "no_behaviour",
		Description:      "d",
		ServiceKey:       svc.Key,
		VisibilityRoutes: []tool.Route{svc.Get},
		Handler:          tool.Handle(get),
	})
	Registry.Register(tool.Tool[*Deps]{
		Name:             "unknown_behaviour",
		Description:      "d",
		ServiceKey:       svc.Key,
		VisibilityRoutes: []tool.Route{svc.Get},
		Behaviour:        7, // want `Behaviour is Behaviour\(7\)`
		Handler:          tool.Handle(get),
	})
	Registry.Register(tool.Tool[*Deps]{ // want `missing Handler \(use tool.Handle or tool.HandleResult\)`
		Name:             "no_handler",
		Description:      "d",
		ServiceKey:       svc.Key,
		VisibilityRoutes: []tool.Route{svc.Get},
		Behaviour:        behaviour.ReadOnly,
	})
	Registry.Register(tool.Tool[*Deps]{
		Name:             "nil_handler",
		Description:      "d",
		ServiceKey:       svc.Key,
		VisibilityRoutes: []tool.Route{svc.Get},
		Behaviour:        behaviour.ReadOnly,
		Handler:          tool.Handle[*Deps, args, Item](nil), // want `missing Handler`
	})
	Registry.Register(tool.Tool[*Deps]{
		Name:             "list_in",
		Description:      "d",
		ServiceKey:       svc.Key,
		VisibilityRoutes: []tool.Route{svc.Get},
		Behaviour:        behaviour.ReadOnly,
		Handler: tool.Handle(func(context.Context, *Deps, *mcp.CallToolRequest, []string) (Item, error) { // want `input type \[\]string reflects to an array schema, want an object \(structs and maps are objects; wrap a list in a struct\)`
			return Item{}, nil
		}),
	})
	Registry.Register(tool.Tool[*Deps]{
		Name:             "interface_in",
		Description:      "d",
		ServiceKey:       svc.Key,
		VisibilityRoutes: []tool.Route{svc.Get},
		Behaviour:        behaviour.ReadOnly,
		Handler: tool.Handle(func(context.Context, *Deps, *mcp.CallToolRequest, any) (Item, error) { // want `input type: interface \{\} is an interface: its schema is unknown`
			return Item{}, nil
		}),
	})
	Registry.Register(tool.Tool[*Deps]{
		Name:             "string_out",
		Description:      "d",
		ServiceKey:       svc.Key,
		VisibilityRoutes: []tool.Route{svc.Get},
		Behaviour:        behaviour.ReadOnly,
		Handler: tool.Handle(func(context.Context, *Deps, *mcp.CallToolRequest, args) (*named, error) { // want `output type \*bad.named reflects to a string schema`
			return nil, nil
		}),
	})
	Registry.Register(tool.Tool[*Deps]{
		Name:             "int_result_in",
		Description:      "d",
		ServiceKey:       svc.Key,
		VisibilityRoutes: []tool.Route{svc.Get},
		Behaviour:        behaviour.ReadOnly,
		Handler: tool.HandleResult(func(context.Context, *Deps, *mcp.CallToolRequest, int) (*mcp.CallToolResult, error) { // want `input type int reflects to an integer schema`
			return nil, nil
		}),
	})
	_ = http.MethodGet
}
