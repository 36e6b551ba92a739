// Package vet defines [Analyzer], which checks toolroute tool
// declarations at compile time: every Register(tool.Tool[C]{...}) call on
// a *registry.Registry[C] is held to the rules registry.Registry.Check
// applies at run time, as far as the source shows the declaration's
// values as constants. The rules and their texts are the registry's own
// (one source of truth, internal/core/rules); each is reported at the
// field that breaks it (the key-value element of the composite literal),
// or at the literal when a field is missing.
//
// # What is checked
//
//   - Name: empty, longer than 128 bytes, or with a character outside
//     A-Z a-z 0-9 _ . -; a name registered twice on the same
//     package-level registry by statements of the package's init
//     functions (not in a branch or a loop: calls that both run); both
//     sites are reported;
//   - Description: missing, or white space only;
//   - Behaviour: missing (Unset) or not a known constant;
//   - Handler: missing, tool.Handle(nil), or an In or Out type argument
//     of tool.Handle / tool.HandleResult / upstream.Forward that is not
//     an object (a basic type, a list, an interface; structs and maps,
//     and pointers to them, are objects); an upstream.Forward whose
//     route is not among the tool's VisibilityRoutes;
//   - Local with VisibilityRoutes or a ServiceKey; neither routes nor
//     Local; routes without a ServiceKey; a ServiceKey that is not a
//     plain path segment;
//   - every route: a malformed template (no leading "/", an empty, "."
//     or ".." segment, a query or fragment, white space, a bad
//     placeholder or percent-escape, a method that is not an upper-case
//     HTTP method: the fix to upper case is suggested), a route outside
//     its tool's service, a duplicate route;
//   - Task not a known constant; a negative TaskAfter, or one with a
//     Task other than tool.TaskAllowed;
//   - Deprecated without a Reason, or with one of several lines; a
//     Successor that names the tool itself or is not a valid tool name;
//     a Version longer than 64 characters or with white space; a tag
//     that is not 1 to 64 of a-z 0-9 _ . -, or is repeated (reported at
//     the tag); an icon without a Source (at the icon);
//   - Cache on a tool that is not ReadOnly; a Cache.TTL that is not
//     positive; a negative Cache.StaleOnError.
//
// A route is known when it is a tool.Route{URI: ..., Method: ...} or
// tool.ServiceRoute(...) of constants, a call with constant arguments
// of a function whose body is one return of such a route (a service's
// route constructor), or a package-level variable so initialized and
// never assigned in its package: in the package itself, or in one it
// imports, through analysis facts (services export their routes as
// variables, as example-service/catalog does, or constructors).
// Deprecated and Cache are known when written as &tool.Deprecation{...}
// and &tool.ResultCache{...} with keyed fields (each field on its own:
// a Reason of a variable leaves the Successor known); Tags and Icons
// when written as a literal whose every tag is a constant, and whose
// every icon is a literal with a constant Source or none.
//
// A value the source does not show as a constant (a variable set at run
// time, a slice built by a function, a handler made elsewhere) is not
// known, and every rule that reads it is skipped: the analyzer reports
// only what Register would refuse too. What it cannot see, the registry
// still refuses at run time: the rest of a handler's schema rules (a
// type that contains itself, an invalid jsonschema tag, a field
// encoding/json names otherwise), upstream.Forward's checks of its In
// against its route (a placeholder without a field, a body field on a
// GET, ...), a duplicate name across packages or registries, Register
// after Install, a Deprecated.Successor that names no tool of the
// registry (Install's rule).
//
// # Running it
//
// With go vet, as a vet tool:
//
//	go install github.com/toolroute/toolroute/cmd/toolroutevet@latest
//	go vet -vettool=$(go env GOPATH)/bin/toolroutevet ./...
//
// or on its own:
//
//	go run github.com/toolroute/toolroute/cmd/toolroutevet ./...
//
// gopls cannot load an analyzer that is not compiled into it, so the
// editor does not show these diagnostics as you type: run the vet tool
// (from the editor's task runner or on save), and in CI.
package vet
