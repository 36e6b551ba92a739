// Command petstore-mcp serves the operations of Swagger Petstore as MCP tools,
// one per operation, on toolroute's service kit: run it with -upstream
// petstore=URL -policy policy.json -tokens tokens.json (see README.md).
package main

import (
	"go.uber.org/fx"

	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/service"

	"example.com/petstore-mcp/tools"
)

func main() {
	service.Main("petstore-mcp", "0.1.0",
		server.Tools(tools.Registry),
		fx.Provide(tools.NewDeps),
	)
}
