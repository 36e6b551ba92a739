package registry

import (
	"slices"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/tool"
)

// RouteTable is the tool → route manifest of a registry, for RBAC proxies
// and for review: marshal it as JSON and keep it as a golden file, so
// every change to what a tool may reach shows up in code review.
type RouteTable struct {
	Tools []RouteTableEntry `json:"tools"`
}

// RouteTableEntry is one tool's row of a [RouteTable]: its name,
// behaviour, service key (omitted for a local tool), whether it is local,
// and its declared routes (an empty list, never null, for a local tool);
// then its lifecycle, each omitted when not declared: version, tags
// (sorted) and deprecation (its sunset the start of its day in UTC).
type RouteTableEntry struct {
	Name       string              `json:"name"`
	Behaviour  behaviour.Behaviour `json:"behaviour"`
	ServiceKey string              `json:"serviceKey,omitempty"`
	Local      bool                `json:"local"`
	Routes     []tool.Route        `json:"routes"`
	Version    string              `json:"version,omitempty"`
	Tags       []string            `json:"tags,omitempty"`
	Deprecated *tool.Deprecation   `json:"deprecated,omitempty"`
}

// Table returns the registry's route table, tools sorted by name. Local
// tools appear with Local set and no routes.
func (r *Registry[C]) Table() RouteTable {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t := RouteTable{Tools: make([]RouteTableEntry, len(r.sorted))}
	for i, e := range r.sorted {
		routes := slices.Clone(e.tool.VisibilityRoutes)
		if routes == nil {
			routes = []tool.Route{}
		}
		d, tags, _ := ownLifecycle(e.tool.Deprecated, e.tool.Tags, nil)
		t.Tools[i] = RouteTableEntry{
			Name:       e.tool.Name,
			Behaviour:  e.tool.Behaviour,
			ServiceKey: e.tool.ServiceKey,
			Local:      e.tool.Local,
			Routes:     routes,
			Version:    e.tool.Version,
			Tags:       tags,
			Deprecated: d,
		}
	}
	return t
}
