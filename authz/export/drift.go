package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
)

// Operation is one operation of an OpenAPI document: an upper-case
// method and a path as the document writes it.
type Operation struct {
	Method string `json:"method"`
	Path   string `json:"path"`
}

// String returns "METHOD PATH".
func (o Operation) String() string { return o.Method + " " + o.Path }

// MissingRoute is a declared route that is no operation of the upstream's
// OpenAPI document, with the tools that declare it.
type MissingRoute struct {
	Route tool.Route `json:"route"`
	Tools []string   `json:"tools"`
}

// Drift is what [CheckOpenAPI] found between a service's routes in a
// route table and the service's own OpenAPI document.
type Drift struct {
	// Service is the service key checked.
	Service string `json:"service"`
	// Missing are the declared routes the document does not have: a tool
	// would send requests the upstream does not serve.
	Missing []MissingRoute `json:"missing"`
	// Unused are the document's operations no tool declares (for
	// information: not every operation needs a tool).
	Unused []Operation `json:"unused"`
}

// Err returns an error naming every missing route and its tools, or nil
// if there is none.
func (d Drift) Err() error {
	if len(d.Missing) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "export: service %q: %d declared route(s) are no operation of its OpenAPI document:", d.Service, len(d.Missing))
	for _, m := range d.Missing {
		fmt.Fprintf(&b, "\n\t%s (tools %s)", m.Route, strings.Join(m.Tools, ", "))
	}
	return errors.New(b.String())
}

// openAPIMethods are the operation fields of an OpenAPI path item.
var openAPIMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// CheckOpenAPI holds the routes of the service serviceKey in table (the
// routes of its tools) to the service's own OpenAPI document doc (JSON,
// OpenAPI 3.0 or 3.1): a route matches an operation if the methods are
// equal and the document's path, prefixed by "/"+serviceKey, equals the
// route's URI with placeholders compared by position, not name
// ("/items/{id}" matches "/items/{itemId}"), and without the "#fragment"
// some documents add to tell operations on one path apart
// ("/files/{file_id}#get_shared_link": no request carries it, so such
// operations share one route, and a tool with it uses them all). As
// OpenAPI says, the
// document's paths are relative to its top-level servers' URLs: with
// "servers": [{"url": "https://petstore.example/v1"}], the operation GET
// /pets is the route GET /petstore/v1/pets (the request goes to the
// server's base path; authz's upstream transport checks a request's path
// against the route), and not GET /petstore/pets. A server URL's
// variables take their defaults; one without a path, a relative one
// ("v1": relative to where the document is served, which it does not
// say) or none at all make the paths the service's own. The servers'
// origins play no part.
//
// It returns the routes the document lacks (see [Drift.Err]) and the
// operations no tool uses. doc must be JSON with a "paths" object whose
// path items are objects; a path item "$ref" is refused, not followed.
func CheckOpenAPI(table registry.RouteTable, serviceKey string, doc []byte) (Drift, error) {
	d := Drift{Service: serviceKey, Missing: []MissingRoute{}, Unused: []Operation{}}
	var parsed struct {
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
		Servers []openAPIServer                       `json:"servers"`
	}
	if err := json.Unmarshal(doc, &parsed); err != nil {
		return d, fmt.Errorf("export: service %q: OpenAPI document: %w", serviceKey, err)
	}
	if parsed.Paths == nil {
		return d, fmt.Errorf("export: service %q: OpenAPI document has no \"paths\" object", serviceKey)
	}
	var prefixes []string
	for _, s := range parsed.Servers {
		if p := "/" + serviceKey + s.basePath(); !slices.Contains(prefixes, p) {
			prefixes = append(prefixes, p)
		}
	}
	if len(prefixes) == 0 {
		prefixes = []string{"/" + serviceKey}
	}
	ops := map[Operation][]Operation{} // shape-normalized, a service prefix included → the document's
	var all []Operation
	for p, item := range parsed.Paths {
		if _, ok := item["$ref"]; ok {
			return d, fmt.Errorf("export: service %q: OpenAPI path %q: a path item $ref is not followed", serviceKey, p)
		}
		for _, m := range openAPIMethods {
			if raw, ok := item[m]; ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
				op := Operation{Method: strings.ToUpper(m), Path: p}
				all = append(all, op)
				// A "#fragment" tells operations on one path apart; no
				// request carries it, and they share their route.
				path, _, _ := strings.Cut(p, "#")
				for _, prefix := range prefixes {
					k := Operation{Method: op.Method, Path: templateShape(prefix + path)}
					ops[k] = append(ops[k], op)
				}
			}
		}
	}
	used := map[Operation]bool{} // the document's operations
	for _, t := range table.Tools {
		if t.Local || t.ServiceKey != serviceKey {
			continue
		}
		for _, r := range t.Routes {
			if alike, ok := ops[Operation{Method: r.Method, Path: templateShape(r.URI)}]; ok {
				for _, op := range alike {
					used[op] = true
				}
				continue
			}
			i := slices.IndexFunc(d.Missing, func(m MissingRoute) bool { return m.Route == r })
			if i < 0 {
				d.Missing = append(d.Missing, MissingRoute{Route: r})
				i = len(d.Missing) - 1
			}
			d.Missing[i].Tools = append(d.Missing[i].Tools, t.Name)
		}
	}
	slices.SortFunc(d.Missing, func(a, b MissingRoute) int { return compareRoutes(a.Route, b.Route) })
	for _, op := range all {
		if !used[op] {
			d.Unused = append(d.Unused, op)
		}
	}
	slices.SortFunc(d.Unused, func(a, b Operation) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Method, b.Method)
	})
	return d, nil
}

// openAPIServer is a server object of an OpenAPI document.
type openAPIServer struct {
	URL       string `json:"url"`
	Variables map[string]struct {
		Default string `json:"default"`
	} `json:"variables"`
}

// basePath is the path of s's URL, its variables replaced by their
// defaults, without a trailing "/"; "" for a URL without a path, one
// that does not parse, one whose path is relative ("v1": relative to
// where the document is served, which the document does not say) or
// still holds a variable.
func (s openAPIServer) basePath() string {
	raw := s.URL
	for name, v := range s.Variables {
		raw = strings.ReplaceAll(raw, "{"+name+"}", v.Default)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	p := strings.TrimRight(u.EscapedPath(), "/")
	if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "{}") {
		return ""
	}
	return p
}
