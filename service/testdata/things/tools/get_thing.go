package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/tool"
)

var getRoute = tool.ServiceRoute("things", http.MethodGet, "/api/v1/things/{id}")

func init() {
	Registry.Register(tool.Tool[*Deps]{
		Name:             "get_thing",
		Description:      "Fetch one thing by its id.",
		ServiceKey:       "things",
		VisibilityRoutes: []tool.Route{getRoute},
		Behaviour:        behaviour.ReadOnly,
		Handler:          tool.Handle(getThing),
	})
}

type getThingArgs struct {
	ID string `json:"id" jsonschema:"minLength=1,description=the thing's id"`
}

type thing struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

func getThing(ctx context.Context, d *Deps, _ *mcp.CallToolRequest, in getThingArgs) (thing, error) {
	r, err := getRoute.Bind(map[string]string{"id": in.ID}) // one escaped path segment
	if err != nil {
		return thing{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.BaseURL+r.ServicePath(), nil)
	if err != nil {
		return thing{}, err
	}
	resp, err := d.HTTP.Do(req)
	if err != nil {
		return thing{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return thing{}, fmt.Errorf("things API: HTTP %d", resp.StatusCode)
	}
	var t thing
	return t, json.NewDecoder(resp.Body).Decode(&t)
}
