package openapistub

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"
)

// Fold returns name with case and everything but letters and digits
// ignored: "petId", "pet_id" and "PetID" fold alike. A tool's argument
// takes a parameter whose name it equals or, failing that, folds alike.
func Fold(name string) string {
	var b strings.Builder
	for _, r := range name {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// ErrNoSerialization marks an argument that has no serialization in
// its parameter's style (an array of objects in a query, say): Expect
// cannot say what a client must send for it.
var ErrNoSerialization = errors.New("no serialization defined by OpenAPI")

// Expect returns the request that calling a tool for op with the
// arguments args must send, where input is the tool's input schema (as
// tools/list gives it). It follows the document, not any client:
//
//   - each path, query and header parameter takes the argument of the
//     same name, else the one whose name folds alike ([Fold]);
//   - the other arguments make the JSON body: if op's body is an object
//     none of whose properties folds alike with a parameter, and the
//     input schema's other properties are among the body's, they are
//     its properties; otherwise the input schema has one other property,
//     and its argument, if given, is the whole body (even {});
//   - a parameter or body property the schema does not require is left
//     out when its argument is its type's zero value (false, 0, "",
//     null, [] or {}), as an omitempty field is;
//   - a path value is escaped as one segment ([url.PathEscape]); a query
//     array repeats its key (the default form style with explode), or is
//     joined by "," (explode false), " " (spaceDelimited) or "|"
//     (pipeDelimited); a query object is one key per property (form,
//     explode), "p1,v1,p2,v2" (form) or "name[p1]=v1" (deepObject); a
//     header array is joined by ","; other shapes (an array of objects)
//     are errors that wrap [ErrNoSerialization];
//   - numbers are written as integers when they are ones.
//
// The Request's Path is the escaped path, RawQuery the query's
// [url.Values.Encode] (Diff compares queries as values), Body the JSON
// body and ContentType the document's media type for it.
func Expect(op *Operation, input *jsonschema.Schema, args map[string]any) (Request, error) {
	want := Request{Operation: op.ID, Method: op.Method}
	fail := func(format string, a ...any) (Request, error) {
		return Request{}, fmt.Errorf("openapistub: operation %s: "+format, append([]any{op.ID}, a...)...)
	}
	required := map[string]bool{}
	var names []string
	if input != nil {
		for _, r := range input.Required {
			required[r] = true
		}
		names = slices.Sorted(maps.Keys(input.Properties))
	}
	for name := range args {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)

	// Which argument each parameter takes.
	taken := map[string]*openapi3.Parameter{}
	for _, p := range op.Params {
		name := ""
		if slices.Contains(names, p.Name) {
			name = p.Name
		} else {
			for _, n := range names {
				if Fold(n) == Fold(p.Name) && taken[n] == nil {
					name = n
					break
				}
			}
		}
		if name == "" {
			if p.In == openapi3.ParameterInPath {
				return fail("path parameter %q has no argument (arguments: %s)", p.Name, strings.Join(names, ", "))
			}
			continue
		}
		if q := taken[name]; q != nil {
			return fail("argument %q would fill both %s parameter %q and %s parameter %q", name, q.In, q.Name, p.In, p.Name)
		}
		taken[name] = p
	}
	var rest []string // the arguments that are not parameters
	for _, n := range names {
		if taken[n] == nil {
			rest = append(rest, n)
		}
	}

	omitted := func(name string, v any) bool { return !required[name] && isZero(v) }
	path := op.Route
	query := url.Values{}
	for _, name := range names {
		p := taken[name]
		v, ok := args[name]
		if p == nil || !ok {
			continue
		}
		switch p.In {
		case openapi3.ParameterInPath:
			text, err := join(v, ",")
			if err != nil {
				return fail("path parameter %q: %w", p.Name, err)
			}
			path = strings.ReplaceAll(path, "{"+p.Name+"}", url.PathEscape(text))
		case openapi3.ParameterInQuery:
			if omitted(name, v) {
				continue
			}
			if err := addQuery(query, p, v); err != nil {
				return fail("query parameter %q: %w", p.Name, err)
			}
		case openapi3.ParameterInHeader:
			if omitted(name, v) {
				continue
			}
			text, err := join(v, ",")
			if err != nil {
				return fail("header parameter %q: %w", p.Name, err)
			}
			if want.Header == nil {
				want.Header = http.Header{}
			}
			want.Header.Set(p.Name, text)
		default:
			return fail("argument %q fills %s parameter %q, which no typed call sends", name, p.In, p.Name)
		}
	}
	if strings.Contains(path, "{") {
		return fail("path %s keeps a placeholder after binding", path)
	}
	want.Path = path
	want.RawQuery = query.Encode()

	body, ct, err := bodyOf(op)
	if err != nil {
		return fail("%v", err)
	}
	if len(rest) == 0 && body == nil {
		return want, nil
	}
	if body == nil {
		return fail("arguments %s are no parameters, and the operation takes no JSON body", strings.Join(rest, ", "))
	}
	props := properties(body)
	clash := false
	for name := range props {
		for _, p := range op.Params {
			if Fold(name) == Fold(p.Name) {
				clash = true
			}
		}
	}
	allProps := !clash && props != nil
	for _, n := range rest {
		if _, ok := props[n]; !ok {
			allProps = false
		}
	}
	switch {
	case allProps:
		obj := map[string]any{}
		for _, n := range rest {
			if v, ok := args[n]; ok && !omitted(n, v) {
				obj[n] = v
			}
		}
		want.Body, err = json.Marshal(obj)
	case len(rest) == 0:
		return want, nil // a body the tool does not send (not an object, say)
	case len(rest) == 1:
		v, ok := args[rest[0]]
		if !ok {
			return want, nil
		}
		want.Body, err = json.Marshal(v)
	default:
		return fail("arguments %s are neither the body's properties nor one whole body", strings.Join(rest, ", "))
	}
	if err != nil {
		return Request{}, err
	}
	want.ContentType = ct
	return want, nil
}

// bodyOf returns the schema of op's JSON request body and its media
// type, or nil if it takes none.
func bodyOf(op *Operation) (*openapi3.Schema, string, error) {
	rb := op.Op.RequestBody
	if rb == nil || rb.Value == nil || len(rb.Value.Content) == 0 {
		return nil, "", nil
	}
	name, mt := media(rb.Value.Content)
	if !isJSON(name) {
		return nil, "", nil
	}
	if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
		return &openapi3.Schema{}, name, nil
	}
	return mt.Schema.Value, name, nil
}

// properties returns the properties of an object schema (through
// allOf), or nil if it is not one.
func properties(s *openapi3.Schema) map[string]bool {
	if s == nil {
		return nil
	}
	var out map[string]bool
	if s.Type.Is("object") || len(s.Properties) > 0 {
		out = map[string]bool{}
		for name := range s.Properties {
			out[name] = true
		}
	}
	for _, sub := range s.AllOf {
		if sub == nil || sub.Value == nil {
			continue
		}
		if more := properties(sub.Value); more != nil {
			if out == nil {
				out = map[string]bool{}
			}
			maps.Copy(out, more)
		}
	}
	return out
}

// addQuery adds a query parameter's values for v, in the parameter's
// style, to query.
func addQuery(query url.Values, p *openapi3.Parameter, v any) error {
	explode := p.Explode == nil || *p.Explode
	style := p.Style
	if style == "" {
		style = openapi3.SerializationForm
	}
	switch v := v.(type) {
	case map[string]any:
		keys := slices.Sorted(maps.Keys(v))
		switch {
		case style == openapi3.SerializationDeepObject:
			for _, k := range keys {
				text, err := scalar(v[k])
				if err != nil {
					return err
				}
				query.Add(p.Name+"["+k+"]", text)
			}
		case style == openapi3.SerializationForm && explode:
			for _, k := range keys {
				text, err := scalar(v[k])
				if err != nil {
					return err
				}
				query.Add(k, text)
			}
		case style == openapi3.SerializationForm:
			var parts []string
			for _, k := range keys {
				text, err := scalar(v[k])
				if err != nil {
					return err
				}
				parts = append(parts, k, text)
			}
			query.Add(p.Name, strings.Join(parts, ","))
		default:
			return fmt.Errorf("an object in style %q: %w", style, ErrNoSerialization)
		}
		return nil
	case []any:
		sep := ""
		switch {
		case style == openapi3.SerializationForm && !explode:
			sep = ","
		case style == openapi3.SerializationForm:
		case style == openapi3.SerializationSpaceDelimited:
			sep = " "
		case style == openapi3.SerializationPipeDelimited:
			sep = "|"
		default:
			return fmt.Errorf("an array in style %q: %w", style, ErrNoSerialization)
		}
		var vals []string
		for _, e := range v {
			text, err := scalar(e)
			if err != nil {
				return err
			}
			vals = append(vals, text)
		}
		if sep != "" {
			query.Add(p.Name, strings.Join(vals, sep))
		} else {
			query[p.Name] = append(query[p.Name], vals...)
		}
		return nil
	}
	text, err := scalar(v)
	if err != nil {
		return err
	}
	query.Add(p.Name, text)
	return nil
}

// join writes v as text, an array's items joined by sep.
func join(v any, sep string) (string, error) {
	arr, ok := v.([]any)
	if !ok {
		return scalar(v)
	}
	parts := make([]string, len(arr))
	for i, e := range arr {
		var err error
		if parts[i], err = scalar(e); err != nil {
			return "", err
		}
	}
	return strings.Join(parts, sep), nil
}

// scalar writes a string, number, boolean or null as a parameter's text.
func scalar(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return strconv.FormatInt(int64(v), 10), nil
		}
		return strconv.FormatFloat(v, 'g', -1, 64), nil
	case bool:
		return strconv.FormatBool(v), nil
	case nil:
		return "", nil
	}
	return "", fmt.Errorf("%s where a string, number or boolean belongs: %w", jsonKind(v), ErrNoSerialization)
}

func jsonKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("a %T", v)
}

func isZero(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case float64:
		return v == 0
	case bool:
		return !v
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}

// Diff returns how got, a request the stub recorded, differs from want,
// as [Expect] made it, one line per difference, or "": the method, the
// escaped path byte for byte, the query as values (each key's values in
// order), the header parameters, the body as JSON values, the media type
// of the body, and no problem found by the stub.
func Diff(want, got Request) string {
	var out []string
	add := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	if got.Problem != "" {
		add("the stub refused the request: %s", got.Problem)
	}
	if want.Operation != got.Operation && !slices.Contains(got.Alike, want.Operation) {
		add("operation: want %q, got %q", want.Operation, got.Operation)
	}
	if want.Method != got.Method {
		add("method: want %s, got %s", want.Method, got.Method)
	}
	if want.Path != got.Path {
		add("escaped path: want %q, got %q", want.Path, got.Path)
	}
	wq, _ := url.ParseQuery(want.RawQuery)
	gq, err := url.ParseQuery(got.RawQuery)
	if err != nil {
		add("query %q: %v", got.RawQuery, err)
	} else if d := cmp.Diff(wq, gq, cmp.Transformer("nonEmpty", nonEmpty)); d != "" {
		add("query (-want +got; sent %q):\n%s", got.RawQuery, d)
	}
	if d := cmp.Diff(want.Header, got.Header, cmp.Transformer("nonEmpty", nonEmptyHeader)); d != "" {
		add("header parameters (-want +got):\n%s", d)
	}
	switch {
	case len(want.Body) == 0 && len(got.Body) == 0:
	case len(want.Body) == 0:
		add("body: want none, got %q", got.Body)
	default:
		var w, g any
		json.Unmarshal(want.Body, &w)
		if err := json.Unmarshal(got.Body, &g); err != nil {
			add("body: want %s, got %q, which is not JSON: %v", want.Body, got.Body, err)
		} else if d := cmp.Diff(w, g); d != "" {
			add("body (-want +got):\n%s", d)
		}
		if want.ContentType != "" && mediaType(want.ContentType) != mediaType(got.ContentType) {
			add("content type: want %s, got %q", mediaType(want.ContentType), got.ContentType)
		}
	}
	return strings.Join(out, "\n")
}

func nonEmpty(v url.Values) url.Values {
	if len(v) == 0 {
		return nil
	}
	return v
}

func nonEmptyHeader(h http.Header) http.Header {
	if len(h) == 0 {
		return nil
	}
	return h
}
