// Package lint checks a service's role policies (authz's, in the RBAC
// proxy's shape) against its tools' route table, for the mistakes that
// authz accepts in silence or refuses with one message at a time: a
// service runs [Policy] at start and logs the findings as warnings, and
// its check command returns them as errors.
//
//	var roles []authz.RolePolicy
//	if err := json.Unmarshal(data, &roles); err != nil { ... }
//	for _, f := range lint.Policy(tools.Registry.Table(), roles) {
//		logger.Warn(f.String())
//	}
//
// # How a rule meets a route
//
// A rule's path regexp is matched, anywhere unless anchored, against two
// different texts. Visibility (tools/list) asks about a tool's route
// templates as written: "/catalog/api/v1/items/{id}", braces and all.
// The upstream transport asks about each concrete request path:
// "/catalog/api/v1/items/itm-1", escaped, so it never holds "{". A rule
// meant for a route must therefore match both, which a segment written
// "[^/]+" does; [authz.RolePolicyFor] writes such rules. The checks decide
// what a rule matches as authz does (they ask an [authz.Policy] of the
// rule), and what concrete paths a rule and a template have in common by
// running the rule's regexp and the template's paths side by side, as
// automata over the bytes of escaped paths, to the shortest path both
// match: a witness, which the finding quotes and which authz and
// [tool.Route.Match] confirm before it is reported.
//
// # The checks
//
//   - [Invalid]: what authz refuses besides methods: an empty or duplicate
//     role name, an effect other than "allow" and "deny" (for "Allow", the
//     fix: write "allow"), an empty or invalid path regexp, no methods, a
//     method listed twice. [authz.ParsePolicy] stops at the first; these
//     are all reported at once.
//   - [UnknownMethod]: a method authz does not accept, with the fix: for
//     "get", write "GET"; for anything else, the methods authz accepts.
//   - [NoTools]: a role that reaches no route of any tool (local tools,
//     which have no routes, are shown to every caller and do not count):
//     a caller with only this role sees no tool but the local ones, and
//     the server says nothing. The message lists routes the table has, so
//     the mismatch shows. A role all of whose allow rules are about other
//     services' paths (none can match a path under one of the table's
//     service keys) is a role of a shared policy, not for these tools, and
//     is not reported.
//   - [ValuesOnly]: an allow rule that matches no route template for its
//     methods but matches concrete paths of a route its role does not
//     otherwise show: "^/catalog/api/v1/items/itm-[0-9]+$" lets requests
//     for "/catalog/api/v1/items/itm-0" through and shows no tool. The fix
//     is a segment "[^/]+", or, to keep the rule's restriction, an extra
//     allow rule for the template itself ("^/catalog/api/v1/items/\{id\}$",
//     which no request path matches): tools are shown by their templates,
//     and every request is still checked against its concrete path.
//   - [TemplateOnly]: the converse: an allow rule that matches a route
//     template as written but none of its concrete paths, when no other
//     allow rule of the role matches one: "^/catalog/api/v1/items/{id}$"
//     (in a regexp, "{id}" is literal text) shows the tool and refuses
//     every call of it.
//   - [DeadDeny]: a deny rule that denies nothing: no allow rule of its
//     role, for a method they share, matches any request path it matches
//     nor a route template it matches (a deny of a template hides the
//     tool). Within
//     a role deny overrides allow, and what no allow rule matches is
//     refused already, so such a rule protects nothing; it is usually a
//     typo in the path or the methods. The question is asked of all paths,
//     not only the table's routes: a deny of one concrete value
//     ("^/catalog/api/v1/items/itm-admin$") or of routes no tool uses is
//     live, and is not reported.
//
// An allow rule that matches no route of any tool at all (and is not
// [ValuesOnly]) is not reported: a policy shared by several services, or
// one the RBAC proxy also applies to other clients, is full of such rules,
// and a warning about each of them would hide the findings that matter.
//
// An effect or method in the wrong case ("Allow", "get") is reported and
// then taken for the one it stands for; an unknown method is left out of
// the other checks. The checks that weigh a role's rules together (NoTools,
// TemplateOnly, DeadDeny) skip a role with a rule whose effect or path is
// invalid, rather than guess what it will say once fixed. Where the
// search for a witness gives up (a regexp whose automaton is very large),
// nothing is claimed: a finding is made only when it is certain.
package lint
