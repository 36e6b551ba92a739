package main

import (
	_ "embed"
	"flag"
	"log/slog"
	"net/http"

	"go.uber.org/fx"

	"github.com/toolroute/toolroute/authz/permission"
	"github.com/toolroute/toolroute/example-service/catalog"
	"github.com/toolroute/toolroute/example-service/tools"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/service"
)

var (
	//go:embed policy.json
	policy []byte
	//go:embed tokens.json
	demoTokens []byte
)

func main() { command().Main() }

func command() service.Command {
	var confirm bool
	return service.Command{
		Name: "example-service", Version: "1.0.0", Title: "Catalog (toolroute example)",
		Instructions: "A catalog of items (id, name, quantity in stock).\nUse `list_items` to find item ids and `get_item` to read one item.\nYou see only the tools your role allows; `whoami` tells your subject and roles.",
		Policy:       policy, DemoTokens: demoTokens, Defaults: service.Config{Caller: "viewer"},
		Embedded: map[string]func() http.Handler{catalog.ServiceKey: func() http.Handler {
			return catalog.NewHandler(catalog.NewStore(catalog.DemoItems()...))
		}},
		Flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&confirm, "confirm-destructive", false, "delete_item asks the user to confirm each deletion")
		},
		Commands: map[string]service.Subcommand{"catalog": catalogCommand},
		Options: []fx.Option{
			server.Tools(tools.Registry),
			fx.Provide(func(up service.Upstreams, confirmer *permission.Checker, logger *slog.Logger) *tools.Deps {
				d := &tools.Deps{Clients: up}
				if confirm {
					d.Confirm = confirmer
					logger.Info("example-service: delete_item asks for confirmation (-confirm-destructive)")
				}
				return d
			}),
		},
	}
}
