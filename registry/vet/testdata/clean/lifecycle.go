package clean

import (
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/tool"
)

const readsTag = "reads"

// A tool with every task, lifecycle and caching field set validly, and
// one that sets them to their zero values.
func init() {
	Registry.Register(tool.Tool[*Deps]{
		Name:        "get_item_v1",
		Description: "d",
		Local:       true,
		Behaviour:   behaviour.ReadOnly,
		Handler:     tool.Handle(get),
		Task:        tool.TaskAllowed,
		TaskAfter:   1500 * time.Millisecond,
		Deprecated:  &tool.Deprecation{Reason: "returns no prices", Successor: "get_item", Sunset: time.Date(2027, 6, 30, 0, 0, 0, 0, time.UTC)},
		Version:     "1.4.0",
		Tags:        []string{"catalog", readsTag, "v1.x"},
		Icons:       []mcp.Icon{{Source: "https://example.com/item.svg", MIMEType: "image/svg+xml"}, mcp.Icon{Source: "data:image/png;base64,AA=="}},
		Cache:       &tool.ResultCache{TTL: 30 * time.Second, StaleOnError: time.Minute},
	})
	Registry.Register(tool.Tool[*Deps]{
		Name:        "zero_lifecycle",
		Description: "d",
		Local:       true,
		Behaviour:   behaviour.Destructive,
		Handler:     tool.Handle(get),
		Task:        tool.TaskNever,
		TaskAfter:   0,
		Deprecated:  nil,
		Version:     "",
		Tags:        nil,
		Icons:       []mcp.Icon{},
		Cache:       nil,
	})
}
