package gen

import (
	"errors"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/toolroute/toolroute/tool"
)

// param is a parameter that becomes a field of a tool's input.
type param struct {
	p    *openapi3.Parameter
	json string // the field's JSON name: the placeholder, query key or header name
}

// bodyMode is how a request body reaches the tool's input.
type bodyMode int

const (
	noBody   bodyMode = iota
	flatBody          // the object's properties are the input's untagged fields
	oneBody           // one in:"body" field holds the whole body
)

// plan is what an operation's tool takes and returns, decided before any
// type is declared (so that a skipped operation declares none).
type plan struct {
	path     []param // in the path's order
	others   []param // query and header, in the document's order
	body     bodyMode
	bodyRef  *openapi3.SchemaRef
	bodyReq  bool
	bodyJSON string // the in:"body" field's name
	bodyDesc string
	// bodyMedia is the body's media type when it is a JSON one other
	// than application/json (application/json-patch+json), "" otherwise.
	bodyMedia string
	out       *openapi3.SchemaRef // nil: an empty result
	hasOut    bool
	route     tool.Route
}

// tool analyses one operation; an error says why it is skipped.
func (s *Spec) tool(o *op, names *namespace) (Tool, []Skip, error) {
	pl, notes, err := s.plan(o)
	if err != nil {
		return Tool{}, notes, err
	}
	b, idem := behaviourOf(o.method)
	t := Tool{
		Name: o.name, Operation: o.label, Method: o.method, Path: o.path, Route: pl.route,
		Behaviour: b, Idempotent: idem, File: fileBase(o.name) + ".go",
	}
	t.Description = description(o, pl.route, s.Service)
	camel := exported(o.name, "Op")
	t.routeVar = names.claim(camel + "Route")
	t.in = names.claim(camel + "Input")

	m := s.mapper
	m.file = t.File
	first := len(m.order)
	in := &decl{name: t.in, isStruct: true, file: t.File, doc: fmt.Sprintf("%s is the arguments of %s: %s.", t.in, t.Name, o.label)}
	m.declare(in)
	for _, p := range append(slices.Clone(pl.path), pl.others...) {
		in.fields = append(in.fields, s.paramField(p, t.in))
	}
	switch pl.body {
	case flatBody:
		skip := func(p property) bool { return readOnly(p.ref) }
		// The properties keep their schema's required list even when the
		// body itself is optional: upstream.Forward always sends the
		// object, and an object missing a required property is invalid
		// (Box's API, which never marks a body required, showed it).
		in.fields = append(in.fields, m.fields(t.in, pl.bodyRef.Value, skip, false)...)
	case oneBody:
		bt := m.typeOf(pl.bodyRef, t.in+"Body")
		f := fieldFor("Body", pl.bodyJSON, bt, pl.bodyReq, "body")
		if f.desc == "" {
			f.desc = oneLine(pl.bodyDesc, 300)
		}
		if f.desc == "" {
			f.desc = "the request body"
		}
		f.name = exported(pl.bodyJSON, "Body")
		if pl.bodyMedia != "" {
			f.in = "body," + pl.bodyMedia
		}
		in.fields = append(in.fields, f)
	}
	uniqueFieldNames(in.fields)
	switch {
	case !pl.hasOut:
		t.out = names.claim(camel + "Output")
		m.declare(&decl{name: t.out, isStruct: true, file: t.File, doc: fmt.Sprintf("%s is the result of %s: the operation answers no JSON body.", t.out, t.Name)})
	case m.objectUnion(pl.out.Value):
		// One of several objects: a structured result is an object, and
		// a union's schema is none; the answer's properties as they came.
		t.out = names.claim(camel + "Output")
		m.declare(&decl{name: t.out, file: t.File, underlying: "map[string]json.RawMessage",
			doc: fmt.Sprintf("%s is the result of %s: an answer of one of several object schemas, its properties as the upstream sent them.", t.out, t.Name)})
	case component(pl.out.Ref) != "" && m.comps[component(pl.out.Ref)] != "" && (m.kindOf(pl.out.Value, nil) == kindStruct || m.kindOf(pl.out.Value, nil) == kindMap):
		t.out = m.typeOf(pl.out, "").expr
	default:
		t.out = names.claim(camel + "Output")
		switch m.kindOf(pl.out.Value, nil) {
		case kindStruct:
			m.declareStruct(t.out, pl.out.Value, fmt.Sprintf("%s is the result of %s.", t.out, t.Name), nil)
		case kindMap:
			mt := m.inline(pl.out.Value, t.out)
			m.declare(&decl{name: t.out, file: t.File, underlying: mt.expr, doc: fmt.Sprintf("%s is the result of %s.", t.out, t.Name)})
		default:
			// Not an object: the result wraps it, as a structured result
			// must be an object.
			wrap := "Value"
			key := "value"
			if m.kindOf(pl.out.Value, nil) == kindSlice {
				wrap, key = "Items", "items"
			}
			vt := m.typeOf(pl.out, t.out+wrap)
			f := fieldFor(wrap, key, vt, true, "body")
			if f.desc == "" {
				f.desc = "the operation's answer"
			}
			m.declare(&decl{name: t.out, isStruct: true, file: t.File, fields: []field{f},
				doc: fmt.Sprintf("%s is the result of %s: the answer, which is not a JSON object, in %s (a structured result is an object; the answer decodes into the in:\"body\" field).", t.out, t.Name, key)})
		}
	}
	for _, name := range m.order[first:] {
		if d := m.declared[name]; d.file == t.File {
			t.decls = append(t.decls, d)
		}
	}
	return t, notes, nil
}

// uniqueFieldNames renames fields whose Go names repeat an earlier
// field's (a path and a query parameter may both be PetID), appending
// numbers.
func uniqueFieldNames(fs []field) {
	ns := newNamespace("")
	for i := range fs {
		if fs[i].json != "" {
			fs[i].name = ns.claim(fs[i].name)
		}
	}
}

// readOnly reports whether a property is only ever sent by the server
// (left out of request bodies).
func readOnly(ref *openapi3.SchemaRef) bool {
	return ref != nil && ref.Value != nil && ref.Value.ReadOnly
}

// plan decides an operation's tool, or says why there is none.
func (s *Spec) plan(o *op) (plan, []Skip, error) {
	var pl plan
	var notes []Skip
	note := func(format string, args ...any) { notes = append(notes, Skip{o.label, fmt.Sprintf(format, args...)}) }
	m := s.mapper

	// The path: whole-segment placeholders, renamed to identifiers.
	if !strings.HasPrefix(o.path, "/") {
		return pl, notes, fmt.Errorf("path %q does not start with \"/\"", o.path)
	}
	// A "#fragment" tells operations on one path apart (Box's
	// "/files/{file_id}#get_shared_link"); a request never carries it, so
	// the route is the path before it. A query has no such reading.
	path, _, _ := strings.Cut(o.path, "#")
	if i := strings.IndexByte(path, '?'); i >= 0 {
		return pl, notes, fmt.Errorf("the path holds %q: a route, as a request's path, has no query", path[i:])
	}
	// Servers of the operation's own: its requests go elsewhere.
	servers := o.item.Servers
	if o.op.Servers != nil {
		servers = *o.op.Servers
	}
	if len(servers) > 0 {
		if base, origin := serverURL(servers[0]); base != s.BasePath || origin != s.Origin {
			return pl, notes, fmt.Errorf("it names a server of its own (%s), not the document's first: its requests go elsewhere than the service's (generate a service for that server)", servers[0].URL)
		}
	}
	params := mergeParams(o.item.Parameters, o.op.Parameters)
	jsonNames := newNamespace("_")
	var uri strings.Builder
	for _, seg := range strings.Split(path[1:], "/") {
		uri.WriteByte('/')
		if !strings.ContainsAny(seg, "{}") {
			uri.WriteString(seg)
			continue
		}
		name, ok := strings.CutPrefix(seg, "{")
		name, ok2 := strings.CutSuffix(name, "}")
		if !ok || !ok2 || name == "" || strings.ContainsAny(name, "{}") {
			return pl, notes, fmt.Errorf("path segment %q: a path parameter must be a whole segment (a route placeholder stands for one segment)", seg)
		}
		p := findParam(params, openapi3.ParameterInPath, name)
		if p == nil {
			return pl, notes, fmt.Errorf("path parameter {%s} is not declared among the operation's parameters", name)
		}
		if err := checkPathParam(m, p); err != nil {
			return pl, notes, fmt.Errorf("path parameter {%s}: %w", name, err)
		}
		ident := snake(name)
		if ident == "" || isDigit(rune(ident[0])) {
			ident = "p_" + ident
		}
		if isIdent(name) {
			ident = name
		}
		ident = jsonNames.claim(ident)
		pl.path = append(pl.path, param{p: p, json: ident})
		uri.WriteString("{" + ident + "}")
	}
	for _, p := range params {
		if p.In == openapi3.ParameterInPath && !slices.ContainsFunc(pl.path, func(q param) bool { return q.p == p }) {
			return pl, notes, fmt.Errorf("path parameter %q is not in the path", p.Name)
		}
	}
	// "/" is the service's root, the route /KEY/; a trailing "/" stays
	// (a route may end in one).
	full := s.BasePath + uri.String()
	pl.route = tool.ServiceRoute(s.Service, o.method, full)
	if err := pl.route.Validate(); err != nil {
		return pl, notes, err
	}

	// Query and header parameters.
	taken := map[string]string{} // JSON name → where
	for _, p := range pl.path {
		taken[p.json] = "the path parameter {" + p.p.Name + "}"
	}
	for _, p := range params {
		if p.In == openapi3.ParameterInPath {
			continue
		}
		what := p.In + " parameter " + strconv.Quote(p.Name)
		why := checkParam(m, p)
		if why == "" {
			if prev, dup := taken[p.Name]; dup {
				why = fmt.Sprintf("its name is also %s's, and a tool argument has one name", prev)
			}
		}
		if why != "" {
			if p.Required {
				return pl, notes, fmt.Errorf("%s (required): %s", what, why)
			}
			note("%s left out: %s", what, why)
			continue
		}
		taken[p.Name] = "the " + what
		jsonNames.claim(p.Name)
		pl.others = append(pl.others, param{p: p, json: p.Name})
	}

	// The request body.
	if rb := o.op.RequestBody; rb != nil && rb.Value != nil {
		body := rb.Value
		mt, types := jsonMedia(body.Content)
		switch {
		case o.method == http.MethodGet || o.method == http.MethodHead || o.method == http.MethodDelete:
			if body.Required {
				return pl, notes, fmt.Errorf("request body (required): upstream.Forward sends no body on %s", o.method)
			}
			note("request body left out: upstream.Forward sends no body on %s", o.method)
		case mt == nil && len(types) > 0:
			why := fmt.Sprintf("content type %s is not supported (upstream.Forward sends JSON)", strings.Join(types, ", "))
			if body.Required {
				return pl, notes, fmt.Errorf("request body: %s", why)
			}
			note("request body left out: %s", why)
		case mt != nil:
			ct := mediaName(body.Content, mt)
			switch name, _, _ := mime.ParseMediaType(ct); {
			case name == "application/json":
			case strings.HasSuffix(name, "+json"):
				// A JSON media type of its own (a JSON Patch, a merge
				// patch): the in:"body" field says it.
				pl.bodyMedia = name
			default:
				note("request body sent as application/json (the document says %s)", ct)
			}
			pl.bodyRef, pl.bodyReq, pl.bodyDesc = mt.Schema, body.Required, body.Description
			if pl.bodyRef == nil {
				pl.bodyRef = &openapi3.SchemaRef{Value: &openapi3.Schema{}}
			}
			pl.body = oneBody
			if pl.bodyMedia == "" && m.kindOf(pl.bodyRef.Value, nil) == kindStruct && flattens(pl.bodyRef.Value, taken) {
				pl.body = flatBody
			} else {
				pl.bodyJSON = "body"
				if _, dup := taken["body"]; dup {
					pl.bodyJSON = "request_body"
				}
				pl.bodyJSON = jsonNames.claim(pl.bodyJSON)
			}
		}
	}

	// The result.
	if o.method == http.MethodHead {
		return pl, notes, nil // no body
	}
	ref, why := response(o.op.Responses)
	if why != "" {
		return pl, notes, errors.New(why)
	}
	if ref != nil {
		pl.out, pl.hasOut = ref, true
	}
	return pl, notes, nil
}

// flattens reports whether the properties of a request body s can be the
// input's own fields: none of them is named like a parameter, and
// encoding/json can name each.
func flattens(s *openapi3.Schema, taken map[string]string) bool {
	props := properties(s)
	if len(props) == 0 {
		return false
	}
	for _, p := range props {
		if _, dup := taken[p.name]; dup || !validJSONName(p.name) {
			return false
		}
	}
	return true
}

// mergeParams is an operation's parameters: the path item's, overridden
// by the operation's of the same name and location; the operation's
// first, in the document's order.
func mergeParams(item, op openapi3.Parameters) []*openapi3.Parameter {
	var out []*openapi3.Parameter
	for _, list := range []openapi3.Parameters{op, item} {
		for _, r := range list {
			if r == nil || r.Value == nil {
				continue
			}
			if findParam(out, r.Value.In, r.Value.Name) == nil {
				out = append(out, r.Value)
			}
		}
	}
	return out
}

func findParam(ps []*openapi3.Parameter, in, name string) *openapi3.Parameter {
	for _, p := range ps {
		if p.In == in && p.Name == name {
			return p
		}
	}
	return nil
}

// checkPathParam refuses a path parameter that is not one plain value.
func checkPathParam(m *mapper, p *openapi3.Parameter) error {
	if p.Style != "" && p.Style != openapi3.SerializationSimple {
		return fmt.Errorf("style %q: only the simple style (the value itself) fits a route placeholder", p.Style)
	}
	if p.Schema == nil {
		return errors.New("it has no schema (a content-encoded parameter): only a plain value fits a route placeholder")
	}
	if k := m.kindOf(p.Schema.Value, nil); !k.scalar() {
		return errors.New("it is not a string, number or boolean: a route placeholder takes one plain value")
	}
	return nil
}

// ignoredHeaders are the header parameters left out: those OpenAPI says
// to ignore (Accept, Content-Type, Authorization), and those upstream
// typed calls leave to the transport (the caller's credentials, the
// framing).
var ignoredHeaders = []string{
	"Accept", "Authorization", "Connection", "Content-Length", "Content-Type", "Cookie", "Host", "Keep-Alive",
	"Proxy-Authorization", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// checkParam says why a query, header or cookie parameter cannot be a
// tool argument, or "".
func checkParam(m *mapper, p *openapi3.Parameter) string {
	switch p.In {
	case openapi3.ParameterInCookie:
		return "cookie parameters are not supported (upstream.Forward sends no cookies)"
	case openapi3.ParameterInHeader:
		if slices.ContainsFunc(ignoredHeaders, func(h string) bool { return strings.EqualFold(h, p.Name) }) {
			return "the header " + p.Name + " is the HTTP client's to set"
		}
		if p.Name == "" || strings.ContainsFunc(p.Name, func(c rune) bool {
			return c >= 0x7f || c <= ' ' || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", c)
		}) {
			return "its name is not an HTTP header name"
		}
	case openapi3.ParameterInQuery:
	default:
		return fmt.Sprintf("location %q is not path, query, header or cookie", p.In)
	}
	if !validJSONName(p.Name) {
		return "encoding/json cannot name a tool argument so"
	}
	if p.Schema == nil {
		return "a content-encoded parameter (content instead of schema) is not supported"
	}
	k := m.kindOf(p.Schema.Value, nil)
	if k == kindSlice {
		if items := p.Schema.Value.Items; items == nil || !m.kindOf(items.Value, nil).scalar() {
			return "a list of values that are not strings, numbers or booleans is not supported"
		}
	}
	if p.In == openapi3.ParameterInHeader {
		if p.Style != "" && p.Style != openapi3.SerializationSimple {
			return fmt.Sprintf("style %q is not supported", p.Style)
		}
		if !k.scalar() && k != kindSlice {
			return "only a string, number, boolean or list header is supported"
		}
		return ""
	}
	if p.Style != "" && p.Style != openapi3.SerializationForm {
		return fmt.Sprintf("style %q is not supported (upstream.Forward writes form style: key=value, a list as repeated keys)", p.Style)
	}
	if !k.scalar() && k != kindSlice {
		return "an object query parameter is not supported"
	}
	return ""
}

// commaList reports whether p is a list sent as one comma-separated
// value: a header (simple style), or a query parameter with explode:
// false. Its tool argument is a typed list, in:"query,comma" or
// in:"header,comma".
func commaList(m *mapper, p *openapi3.Parameter) bool {
	if m.kindOf(p.Schema.Value, nil) != kindSlice {
		return false
	}
	return p.In == openapi3.ParameterInHeader || p.In == openapi3.ParameterInQuery && p.Explode != nil && !*p.Explode
}

// jsonMedia picks the JSON media type of content (application/json, else
// the first */*+json, else */*), and lists the types otherwise.
func jsonMedia(content openapi3.Content) (*openapi3.MediaType, []string) {
	types := slices.Sorted(maps.Keys(content))
	best := ""
	rank := 0
	for _, t := range types {
		mt, _, err := mime.ParseMediaType(t)
		if err != nil {
			continue
		}
		r := 0
		switch {
		case mt == "application/json":
			r = 3
		case strings.HasSuffix(mt, "+json"):
			r = 2
		case mt == "*/*" || mt == "application/*":
			r = 1
		}
		if r > rank {
			best, rank = t, r
		}
	}
	if best == "" {
		return nil, types
	}
	return content[best], types
}

// mediaName is the media type under which content holds mt.
func mediaName(content openapi3.Content, mt *openapi3.MediaType) string {
	for _, k := range slices.Sorted(maps.Keys(content)) {
		if content[k] == mt {
			return k
		}
	}
	return ""
}

// response returns the schema of an operation's successful JSON answer:
// that of the first 2xx response (200 first, "2XX" last) with JSON
// content; without a 2xx response, the default response's. nil with no
// reason: the operation answers no JSON (an empty result). A reason:
// its successful answer is not JSON.
func response(rs *openapi3.Responses) (*openapi3.SchemaRef, string) {
	all := rs.Map()
	var codes []string
	for code := range all {
		if len(code) == 3 && code[0] == '2' && (isDigit(rune(code[1])) && isDigit(rune(code[2])) || strings.EqualFold(code[1:], "XX")) {
			codes = append(codes, code)
		}
	}
	slices.SortFunc(codes, func(a, b string) int { return strings.Compare(strings.ToUpper(a), strings.ToUpper(b)) }) // digits before "X"
	if len(codes) == 0 && all["default"] != nil {
		codes = []string{"default"}
	}
	var other []string
	for _, code := range codes {
		r := all[code]
		if r == nil || r.Value == nil || len(r.Value.Content) == 0 {
			continue
		}
		mt, types := jsonMedia(r.Value.Content)
		if mt == nil {
			other = append(other, fmt.Sprintf("response %s: content type %s", code, strings.Join(types, ", ")))
			continue
		}
		if mt.Schema == nil {
			return &openapi3.SchemaRef{Value: exampleSchema(mt)}, ""
		}
		return mt.Schema, ""
	}
	if len(other) > 0 {
		return nil, strings.Join(other, "; ") + ": upstream.Forward decodes JSON answers only"
	}
	return nil, ""
}

// exampleSchema is the schema of an answer whose media type has none:
// an object of any properties when the document's examples of it (at
// least one) are all JSON objects, so that the result is the answer
// itself; any JSON otherwise, which the result wraps (its "value").
func exampleSchema(mt *openapi3.MediaType) *openapi3.Schema {
	var examples []any
	if mt.Example != nil {
		examples = append(examples, mt.Example)
	}
	for _, name := range slices.Sorted(maps.Keys(mt.Examples)) {
		if ex := mt.Examples[name]; ex != nil && ex.Value != nil && ex.Value.Value != nil {
			examples = append(examples, ex.Value.Value)
		}
	}
	if len(examples) == 0 {
		return &openapi3.Schema{}
	}
	for _, ex := range examples {
		if _, ok := ex.(map[string]any); !ok {
			return &openapi3.Schema{}
		}
	}
	return &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeObject}}
}

// paramField is the input field of a path, query or header parameter.
func (s *Spec) paramField(p param, owner string) field {
	m := s.mapper
	var t goType
	list := commaList(m, p.p)
	switch {
	case m.kindOf(p.p.Schema.Value, nil) == kindFloat && p.p.In == openapi3.ParameterInPath:
		// A placeholder formats integers, not floats: the model writes
		// the number.
		t = goType{expr: "string", kind: kindString, schema: &openapi3.Schema{Description: p.p.Schema.Value.Description}}
	default:
		t = m.typeOf(p.p.Schema, owner+exported(p.json, "Param"))
	}
	f := fieldFor(exported(p.json, "Param"), p.json, t, p.p.Required || p.p.In == openapi3.ParameterInPath, p.p.In)
	if p.p.In == openapi3.ParameterInPath && t.kind == kindString && (t.schema == nil || t.schema.MinLength == 0) {
		f.tags = strings.TrimPrefix(f.tags+",minLength=1", ",") // an empty segment cannot be bound
	}
	if d := oneLine(p.p.Description, 300); d != "" {
		f.desc = d
	}
	if list {
		f.in += ",comma" // one value, the items separated by commas
	}
	if p.p.Deprecated && !strings.HasPrefix(f.desc, "Deprecated.") {
		f.desc = strings.TrimSpace("Deprecated. " + f.desc)
	}
	return f
}
