package server

import (
	"slices"

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
//
// An Installer that also has a method
// Extensions(tools []*tool.Call) map[string]map[string]any serves
// protocol extensions: New gives it every tool of the server and
// advertises each extension it returns in the server's capabilities
// (server/discover), by name with its settings. An Installer may add no
// tools and only methods and middleware (server/tasks' does).
type Installer interface {
	// Tools describes the tools Install adds, sorted by name: a
	// registry's Calls. [New] keeps them; they must not change.
	Tools() []*tool.Call
	// Install adds the tools to s. It may be called for several servers.
	// [New] calls it before adding its own middleware, so middleware it
	// adds runs inside the server's call path. New's chain begins every
	// call of the tools Tools describes (their context carries the
	// tool.Call and progress state): Install must not (a registry's own
	// Install is for bare servers; [Install] calls its AddTools).
	Install(s *mcp.Server)
}

// extender is an [Installer] that serves protocol extensions (such as
// server/tasks'): [New] advertises each extension it returns for the
// server's tools, by name with its settings, in the server's
// capabilities (server/discover, and the initialize result).
type extender interface {
	Extensions(tools []*tool.Call) map[string]map[string]any
}

// Install returns an Installer that adds r's tools, served with deps.
// r's tools are read when the Installer is made: register every tool
// first (in init functions).
func Install[C any](r *registry.Registry[C], deps C) Installer {
	if r == nil {
		panic("server: Install of a nil registry")
	}
	return &regInstaller[C]{r: r, deps: deps, tools: r.Calls()}
}

type regInstaller[C any] struct {
	r     *registry.Registry[C]
	deps  C
	tools []*tool.Call
}

func (in *regInstaller[C]) Tools() []*tool.Call { return slices.Clone(in.tools) }

// Install adds the registry's tools without the registry's own call
// middleware: New's chain begins their calls.
func (in *regInstaller[C]) Install(s *mcp.Server) { in.r.AddTools(s, in.deps) }
