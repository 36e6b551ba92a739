// Package tools holds things-mcp's tools, one per file, and their
// container.
package tools

import (
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/service"
)

// Registry holds every tool; each tool file registers its own in init.
var Registry = registry.New[*Deps]()

// Deps is what every handler receives: the kit's upstream clients
// (-upstream things=URL), which check every request against the tool's
// routes before it leaves.
type Deps struct{ service.Upstreams }

// NewDeps builds the container.
func NewDeps(up service.Upstreams) *Deps { return &Deps{up} }
