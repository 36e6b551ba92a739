package tools

import (
	"log/slog"

	"github.com/toolroute/toolroute/authz/permission"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/upstream"
)

// Registry holds every tool of example-service. Each tool file registers
// its tool here in init.
var Registry = registry.New[*Deps]()

// Deps is the dependency container every handler receives.
type Deps struct {
	// Clients gives the catalog's origin and HTTP client, by its service
	// key (catalog.ServiceKey), to the typed upstream calls: the kit's
	// service.Upstreams in main.go, whose client is authz's upstream
	// transport; upstream.Endpoints in tests.
	upstream.Clients
	// Confirm, if set, makes delete_item ask the user to confirm each
	// deletion (example-service's -confirm-destructive). nil deletes
	// without asking.
	Confirm *permission.Checker
}

// Logger is where the typed upstream calls log the causes of the
// failures a client only sees as "upstream unavailable": the logger of
// Clients if it has one (the kit's service.Upstreams give the
// service's), else nil, which selects slog.Default.
func (d *Deps) Logger() *slog.Logger {
	if l, ok := d.Clients.(interface{ Logger() *slog.Logger }); ok {
		return l.Logger()
	}
	return nil
}
