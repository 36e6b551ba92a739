package gen

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/tool"
)

// Spec is an OpenAPI document analysed for one service: the tools its
// operations become, and the operations it skipped, with why.
type Spec struct {
	// Service is the service key of every route.
	Service string
	// Source names the document in the generated files' headers (its
	// file name).
	Source string
	// Title and Origin are the document's title and its first server's
	// origin ("https://petstore.example"; "" for a relative server URL or
	// none), for the generated README.
	Title, Origin string
	// BasePath is the path of the document's first server's URL ("/v1";
	// "" for none), which every route includes.
	BasePath string
	// Tools are the generated tools, sorted by name.
	Tools []Tool
	// Skipped are the operations no tool is generated for.
	Skipped []Skip
	// Notes are what the generated tools leave out of their operations
	// (an optional cookie parameter, a header the kit sets itself, ...).
	Notes []Skip
	// Warnings are errors of the document itself that the generated
	// types work around, sorted: a schema that requires a property it
	// does not declare (a field of any JSON).
	Warnings []string

	mapper *mapper
	pkg    string
}

// Tool is one generated tool: one operation of the document.
type Tool struct {
	// Name is the tool's name: the operationId in snake case, or the
	// method and path.
	Name string
	// Operation names the operation: "GET /pets/{petId} (showPetById)".
	Operation string
	// Method and Path are the operation's, as the document writes them.
	Method, Path string
	// Route is the tool's one route: the path under the base path, with
	// its placeholders named as the tool's arguments.
	Route tool.Route
	// Behaviour follows from the method, and Idempotent (PUT, DELETE).
	Behaviour  behaviour.Behaviour
	Idempotent bool
	// Description is the tool's description, from the summary and the
	// description.
	Description string
	// File is the tool's file in the tools package ("show_pet_by_id.go").
	File string

	routeVar, in, out string // Go names
	decls             []*decl
}

// Skip is an operation, or part of one, left out, and why.
type Skip struct {
	Operation string
	Reason    string
}

// String returns "OPERATION: REASON".
func (s Skip) String() string { return s.Operation + ": " + s.Reason }

// Options say what to generate for a document.
type Options struct {
	// Service is the service key (required): the first segment of every
	// route, the key of -upstream KEY=URL.
	Service string
	// Source names the document in the headers of generated files;
	// "" selects "the OpenAPI document".
	Source string
	// Package is the tools package's name; "" selects "tools".
	Package string
}

// Parse loads an OpenAPI 3.0, 3.1 or 3.2 document (JSON or YAML) and
// analyses it for opts.Service. A reference to another file or URL is
// refused: the document must be self-contained.
func Parse(data []byte, opts Options) (*Spec, error) {
	if err := CheckServiceKey(opts.Service); err != nil {
		return nil, err
	}
	loader := openapi3.NewLoader()
	loader.IncludeOrigin = true // for the properties' order
	doc, err := loader.LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("OpenAPI document: %w", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		if doc.OpenAPI == "" {
			return nil, errors.New(`not an OpenAPI 3 document: it has no "openapi" field (a Swagger 2.0 document must be converted to OpenAPI 3 first)`)
		}
		return nil, fmt.Errorf("OpenAPI version %q: toolroute reads 3.0, 3.1 and 3.2", doc.OpenAPI)
	}
	return analyse(doc, opts), nil
}

// CheckServiceKey refuses a service key that does not stand for itself
// in every form the kit takes it in: a route's first segment, the flag
// -upstream KEY=URL and the variable TOOLROUTE_UPSTREAM_KEY.
func CheckServiceKey(key string) error {
	if key == "" {
		return errors.New("a service key is required (-service KEY, e.g. -service petstore)")
	}
	for i, c := range key {
		if !(isLower(c) || i > 0 && (isDigit(c) || c == '-')) || strings.HasSuffix(key, "-") {
			return fmt.Errorf("service key %q: use lower-case letters, digits and \"-\", starting with a letter (e.g. petstore or pet-store): it is a route's first segment and the KEY of -upstream KEY=URL and TOOLROUTE_UPSTREAM_KEY", key)
		}
	}
	return nil
}

// methods are the methods operations are read for, in the order files
// and routes are written.
var methods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions, http.MethodTrace}

// op is one operation of the document.
type op struct {
	method, path string
	item         *openapi3.PathItem
	op           *openapi3.Operation
	label        string
	name         string
}

func analyse(doc *openapi3.T, opts Options) *Spec {
	s := &Spec{Service: opts.Service, Source: opts.Source, pkg: opts.Package}
	if s.Source == "" {
		s.Source = "the OpenAPI document"
	}
	if s.pkg == "" {
		s.pkg = "tools"
	}
	if doc.Info != nil {
		s.Title = doc.Info.Title
	}
	if len(doc.Servers) > 0 {
		s.BasePath, s.Origin = serverURL(doc.Servers[0])
	}
	// Every operation, in path and method order, gets its name first, so
	// that an operation's name does not depend on which others become
	// tools.
	var ops []*op
	paths := doc.Paths.Map()
	for _, p := range slices.Sorted(maps.Keys(paths)) {
		item := paths[p]
		if item == nil {
			continue
		}
		all := item.Operations()
		for _, m := range methods {
			if o := all[m]; o != nil {
				ops = append(ops, &op{method: m, path: p, item: item, op: o, label: label(m, p, o)})
			}
		}
		for _, m := range slices.Sorted(maps.Keys(all)) {
			if !slices.Contains(methods, m) {
				s.Skipped = append(s.Skipped, Skip{label(m, p, all[m]), "method " + m + ": only GET, HEAD, POST, PUT, PATCH and DELETE operations become tools"})
			}
		}
	}
	toolNames := newNamespace("_")
	for _, o := range ops {
		base := snake(o.op.OperationID)
		if base == "" {
			base = snake(strings.ToLower(o.method) + " " + o.path)
		}
		if len(base) > 120 {
			base = strings.TrimRight(base[:120], "_")
		}
		o.name = toolNames.claim(base)
	}
	// The package's names: its own, then the components', then each
	// tool's.
	names := newNamespace("", "Registry", "Deps", "NewDeps")
	s.mapper = newMapper(doc, names)
	for _, o := range ops {
		if o.method == http.MethodOptions || o.method == http.MethodTrace {
			s.Skipped = append(s.Skipped, Skip{o.label, "method " + o.method + ": only GET, HEAD, POST, PUT, PATCH and DELETE operations become tools"})
			continue
		}
		t, notes, err := s.tool(o, names)
		s.Notes = append(s.Notes, notes...)
		if err != nil {
			s.Skipped = append(s.Skipped, Skip{o.label, err.Error()})
			continue
		}
		s.Tools = append(s.Tools, t)
	}
	s.mapper.flushComponents("types.go")
	s.Warnings = slices.Sorted(maps.Keys(s.mapper.warnings))
	slices.SortFunc(s.Tools, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) })
	slices.SortStableFunc(s.Skipped, func(a, b Skip) int { return strings.Compare(a.Operation, b.Operation) })
	return s
}

// label names an operation in messages and headers: "GET /pets (listPets)".
func label(method, path string, o *openapi3.Operation) string {
	l := method + " " + path
	if o != nil && o.OperationID != "" {
		l += " (" + o.OperationID + ")"
	}
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, l)
}

// serverURL returns the base path (variables at their defaults, no
// trailing "/"; "" for none or a relative path) and the origin of a
// server ("" if its URL is relative) — the rules authz/export's
// CheckOpenAPI applies.
func serverURL(srv *openapi3.Server) (base, origin string) {
	if srv == nil {
		return "", ""
	}
	raw := srv.URL
	for name, v := range srv.Variables {
		if v != nil {
			raw = strings.ReplaceAll(raw, "{"+name+"}", v.Default)
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", ""
	}
	if u.Scheme != "" && u.Host != "" && !strings.ContainsAny(u.Host, "{}") {
		origin = u.Scheme + "://" + u.Host
	}
	p := strings.TrimRight(u.EscapedPath(), "/")
	if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "{}") {
		p = ""
	}
	return p, origin
}

// behaviourOf is what an operation's method does to the state behind it.
func behaviourOf(method string) (behaviour.Behaviour, bool) {
	switch method {
	case http.MethodGet, http.MethodHead:
		return behaviour.ReadOnly, false
	case http.MethodPost:
		return behaviour.Additive, false
	case http.MethodPut, http.MethodDelete:
		return behaviour.Destructive, true
	}
	return behaviour.Destructive, false // PATCH
}

// maxDescription bounds a tool's description: a model reads every tool's
// in tools/list.
const maxDescription = 1024

// description is a tool's description: the summary, then the
// description, cut at a paragraph, sentence or word near maxDescription.
func description(o *op, route tool.Route, service string) string {
	summary := strings.TrimSpace(o.op.Summary)
	if summary == "" {
		summary = strings.TrimSpace(o.item.Summary)
	}
	desc := strings.TrimSpace(o.op.Description)
	if desc == "" {
		desc = strings.TrimSpace(o.item.Description)
	}
	var text string
	switch {
	case summary == "" && desc == "":
		text = fmt.Sprintf("Sends %s %s to the %s service.", route.Method, route.ServicePath(), service)
	case desc == "" || strings.HasPrefix(desc, summary):
		text = cmp.Or(desc, summary)
	case summary == "":
		text = desc
	default:
		text = summary + "\n\n" + desc
	}
	text = strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n")
	if o.op.Deprecated {
		text += "\n\nDeprecated."
	}
	return cutText(text, maxDescription)
}

// cutText shortens text to at most max runes: at the last paragraph
// break or sentence end in its second half, else at a word, with "…".
func cutText(text string, max int) string {
	r := []rune(text)
	if len(r) <= max {
		return text
	}
	short := string(r[:max-1])
	if i := strings.LastIndex(short, "\n\n"); i > len(short)/2 {
		return strings.TrimSpace(short[:i])
	}
	if i := strings.LastIndex(short, ". "); i > len(short)/2 {
		return short[:i+1]
	}
	if i := strings.LastIndexAny(short, " \n"); i > len(short)/2 {
		short = short[:i]
	}
	return strings.TrimRight(short, " \n.,;:") + "…"
}
