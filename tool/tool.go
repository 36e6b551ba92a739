package tool

import (
	"context"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/core/call"
)

// Tool is one tool's whole declaration. C is the service's dependency
// container, handed to the handler on every call.
//
// A Tool is registered once, in an init function of its own file, with
// the registry's Register, which refuses every inconsistent declaration.
type Tool[C any] struct {
	// Name is the MCP tool name: 1 to 128 of A-Z a-z 0-9 _ . -.
	Name string
	// Title is a short human-readable name, used as both the tool's title
	// and its annotations' title. Optional.
	Title string
	// Description tells a model what the tool does and when to use it.
	// Write it as a raw string: it is trimmed and its common indentation
	// removed. Required.
	Description string
	// ServiceKey names the upstream service the tool calls (the first
	// segment of its routes' URIs, and the key of the service the server
	// must provide and warm). Required for mapped tools, forbidden for
	// Local ones.
	ServiceKey string
	// VisibilityRoutes are the upstream routes the tool's arguments can
	// reach. A caller sees the tool only if it may reach at least one of
	// them, and every upstream request the tool sends must match one of
	// them. Required unless Local.
	VisibilityRoutes []Route
	// Local marks a tool that calls no upstream (it answers from the
	// server itself) and is visible to every caller. A local tool has no
	// routes and no ServiceKey.
	Local bool
	// Behaviour says what the tool does to the state behind it. Required.
	Behaviour behaviour.Behaviour
	// Idempotent says repeating a call with the same arguments has no
	// further effect. Ignored for ReadOnly tools, which always are.
	Idempotent bool
	// OpenWorld says the tool reaches an open world of entities (the web,
	// other tenants) rather than the service's own closed domain.
	OpenWorld bool
	// Handler runs a call; make it with [Handle] or [HandleResult].
	// Required.
	Handler Handler[C]

	// Task says whether a call may become an MCP task (see [TaskMode]);
	// the zero value, TaskNever, answers every call synchronously.
	Task TaskMode
	// TaskAfter is how long a call of a TaskAllowed tool runs before it
	// becomes a task. 0 selects one second; it must be 0 for other modes.
	TaskAfter time.Duration
	// The tool's lifecycle and presentation (see [Deprecation]; all
	// optional). The registry derives what clients see from them: the
	// deprecation notice in the description and _meta, the version and
	// tags in _meta, the icons in the definition; the route table
	// carries the first three.

	// Deprecated, if set, marks the tool deprecated.
	Deprecated *Deprecation
	// Version is the tool's own version ("2", "1.4.0"): at most 64
	// characters, none of them space or control.
	Version string
	// Tags put the tool in toolsets: a role or a client limited to some
	// tags sees only the tools that carry one of them (a filter that
	// can only hide). Each is 1 to 64 of a-z 0-9 _ . -, starting with a
	// letter or digit; no duplicates.
	Tags []string
	// Icons are shown by clients that show icons; each needs a Source.
	Icons []mcp.Icon

	// Cache, if set, opts a ReadOnly tool into result caching (see
	// [ResultCache]); the registry refuses it on any other tool.
	Cache *ResultCache
}

// Call describes a registered tool as the rest of toolroute sees it: the
// registry makes one per tool, the server and its authorization read
// them (which tools exist, who may see and call them, which services they
// need), and every call's context carries its tool's (see
// [CallFromContext]), so that authz's upstream transport can check what
// the tool sends.
type Call struct {
	// Tool is the tool's name.
	Tool string
	// ServiceKey is the tool's upstream service ("" for local tools).
	ServiceKey string
	// Routes are the tool's declared routes. They are shared: do not
	// modify them.
	Routes []Route
	// Local reports whether the tool is local.
	Local bool
	// InputSchema is the tool's input schema, if known. It is shared: do
	// not modify it.
	InputSchema *jsonschema.Schema
	// Task and TaskAfter are the tool's (see [Tool.Task]), TaskAfter
	// with its default applied: when a call of it may become a task.
	Task      TaskMode
	TaskAfter time.Duration
	// Deprecated is the tool's deprecation, nil if it is not deprecated.
	// It is shared: do not modify it.
	Deprecated *Deprecation
	// Tags are the tool's toolset tags, sorted. They are shared: do not
	// modify them.
	Tags []string
	// Cache is the tool's result caching, nil for none. It is shared: do
	// not modify it.
	Cache *ResultCache
}

// CallFromContext returns the tool call ctx belongs to, or nil outside a
// tool call.
func CallFromContext(ctx context.Context) *Call {
	t := call.From[Call](ctx)
	if t == nil {
		return nil
	}
	return t.Info
}
