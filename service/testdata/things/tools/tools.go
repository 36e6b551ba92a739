// Package tools holds things-mcp's tools, one per file, and their
// container.
package tools

import (
	"net/http"

	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/service"
)

// Registry holds every tool; each tool file registers its own in init.
var Registry = registry.New[*Deps]()

// Deps is what every handler receives.
type Deps struct {
	BaseURL string       // the things API's origin
	HTTP    *http.Client // checks every request against the tool's routes
}

// NewDeps builds the container from the kit's upstream clients
// (-upstream things=URL).
func NewDeps(up service.Upstreams) *Deps {
	return &Deps{BaseURL: up.URL("things"), HTTP: up.Client("things")}
}
