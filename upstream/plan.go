package upstream

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/toolroute/toolroute/tool"
)

// place is where a field of In goes in the request.
type place uint8

const (
	inPath   place = iota + 1 // a route placeholder
	inQuery                   // a query parameter
	inHeader                  // a request header
	inBody                    // the whole JSON body
	inProp                    // a property of the JSON object body
)

var placeNames = map[string]place{"path": inPath, "query": inQuery, "header": inHeader, "body": inBody}

// field is one field of In that the request carries.
type field struct {
	index  []int        // in In (through embedded structs)
	typ    reflect.Type // the field's type
	goName string       // for messages
	name   string       // the JSON name: placeholder, query key, header name or property
	opts   string       // the json tag's options (",omitempty,string"), for a body property
	at     place
	omit   bool   // omitempty or omitzero: a zero value is left out
	media  string // an in:"body" field's media type, "" for application/json
	comma  bool   // a query or header list sent as one comma-separated value
	// format writes the field's value v as text: one segment, query
	// value or header value; for a list, one per element. ok is false
	// for a value to leave out (a nil pointer).
	format func(v reflect.Value, add func(string)) error
}

// plan is how a request on route is built from a value of in: made once
// per (In type, route), checked where it is made.
type plan struct {
	route  tool.Route
	key    string // the service key: the route's first segment
	in     reflect.Type
	path   []*field // in the route's placeholder order
	query  []*field
	header []*field
	props  []*field     // the JSON object body's properties
	body   *field       // the in:"body" field
	object reflect.Type // a struct of props alone, to encode the body with
	err    error
}

// newPlan returns the plan of requests on r from values of in (a struct
// type, or a pointer to one; nil: no value). Its err holds every problem
// of the pair, one error each, joined.
func newPlan(r tool.Route, in reflect.Type) *plan {
	p := &plan{route: r, in: in}
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	defer func() { p.err = onRoute(r, errors.Join(errs...)) }()
	if err := r.Validate(); err != nil {
		fail("invalid %v", err)
		return p
	}
	p.key, _, _ = strings.Cut(r.URI[1:], "/")
	holders := r.Placeholders()
	var fields []*field
	if in != nil {
		for in.Kind() == reflect.Pointer {
			in = in.Elem()
		}
		if in.Kind() != reflect.Struct {
			fail("In type %s is not a struct: its fields are the request's path, query, headers and body", p.in)
			return p
		}
		fields = structFields(in, fail)
	}
	typeName := "In"
	if p.in != nil {
		typeName = p.in.String()
	}
	claimed := map[string]*field{} // placeholders named by a field of another place
	seen := map[place]map[string]*field{}
	for _, f := range fields {
		isHolder := slices.Contains(holders, f.name)
		switch {
		case f.at == inPath && !isHolder:
			fail("field %s of %s (json %q) is in:\"path\", but the route has no placeholder {%s}", f.goName, typeName, f.name, f.name)
			continue
		case f.at == inPath:
		case f.at == 0 && isHolder:
			f.at = inPath
		case f.at == 0:
			f.at = inProp
		case isHolder:
			fail("field %s of %s (json %q) is in:%q, but the route names {%s} as a path placeholder: fill it with an untagged or in:\"path\" field", f.goName, typeName, f.name, placeName(f.at), f.name)
			claimed[f.name] = f
			continue
		}
		key := f.name
		if f.at == inHeader {
			key = http.CanonicalHeaderKey(f.name)
		}
		if prev := seen[f.at][key]; prev != nil {
			fail("fields %s and %s of %s both give the %s %q", prev.goName, f.goName, typeName, placeName(f.at), f.name)
			continue
		}
		if seen[f.at] == nil {
			seen[f.at] = map[string]*field{}
		}
		seen[f.at][key] = f
		var err error
		switch f.at {
		case inPath:
			f.format, err = segmentFormat(f.typ)
		case inQuery, inHeader:
			f.format, err = listFormat(f.typ)
			if err == nil && f.comma {
				f.format = joined(f.format)
			}
		}
		if err != nil {
			fail("field %s of %s (json %q, in:%q): %v", f.goName, typeName, f.name, placeName(f.at), err)
			continue
		}
		if f.at == inHeader {
			if err := checkHeaderName(f.name); err != nil {
				fail("field %s of %s: %v", f.goName, typeName, err)
				continue
			}
		}
		switch f.at {
		case inPath:
		case inQuery:
			p.query = append(p.query, f)
		case inHeader:
			p.header = append(p.header, f)
		case inBody:
			if p.body != nil {
				fail("fields %s and %s of %s are both in:\"body\": one field is the whole body", p.body.goName, f.goName, typeName)
				continue
			}
			p.body = f
		case inProp:
			p.props = append(p.props, f)
		}
	}
	for _, name := range holders {
		f := seen[inPath][name]
		if f == nil {
			if claimed[name] == nil {
				fail("placeholder {%s} has no field in %s: add one with json:%q (untagged or in:\"path\")", name, typeName, name)
			}
			continue
		}
		p.path = append(p.path, f)
	}
	if !bodyMethod(r.Method) {
		var names []string
		for _, f := range p.props {
			names = append(names, fmt.Sprintf("%s of %s (json %q)", f.goName, typeName, f.name))
		}
		switch len(names) {
		case 0:
		case 1:
			fail("field %s would be a property of the JSON body, but a %s request carries none: tag it in:\"query\" or in:\"header\", or leave it out of %s", names[0], r.Method, typeName)
		default:
			fail("fields %s would be properties of the JSON body, but a %s request carries none: tag them in:\"query\" or in:\"header\", or leave them out of %s", strings.Join(names, ", "), r.Method, typeName)
		}
		if p.body != nil {
			fail("field %s of %s is in:\"body\", but a %s request carries none", p.body.goName, typeName, r.Method)
		}
		p.props, p.body = nil, nil
	}
	if p.body != nil && len(p.props) > 0 {
		var names []string
		for _, f := range p.props {
			names = append(names, f.goName)
		}
		fail("field %s of %s is in:\"body\", the whole body, but %s would be properties of it: tag them in:\"query\" or in:\"header\", or move them into %s's type", p.body.goName, typeName, strings.Join(names, ", "), p.body.goName)
		p.props = nil
	}
	if len(p.props) > 0 {
		sf := make([]reflect.StructField, len(p.props))
		for i, f := range p.props {
			sf[i] = reflect.StructField{Name: "F" + strconv.Itoa(i), Type: f.typ, Tag: reflect.StructTag("json:" + strconv.Quote(f.name+f.opts))}
		}
		p.object = reflect.StructOf(sf)
	}
	return p
}

func placeName(at place) string {
	switch at {
	case inPath:
		return "path"
	case inQuery:
		return "query"
	case inHeader:
		return "header"
	case inBody:
		return "body"
	}
	return "body property"
}

// bodyMethod reports whether a request of method carries a body.
func bodyMethod(method string) bool {
	return method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch
}

// structFields returns the fields of the struct type t that
// encoding/json reads and writes, as it finds them (embedded structs
// without a name of their own are flattened; a shallower field hides a
// deeper one of the same name).
func structFields(t reflect.Type, fail func(string, ...any)) []*field {
	var out []*field
	depth := map[string]int{}
	var walk func(t reflect.Type, prefix []int)
	walk = func(t reflect.Type, prefix []int) {
		type nested struct {
			t     reflect.Type
			index []int
		}
		var embedded []nested
		for i := range t.NumField() {
			sf := t.Field(i)
			index := append(slices.Clip(prefix), i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, hasOpts := strings.Cut(tag, ",")
			ft := sf.Type
			if sf.Anonymous {
				et := ft
				if et.Kind() == reflect.Pointer {
					et = et.Elem()
				}
				if name == "" && et.Kind() == reflect.Struct {
					embedded = append(embedded, nested{et, index})
					continue
				}
				if !sf.IsExported() {
					continue
				}
			} else if !sf.IsExported() {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			f := &field{index: index, typ: ft, goName: sf.Name, name: name}
			if hasOpts {
				f.opts = "," + opts
			}
			for o := range strings.SplitSeq(opts, ",") {
				if o == "omitempty" || o == "omitzero" {
					f.omit = true
				}
			}
			if in, ok := sf.Tag.Lookup("in"); ok {
				where, opt, hasOpt := strings.Cut(in, ",")
				at, known := placeNames[where]
				if !known {
					fail("field %s of %s has the tag in:%q: want in:\"path\", in:\"query\", in:\"header\" or in:\"body\" (untagged: a property of the JSON body)", sf.Name, t, in)
					continue
				}
				if hasOpt {
					var err error
					switch {
					case at == inBody:
						err = checkMedia(opt)
						f.media = opt
					case at != inQuery && at != inHeader:
						err = fmt.Errorf("an in:\"path\" field takes no option")
					case opt != "comma":
						err = fmt.Errorf("the one option of a query or header field is \"comma\" (a list sent as one comma-separated value); a media type is an in:\"body\" field's")
					case ft.Kind() != reflect.Slice && ft.Kind() != reflect.Array:
						err = fmt.Errorf("\"comma\" joins a list, and %s is none: use a slice", ft)
					default:
						f.comma = true
					}
					if err != nil {
						fail("field %s of %s has the tag in:%q: %v", sf.Name, t, in, err)
						continue
					}
				}
				f.at = at
			}
			if d, ok := depth[name]; ok {
				if d == len(index) {
					fail("fields of %s named %q twice (json hides both): rename one", t, name)
				}
				continue // the shallower one wins, as in encoding/json
			}
			depth[name] = len(index)
			out = append(out, f)
		}
		for _, e := range embedded {
			walk(e.t, e.index)
		}
	}
	walk(t, nil)
	return out
}

// checkMedia refuses a body's media type that is not a JSON one:
// application/json or a type with the suffix +json (RFC 6839), such as
// application/json-patch+json (RFC 6902) and
// application/merge-patch+json (RFC 7396), which the body is encoded as.
func checkMedia(media string) error {
	mt, _, err := mime.ParseMediaType(media)
	switch {
	case err != nil:
		return fmt.Errorf("the body's media type %q does not parse: %v", media, err)
	case !isJSON(mt):
		return fmt.Errorf("the body's media type %q is not application/json or a +json type: the body is encoded as JSON", media)
	}
	return nil
}

var textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()

// segmentFormat returns the formatter of a path field of type t: a
// string, integer or bool kind (or a named type of one); nil and an
// error for any other.
func segmentFormat(t reflect.Type) (func(reflect.Value, func(string)) error, error) {
	if scalarKind(t.Kind()) && !isFloat(t.Kind()) {
		return func(v reflect.Value, add func(string)) error {
			add(scalar(v))
			return nil
		}, nil
	}
	return nil, fmt.Errorf("type %s does not format as one path segment: use a string, integer or bool type (or a named type of one)", t)
}

// listFormat returns the formatter of a query or header field of type t:
// a string, integer, float or bool kind, a type with a MarshalText
// method, a pointer to one of those (nil: left out), or a slice or array
// of them (one value each: the key repeats).
func listFormat(t reflect.Type) (func(reflect.Value, func(string)) error, error) {
	one, err := valueFormat(t)
	if err == nil {
		return one, nil
	}
	if (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && t.Elem().Kind() != reflect.Uint8 {
		elem, err := valueFormat(t.Elem())
		if err != nil {
			return nil, err
		}
		return func(v reflect.Value, add func(string)) error {
			for i := range v.Len() {
				if err := elem(v.Index(i), add); err != nil {
					return err
				}
			}
			return nil
		}, nil
	}
	return nil, err
}

// joined returns the formatter of a list sent as one value, its
// elements (as each formats) separated by commas, as OpenAPI's form
// style with explode: false and its simple style write a list: an
// element that holds a comma could not be told from two, and is
// refused; an empty list is left out.
func joined(each func(reflect.Value, func(string)) error) func(reflect.Value, func(string)) error {
	return func(v reflect.Value, add func(string)) error {
		var parts []string
		var bad error
		err := each(v, func(s string) {
			if strings.Contains(s, ",") && bad == nil {
				bad = fmt.Errorf("the value %q holds a comma, which separates the values of this list", s)
			}
			parts = append(parts, s)
		})
		if err = errors.Join(err, bad); err != nil {
			return err
		}
		if len(parts) > 0 {
			add(strings.Join(parts, ","))
		}
		return nil
	}
}

func valueFormat(t reflect.Type) (func(reflect.Value, func(string)) error, error) {
	switch {
	case t.Implements(textMarshaler):
		return func(v reflect.Value, add func(string)) error {
			if v.Kind() == reflect.Pointer && v.IsNil() {
				return nil
			}
			text, err := v.Interface().(encoding.TextMarshaler).MarshalText()
			if err != nil {
				return err
			}
			add(string(text))
			return nil
		}, nil
	case reflect.PointerTo(t).Implements(textMarshaler):
		return func(v reflect.Value, add func(string)) error {
			if !v.CanAddr() {
				c := reflect.New(t).Elem()
				c.Set(v)
				v = c
			}
			text, err := v.Addr().Interface().(encoding.TextMarshaler).MarshalText()
			if err != nil {
				return err
			}
			add(string(text))
			return nil
		}, nil
	case scalarKind(t.Kind()):
		return func(v reflect.Value, add func(string)) error {
			add(scalar(v))
			return nil
		}, nil
	case t.Kind() == reflect.Pointer:
		elem, err := valueFormat(t.Elem())
		if err != nil {
			return nil, err
		}
		return func(v reflect.Value, add func(string)) error {
			if v.IsNil() {
				return nil
			}
			return elem(v.Elem(), add)
		}, nil
	}
	return nil, fmt.Errorf("type %s does not format as a parameter value: use a string, integer, float or bool type, a type with a MarshalText method, a pointer to one, or a slice of them", t)
}

func scalarKind(k reflect.Kind) bool {
	switch k {
	case reflect.String, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

func isFloat(k reflect.Kind) bool { return k == reflect.Float32 || k == reflect.Float64 }

// scalar formats a value of a scalarKind as text: a string as it is,
// numbers in decimal (floats without an exponent), bools as "true" and
// "false".
func scalar(v reflect.Value) string {
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10)
	case reflect.Float32:
		return strconv.FormatFloat(v.Float(), 'f', -1, 32)
	}
	return strconv.FormatFloat(v.Float(), 'f', -1, 64)
}

// ownedHeaders are the request headers a field may not give: the
// transport's (framing, the connection, the credentials it adds or
// forwards) and the body's type.
var ownedHeaders = []string{
	"Authorization", "Connection", "Content-Length", "Content-Type", "Cookie", "Host", "Keep-Alive",
	"Proxy-Authorization", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// checkHeaderName refuses a header name that is not an HTTP token, or
// one of ownedHeaders.
func checkHeaderName(name string) error {
	if name == "" || strings.ContainsFunc(name, func(c rune) bool {
		return c >= 0x7f || c <= ' ' || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", c)
	}) {
		return fmt.Errorf("in:\"header\" name %q is not an HTTP header name (letters, digits and !#$%%&'*+-.^_`|~)", name)
	}
	if slices.Contains(ownedHeaders, http.CanonicalHeaderKey(name)) {
		return fmt.Errorf("in:\"header\" %q is the transport's to set (it adds the caller's credentials, the body's type and the framing): leave it out", name)
	}
	return nil
}

// outBody returns the index of the field of Out's type t that an answer
// decodes into whole (its one field tagged in:"body"), nil if the answer
// is Out itself, and what is wrong with t's in tags.
func outBody(t reflect.Type) ([]int, error) {
	if t == nil {
		return nil, nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, nil
	}
	var index []int
	var errs []error
	for i := range t.NumField() {
		sf := t.Field(i)
		in, ok := sf.Tag.Lookup("in")
		if !ok {
			continue
		}
		switch {
		case in != "body":
			errs = append(errs, fmt.Errorf("field %s of the result type %s has the tag in:%q: a result's field may only be in:\"body\" (the whole answer decodes into it)", sf.Name, t, in))
		case !sf.IsExported():
			errs = append(errs, fmt.Errorf("field %s of the result type %s is in:\"body\" but not exported", sf.Name, t))
		case index != nil:
			errs = append(errs, fmt.Errorf("fields %s and %s of the result type %s are both in:\"body\": the answer decodes into one", t.FieldByIndex(index).Name, sf.Name, t))
		default:
			index = []int{i}
		}
	}
	return index, errors.Join(errs...)
}

// plans caches Call's plans by route and In type.
var plans sync.Map // planKey → *plan

type planKey struct {
	route tool.Route
	in    reflect.Type
}

// planFor returns the plan of requests on r from values of in, made once.
func planFor(r tool.Route, in reflect.Type) *plan {
	k := planKey{r, in}
	if p, ok := plans.Load(k); ok {
		return p.(*plan)
	}
	p, _ := plans.LoadOrStore(k, newPlan(r, in))
	return p.(*plan)
}

// outs caches Call's result types' body fields.
var outs sync.Map // reflect.Type → outInfo

type outInfo struct {
	index []int
	err   error
}

func outFor(t reflect.Type) outInfo {
	if o, ok := outs.Load(t); ok {
		return o.(outInfo)
	}
	index, err := outBody(t)
	o, _ := outs.LoadOrStore(t, outInfo{index, err})
	return o.(outInfo)
}

// encodeProps returns the JSON object body of the props of in.
func (p *plan) encodeProps(in reflect.Value) ([]byte, error) {
	obj := reflect.New(p.object).Elem()
	for i, f := range p.props {
		v, err := in.FieldByIndexErr(f.index)
		if err != nil {
			continue // a nil embedded pointer: the field is absent
		}
		obj.Field(i).Set(v)
	}
	return json.Marshal(obj.Interface())
}
