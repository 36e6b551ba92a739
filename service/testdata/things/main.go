// Command things-mcp is the smallest service that uses every capability
// of toolroute's service kit: its tools, and this main.
package main

import (
	"go.uber.org/fx"

	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/service"

	"example.com/things/tools"
)

func main() {
	service.Main("things-mcp", "1.0.0",
		server.Tools(tools.Registry),
		fx.Provide(tools.NewDeps),
	)
}
