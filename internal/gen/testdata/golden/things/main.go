// Command things-mcp serves the operations of Things API as MCP tools, one per
// operation, on toolroute's service kit: run it with -upstream things=URL
// -policy policy.json -tokens tokens.json (see README.md).
package main

import (
	"go.uber.org/fx"

	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/service"

	"example.com/things-mcp/tools"
)

func main() {
	service.Main("things-mcp", "0.1.0",
		server.Tools(tools.Registry),
		fx.Provide(tools.NewDeps),
	)
}
