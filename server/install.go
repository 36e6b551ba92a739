package server

import (
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
)

// An Installer adds a set of tools to a server and describes them, so
// that [New] can check the whole set (duplicate names, missing services)
// and authorize every call. [Install] makes one from a registry; registries
// of different container types become Installers of one type and share a
// server.
//
// A tool an Installer adds but does not describe in Tools is hidden from
// every caller and answers like an unknown tool.
type Installer interface {
	// Tools describes the tools Install adds, sorted by name.
	Tools() []ToolInfo
	// Install adds the tools to s. It may be called for several servers.
	Install(s *mcp.Server)
}

// ToolInfo is what a server needs to know about a tool besides its
// handler: its name, its upstream service, and the routes that decide who
// may see and call it.
type ToolInfo struct {
	// Name is the MCP tool name.
	Name string
	// ServiceKey is the upstream service the tool needs ("" for local
	// tools). A [Service] of this key must exist under fx.
	ServiceKey string
	// Local marks a tool that calls no upstream; it is visible to every
	// caller.
	Local bool
	// Routes are the tool's visibility routes.
	Routes []tool.Route
	// InputSchema is the tool's input schema, if known (shared: do not
	// modify). The server decodes, before validation, arguments that
	// clients sent as JSON-encoded strings where it expects an array or
	// an object (see [New]). nil decodes nothing.
	InputSchema *jsonschema.Schema
}

// Install returns an Installer that adds r's tools, served with deps.
// r's tools are read when the Installer is made: register every tool
// first (in init functions).
func Install[C any](r *registry.Registry[C], deps C) Installer {
	if r == nil {
		panic("server: Install of a nil registry")
	}
	all := r.All()
	infos := make([]ToolInfo, len(all))
	for i, t := range all {
		infos[i] = ToolInfo{Name: t.Name, ServiceKey: t.ServiceKey, Local: t.Local, Routes: t.VisibilityRoutes, InputSchema: t.Handler.InputSchema()}
	}
	return &regInstaller[C]{r: r, deps: deps, tools: infos}
}

type regInstaller[C any] struct {
	r     *registry.Registry[C]
	deps  C
	tools []ToolInfo
}

func (in *regInstaller[C]) Tools() []ToolInfo { return slices.Clone(in.tools) }

func (in *regInstaller[C]) Install(s *mcp.Server) { in.r.Install(s, in.deps) }
