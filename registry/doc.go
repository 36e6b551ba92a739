// Package registry collects tool declarations and derives, in one place,
// everything no tool file may get wrong: MCP annotations, schemas, the
// upstream services to warm, and the tool → route table.
//
// # Registering
//
// A service declares one package-level [Registry] for its dependency
// container type ([New]) and registers each tool from an init function of
// the tool's own file:
//
//	var Registry = registry.New[*Deps]()
//
// [Registry.Register] panics on every misconfiguration, naming the tool,
// the file and line it was registered at, and the rule it breaks: a
// service with a broken declaration does not start. [Registry.Check]
// applies the same rules and returns the error instead.
//
// # Derived views
//
// [Registry.All], [Registry.Lookup], [Registry.AnnotationsFor] and
// [Registry.ServiceKeys] describe the registered tools; [Registry.Calls]
// describes them as the server and authz see them (one [tool.Call] per
// tool, the value every call's context carries); [Registry.Table] is the JSON tool → route
// manifest ([RouteTable]) that RBAC proxies consume and that services keep
// as a golden file for review.
//
// # Installing
//
// [Registry.Install] adds the tools to a bare *mcp.Server, with a
// middleware that begins each call and logs panics to slog.Default;
// [Registry.AddTools] adds the tools alone, for a server whose own chain
// begins each call and logs it (server.Install uses it under server.New).
// Either way one layer begins a call: its context carries its tool's
// [tool.Call], which authz's upstream transport uses to check every
// request the tool sends, and the state [tool.Progress] needs. A
// panicking call ends with a [PanicError], an isError result with a
// generic text; the service keeps serving.
package registry
