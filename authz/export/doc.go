// Package export writes a registry's route table and a set of role
// policies (authz's, in the RBAC proxy's shape) in the forms the policy
// engines and proxies teams run read, so that permissions are defined in
// one place: the tools' declared routes and one role policy.
//
//	e, err := export.New(tools.Registry.Table(), rolePolicies)
//	...
//	err = e.Write(os.Stdout, export.FormatRego, export.Options{})
//
// # Formats, and how exact each is
//
// The role policy matches Go RE2 regexps against a route's escaped URI
// (unanchored unless the regexp anchors itself), per method; within a
// role deny overrides allow and no matching rule denies; a caller's roles
// add up. Visibility lists a tool iff it is local or one of its routes
// (its template URI, "{id}" included) is allowed.
//
//   - json ([Exporter.JSON]): the [registry.RouteTable], unchanged.
//   - rego ([Exporter.Rego]): a Rego v1 module, package toolroute.authz,
//     carrying the regexps themselves (Rego's regex.match is Go's RE2):
//     allow and tools are exact for every input.
//   - casbin ([Exporter.Casbin]): a model and a policy whose
//     Enforce(role, path, method) is exact for every input (Casbin's
//     regexMatch is Go's regexp); one call per role.
//   - cedar ([Exporter.Cedar]): Cedar has no regexps. The policies are
//     toolroute's decisions, taken at export time, over the table's tools
//     (call_tool) and route templates (one action per method): exact on
//     that space, for any set of roles; everything else is denied.
//   - istio ([Exporter.Istio]): AuthorizationPolicy documents allowing, per
//     role, the route templates the role may reach, placeholders as
//     "{*}": exact on the templates and on their bindings where the role
//     policy decides every placeholder value alike; a deny of one value is
//     not carried, and Istio matches its own normalization of the path.
//   - openapi ([Exporter.OpenAPI]): an OpenAPI 3.1 document of the routes,
//     each operation listing its tools in "x-mcp-tools".
//
// [Exporter.Matrix] is the role × tool visibility table (text or JSON),
// and [CheckOpenAPI] holds a service's declared routes to the service's
// own OpenAPI document (drift).
//
// The package writes text and links no engine: the tests run the real
// ones (OPA's rego package, cedar-go, Casbin, kin-openapi, Istio's API
// types) on what it writes, against authz.Policy's decisions.
package export
