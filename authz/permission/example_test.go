package permission_test

import (
	"context"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/permission"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
)

type Deps struct {
	Perms *permission.Checker
	Items map[string]string
}

type deleteItemArgs struct {
	ID string `json:"id" jsonschema:"minLength=1"`
}

type deleteItemResult struct {
	Deleted string `json:"deleted"`
}

// deleteItem asks before it deletes. Everything before Check may run
// twice (once to ask, once with the answer); nothing with a side effect
// may come before it.
func deleteItem(ctx context.Context, d *Deps, req *mcp.CallToolRequest, in deleteItemArgs) (deleteItemResult, error) {
	if _, err := d.Perms.Check(ctx, req, permission.Request{
		Subjects:     []string{"item:" + in.ID},
		Capabilities: []string{"delete"},
		Reason:       fmt.Sprintf("Delete item %s?", in.ID),
		NoRemember:   true,
	}); err != nil {
		return deleteItemResult{}, err
	}
	delete(d.Items, in.ID)
	return deleteItemResult{Deleted: in.ID}, nil
}

func Example() {
	ctx := context.Background()
	reg := registry.New[*Deps]()
	reg.Register(tool.Tool[*Deps]{
		Name:        "delete_item",
		Description: "Delete one catalog item.",
		Local:       true,
		Behaviour:   behaviour.Destructive,
		Handler:     tool.Handle(deleteItem),
	})
	deps := &Deps{
		Perms: permission.New(permission.Options{
			Rules: []permission.Rule{{Effect: authz.Deny, Subject: "item:protected"}},
		}),
		Items: map[string]string{"42": "a chair", "protected": "the crown jewels"},
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "catalog", Version: "v1"}, nil)
	reg.Install(server, deps)

	// A client whose user answers "allow once".
	client := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			fmt.Printf("asked: %q\n", req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": permission.AllowOnce}}, nil
		},
	})
	st, ct := mcp.NewInMemoryTransports()
	if _, err := server.Connect(ctx, st, nil); err != nil {
		log.Fatal(err)
	}
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	for _, id := range []string{"42", "protected"} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "delete_item", Arguments: map[string]any{"id": id}})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("isError=%v %s\n", res.IsError, res.Content[0].(*mcp.TextContent).Text)
	}
	fmt.Println("left:", deps.Items)
	// Output:
	// asked: "Delete item 42?\n\nTool \"delete_item\" asks for permission to delete on item:42."
	// isError=false {"deleted":"42"}
	// isError=true permission denied: delete on item:protected
	// left: map[protected:the crown jewels]
}
