package tools

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/example-service/catalog"
	"github.com/toolroute/toolroute/tool"
	"github.com/toolroute/toolroute/upstream"
)

func init() {
	Registry.Register(tool.Tool[*Deps]{
		Name:  "audit_catalog",
		Title: "Audit the catalog",
		Description: `
			Visit every catalog item, one by one, and report the items out of
			stock, the items that vanished while the audit ran, and the total
			quantity in stock. Reports progress after each item and can be
			cancelled. delay_ms waits between two visits (0 to 1000 ms), to watch
			progress or try cancellation. A client that declares the MCP Tasks
			extension gets a task for an audit still running after half a
			second (delay_ms of 1000 always takes longer).`,
		ServiceKey:       catalog.ServiceKey,
		VisibilityRoutes: []tool.Route{catalog.ListRoute, catalog.GetRoute},
		Behaviour:        behaviour.ReadOnly,
		Task:             tool.TaskAllowed,
		TaskAfter:        500 * time.Millisecond,
		Tags:             []string{"catalog", "reads"},
		Handler:          tool.Handle(auditCatalog),
	})
}

type auditArgs struct {
	DelayMS int `json:"delay_ms,omitempty" jsonschema:"minimum=0,maximum=1000,description=milliseconds to wait between two items (default 0)"`
}

type auditReport struct {
	Checked       int      `json:"checked" jsonschema:"description=how many items were visited"`
	OutOfStock    []string `json:"outOfStock" jsonschema:"description=ids of the items with quantity 0"`
	Vanished      []string `json:"vanished" jsonschema:"description=ids of the items listed but gone when visited"`
	TotalQuantity int      `json:"totalQuantity" jsonschema:"description=the sum of the quantities of the items still there"`
}

// auditCatalog lists the items, then fetches each: a handler with logic,
// whose upstream requests are typed calls on the routes it declares.
func auditCatalog(ctx context.Context, d *Deps, req *mcp.CallToolRequest, in auditArgs) (auditReport, error) {
	rep := auditReport{OutOfStock: []string{}, Vanished: []string{}}
	list, err := upstream.Call[catalog.ItemList](ctx, d, catalog.ListRoute, nil)
	if err != nil {
		return rep, err
	}
	items := list.Items
	delay := time.Duration(in.DelayMS) * time.Millisecond
	for i, listed := range items {
		if i > 0 && delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return auditReport{}, ctx.Err()
			case <-t.C:
			}
		}
		if err := ctx.Err(); err != nil {
			return auditReport{}, err
		}
		it, err := upstream.Call[catalog.Item](ctx, d, catalog.GetRoute, getItemArgs{ID: listed.ID})
		var ue *upstream.Error
		switch {
		case errors.As(err, &ue) && ue.Status == http.StatusNotFound && ue.Code == catalog.CodeNotFound:
			rep.Vanished = append(rep.Vanished, listed.ID)
		case err != nil:
			return auditReport{}, err
		case it.Quantity == 0:
			rep.OutOfStock = append(rep.OutOfStock, it.ID)
		default:
			rep.TotalQuantity += it.Quantity
		}
		rep.Checked++
		// A failure to report progress does not fail the audit.
		_ = tool.Progress(ctx, req, float64(i+1), float64(len(items)), fmt.Sprintf("checked %s", listed.ID))
	}
	return rep, nil
}
