// Package registry collects tool declarations and derives, in one place,
// everything no tool file may get wrong: MCP annotations, schemas, the
// upstream services to warm, and the tool → route table.
//
// A service declares one package-level registry for its dependency
// container type and registers each tool from an init function of the
// tool's own file:
//
//	var Registry = registry.New[*Deps]()
//
// [Registry.Register] panics on every misconfiguration, naming the tool,
// the file and line it was registered at, and the rule it breaks: a
// service with a broken declaration does not start. [Registry.Check]
// applies the same rules and returns the error instead.
//
// [Registry.Install] adds the tools to an *mcp.Server. Around every
// handler it recovers panics (a panicking tool answers with an isError
// result; the service keeps serving) and puts the call's [tool.Call] in
// the context, which authz's upstream transport uses to check every
// request the tool sends.
package registry
