package registry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
)

// Catalog is the example service's dependency container.
type Catalog struct {
	Names map[string]string
}

type itemArgs struct {
	ID string `json:"id" jsonschema:"minLength=1,description=the item's id"`
}

type itemResult struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

func lookupItem(ctx context.Context, c *Catalog, req *mcp.CallToolRequest, in itemArgs) (itemResult, error) {
	name, ok := c.Names[in.ID]
	if !ok {
		return itemResult{}, fmt.Errorf("no item %q", in.ID)
	}
	return itemResult{ID: in.ID, Name: name}, nil
}

func Example() {
	// In a service, the registry is a package-level variable and each
	// tool registers itself from an init function of its own file.
	reg := registry.New[*Catalog]()
	reg.Register(tool.Tool[*Catalog]{
		Name:  "get_item",
		Title: "Get item",
		Description: `
			Fetch one catalog item by its id.
			Use it when the id is known.
		`,
		ServiceKey:       "catalog",
		VisibilityRoutes: []tool.Route{tool.ServiceRoute("catalog", http.MethodGet, "/api/v1/items/{id}")},
		Behaviour:        behaviour.ReadOnly,
		Handler:          tool.Handle(lookupItem),
	})

	server := mcp.NewServer(&mcp.Implementation{Name: "catalog-mcp", Version: "v1.0.0"}, nil)
	reg.Install(server, &Catalog{Names: map[string]string{"42": "towel"}})

	ctx := context.Background()
	serverTransport, clientTransport := mcp.NewInMemoryTransports()
	serverSession, err := server.Connect(ctx, serverTransport, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer serverSession.Wait()
	client := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v1.0.0"}, nil)
	session, err := client.Connect(ctx, clientTransport, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	list, err := session.ListTools(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range list.Tools {
		fmt.Printf("%s (%s), read-only: %v, destructive: %v\n%s\n", t.Name, t.Title, t.Annotations.ReadOnlyHint, *t.Annotations.DestructiveHint, t.Description)
	}

	for _, id := range []string{"42", "7", ""} {
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "get_item", Arguments: map[string]any{"id": id}})
		if err != nil {
			log.Fatal(err)
		}
		// (Only the first clause of the SDK's validation messages.)
		msg, _, _ := strings.Cut(res.Content[0].(*mcp.TextContent).Text, ": ")
		fmt.Printf("get_item(%q): isError=%v %s\n", id, res.IsError, msg)
	}
	// Output:
	// get_item (Get item), read-only: true, destructive: false
	// Fetch one catalog item by its id.
	// Use it when the id is known.
	// get_item("42"): isError=false {"id":"42","name":"towel"}
	// get_item("7"): isError=true no item "7"
	// get_item(""): isError=true validating "arguments"
}

func ExampleRegistry_Install_panic() {
	reg := registry.New[*Catalog]()
	reg.Register(tool.Tool[*Catalog]{
		Name:        "fragile",
		Description: "A tool with a bug.",
		Local:       true,
		Behaviour:   behaviour.ReadOnly,
		Handler: tool.Handle(func(ctx context.Context, c *Catalog, req *mcp.CallToolRequest, in itemArgs) (itemResult, error) {
			return itemResult{Name: c.Names[in.ID][:3]}, nil // panics on short names
		}),
	})
	// On a bare server the panic and its stack go to slog.Default (under
	// server.New, to the server's logger); the client sees a generic
	// error.

	server := mcp.NewServer(&mcp.Implementation{Name: "catalog-mcp", Version: "v1.0.0"}, nil)
	reg.Install(server, &Catalog{Names: map[string]string{"1": "towel", "2": "ox"}})

	ctx := context.Background()
	serverTransport, clientTransport := mcp.NewInMemoryTransports()
	serverSession, err := server.Connect(ctx, serverTransport, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer serverSession.Wait()
	session, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v1.0.0"}, nil).Connect(ctx, clientTransport, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	for _, id := range []string{"2", "1"} {
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "fragile", Arguments: map[string]any{"id": id}})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("isError=%v %s\n", res.IsError, res.Content[0].(*mcp.TextContent).Text)
	}
	// Output:
	// isError=true internal error: the tool failed unexpectedly; the failure was logged
	// isError=false {"id":"","name":"tow"}
}

func ExampleRegistry_Table() {
	reg := registry.New[*Catalog]()
	reg.Register(tool.Tool[*Catalog]{
		Name:             "get_item",
		Description:      "Fetch one catalog item by its id.",
		ServiceKey:       "catalog",
		VisibilityRoutes: []tool.Route{tool.ServiceRoute("catalog", http.MethodGet, "/api/v1/items/{id}")},
		Behaviour:        behaviour.ReadOnly,
		Handler:          tool.Handle(lookupItem),
	})
	reg.Register(tool.Tool[*Catalog]{
		Name:        "server_time",
		Description: "Tell the server's time.",
		Local:       true,
		Behaviour:   behaviour.ReadOnly,
		Handler:     tool.Handle(lookupItem),
	})

	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(reg.Table()); err != nil {
		log.Fatal(err)
	}
	// Output:
	// {
	//   "tools": [
	//     {
	//       "name": "get_item",
	//       "behaviour": "read-only",
	//       "serviceKey": "catalog",
	//       "local": false,
	//       "routes": [
	//         {
	//           "uri": "/catalog/api/v1/items/{id}",
	//           "method": "GET"
	//         }
	//       ]
	//     },
	//     {
	//       "name": "server_time",
	//       "behaviour": "read-only",
	//       "local": true,
	//       "routes": []
	//     }
	//   ]
	// }
}

func ExampleRegistry_Check() {
	reg := registry.New[*Catalog]()
	err := reg.Check(tool.Tool[*Catalog]{
		Name:             "get_item",
		Description:      "Fetch one catalog item by its id.",
		ServiceKey:       "catalog",
		VisibilityRoutes: []tool.Route{tool.ServiceRoute("billing", http.MethodGet, "/api/v1/items/{id}")},
		Handler:          tool.Handle(lookupItem),
	})
	// Print the rules without the registration site (FILE:LINE).
	for line := range strings.SplitSeq(err.Error(), "\n") {
		_, rule, _ := strings.Cut(line, "): ")
		fmt.Println(rule)
	}
	// Output:
	// Behaviour is unset: declare behaviour.ReadOnly, behaviour.Additive or behaviour.Destructive
	// route GET /billing/api/v1/items/{id} is outside service "catalog" (its URI must start with "/catalog/")
}
