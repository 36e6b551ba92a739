package export

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
)

// The formats [Exporter.Write] knows, in the order the usage text lists
// them.
const (
	FormatJSON    = "json"
	FormatRego    = "rego"
	FormatCedar   = "cedar"
	FormatCasbin  = "casbin"
	FormatIstio   = "istio"
	FormatOpenAPI = "openapi"
)

// Formats lists every format [Exporter.Write] knows.
var Formats = []string{FormatJSON, FormatRego, FormatCedar, FormatCasbin, FormatIstio, FormatOpenAPI}

// Exporter writes one registry's route table and one set of role
// policies in the forms policy engines and proxies read. It must be
// created with [New]; it is immutable and safe for concurrent use.
type Exporter struct {
	table registry.RouteTable
	roles []authz.RolePolicy // as given (copied)
	names []string           // role names, sorted
	// allowed[role] holds the table's routes the role is allowed,
	// decided by policy on the template URI (as visibility decides).
	allowed map[string]map[tool.Route]bool
	routes  []tool.Route         // the table's distinct routes, sorted by URI, then method
	users   map[tool.Route][]int // route → indexes in table.Tools of the tools declaring it
}

// New compiles roles with [authz.NewPolicy] and decides, once, every role
// on every route of table. It refuses what NewPolicy refuses, and role
// names that are not valid UTF-8 (no policy language could quote them).
// table is used as given: a registry's Table is valid by construction.
// New copies both: changing them afterwards does not change e.
func New(table registry.RouteTable, roles []authz.RolePolicy) (*Exporter, error) {
	p, err := authz.NewPolicy(roles)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	table, roles = cloneTable(table), cloneRoles(roles)
	e := &Exporter{table: table, roles: roles, allowed: make(map[string]map[tool.Route]bool, len(roles))}
	for _, rp := range roles {
		if !utf8.ValidString(rp.Role) {
			return nil, fmt.Errorf("export: role %q: name is not valid UTF-8", rp.Role)
		}
		e.names = append(e.names, rp.Role)
	}
	slices.Sort(e.names)
	e.users = map[tool.Route][]int{}
	for i, t := range table.Tools {
		for _, r := range t.Routes {
			if e.users[r] == nil {
				e.routes = append(e.routes, r)
			}
			e.users[r] = append(e.users[r], i)
		}
	}
	slices.SortFunc(e.routes, compareRoutes)
	for _, role := range e.names {
		ok, err := p.AllowMany(context.Background(), authz.Caller{Subject: "toolroute-export", Roles: []string{role}}, e.routes)
		if err != nil { // a Policy fails only for a caller without subject and roles
			return nil, fmt.Errorf("export: role %q: %w", role, err)
		}
		m := make(map[tool.Route]bool, len(e.routes))
		for i, r := range e.routes {
			if ok[i] {
				m[r] = true
			}
		}
		e.allowed[role] = m
	}
	return e, nil
}

func cloneTable(t registry.RouteTable) registry.RouteTable {
	t.Tools = slices.Clone(t.Tools)
	for i := range t.Tools {
		t.Tools[i].Routes = slices.Clone(t.Tools[i].Routes)
	}
	return t
}

func cloneRoles(roles []authz.RolePolicy) []authz.RolePolicy {
	roles = slices.Clone(roles)
	for i := range roles {
		roles[i].AccessPolicies = slices.Clone(roles[i].AccessPolicies)
		for j := range roles[i].AccessPolicies {
			roles[i].AccessPolicies[j].Methods = slices.Clone(roles[i].AccessPolicies[j].Methods)
		}
	}
	return roles
}

func compareRoutes(a, b tool.Route) int {
	if c := strings.Compare(a.URI, b.URI); c != 0 {
		return c
	}
	return strings.Compare(a.Method, b.Method)
}

// Roles returns the role names, sorted.
func (e *Exporter) Roles() []string { return slices.Clone(e.names) }

// visible reports whether a caller with the one role sees the tool: it is
// local, or the role may reach one of its routes (authz's visibility
// rule).
func (e *Exporter) visible(role string, t registry.RouteTableEntry) bool {
	if t.Local {
		return true
	}
	return slices.ContainsFunc(t.Routes, func(r tool.Route) bool { return e.allowed[role][r] })
}

// Options tune the formats that need more than the table and the policy.
// The zero value (or nil) selects the defaults.
type Options struct {
	// RoleClaim is the JWT claim an Istio AuthorizationPolicy reads the
	// caller's roles from; "." separates nested claims
	// ("realm_access.roles"). "" selects "roles".
	RoleClaim string
	// Namespace is the Istio policies' namespace; "" leaves it out (kubectl
	// applies them to its current namespace).
	Namespace string
	// Selector, if set, are the labels of the workloads the Istio
	// policies apply to; nil applies them to every workload of the
	// namespace.
	Selector map[string]string
	// Title and Version are the OpenAPI document's info; "" selects
	// "toolroute routes" and "0.0.0".
	Title, Version string
}

// Write writes the route table and policy in format (one of [Formats]);
// opts tunes the formats that take options (the zero Options selects
// their defaults).
func (e *Exporter) Write(w io.Writer, format string, opts Options) error {
	switch format {
	case FormatJSON:
		return e.JSON(w)
	case FormatRego:
		return e.Rego(w)
	case FormatCedar:
		return e.Cedar(w)
	case FormatCasbin:
		return e.Casbin(w)
	case FormatIstio:
		return e.Istio(w, opts)
	case FormatOpenAPI:
		return e.OpenAPI(w, opts)
	}
	return fmt.Errorf("export: unknown format %q (want one of %s)", format, strings.Join(Formats, ", "))
}

// JSON writes the route table as indented JSON: the registry's
// [registry.RouteTable] unchanged, as RBAC proxies and reviewers read it.
func (e *Exporter) JSON(w io.Writer) error { return writeJSON(w, e.table) }

// writeJSON writes v as JSON indented by two spaces, without HTML
// escaping, and a final newline.
func writeJSON(w io.Writer, v any) error {
	data, err := marshalIndent(v, "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

func marshalIndent(v any, indent string) ([]byte, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	return []byte(strings.TrimSuffix(b.String(), "\n")), nil
}

// writeString writes s to w.
func writeString(w io.Writer, s string) error {
	_, err := io.WriteString(w, s)
	return err
}
