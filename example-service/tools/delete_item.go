package tools

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz/permission"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/example-service/catalog"
	"github.com/toolroute/toolroute/tool"
	"github.com/toolroute/toolroute/upstream"
)

func init() {
	Registry.Register(tool.Tool[*Deps]{
		Name:  "delete_item",
		Title: "Delete a catalog item",
		Description: `
			Delete a catalog item by its id. Deleting an item that no longer
			exists answers "not found" and changes nothing. The server may ask
			you to confirm first.`,
		ServiceKey:       catalog.ServiceKey,
		VisibilityRoutes: []tool.Route{catalog.DeleteRoute},
		Behaviour:        behaviour.Destructive,
		Tags:             []string{"catalog", "writes"},
		Idempotent:       true,
		Handler:          tool.Handle(deleteItem),
	})
}

type deleteItemArgs struct {
	ID string `json:"id" in:"path" jsonschema:"minLength=1,maxLength=200,description=the id of the item to delete"`
}

type deleted struct {
	ID      string `json:"id" jsonschema:"description=the deleted item's id"`
	Deleted bool   `json:"deleted" jsonschema:"description=always true: failures are errors"`
}

// deleteItem asks for permission first (with -confirm-destructive),
// then sends the one request: a handler with logic, on the machinery of
// the handler-free tools.
func deleteItem(ctx context.Context, d *Deps, req *mcp.CallToolRequest, in deleteItemArgs) (deleted, error) {
	if d.Confirm != nil {
		// Before any side effect: with a question, the handler runs again
		// from the top with the answer.
		_, err := d.Confirm.Check(ctx, req, permission.Request{
			Subjects:     []string{"item:" + in.ID},
			Capabilities: []string{"delete"},
			Reason:       fmt.Sprintf("Delete item %s?", in.ID),
			NoRemember:   true,
		})
		if err != nil {
			return deleted{}, err
		}
	}
	// 204 No Content: nothing to decode.
	if _, err := upstream.Call[struct{}](ctx, d, catalog.DeleteRoute, in); err != nil {
		return deleted{}, err
	}
	return deleted{ID: in.ID, Deleted: true}, nil
}
