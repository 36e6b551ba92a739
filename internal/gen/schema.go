package gen

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// kind is what encoding/json writes for a Go type the generator uses.
type kind int

const (
	kindRaw    kind = iota // json.RawMessage: any JSON value
	kindString             // string, or a named string type
	kindInt                // int32, int64
	kindFloat              // float64
	kindBool               // bool
	kindSlice              // a slice
	kindMap                // map[string]T
	kindStruct             // a struct
)

// scalar reports whether k formats as one path segment or query value.
func (k kind) scalar() bool {
	return k == kindString || k == kindInt || k == kindFloat || k == kindBool
}

// nilable reports whether a zero value of k is nil (omitted by
// omitempty without a pointer).
func (k kind) nilable() bool { return k == kindRaw || k == kindSlice || k == kindMap }

// goType is a Go type the generator writes, and the schema it stands for.
type goType struct {
	expr   string
	kind   kind
	elem   *goType          // of a slice
	schema *openapi3.Schema // resolved; nil for json.RawMessage of nothing
	// why is set for a json.RawMessage that stands for a schema the
	// generator cannot express in Go (for the field's comment).
	why string
}

var rawType = goType{expr: "json.RawMessage", kind: kindRaw}

// field is one field of a generated struct.
type field struct {
	name    string // Go
	typ     string // Go
	json    string
	omit    bool   // omitempty
	in      string // the `in` tag: "path", "query", "header", "body" or ""
	tags    string // the jsonschema tag's value
	desc    string // the jsonschema_description tag's value
	comment string // a line comment
}

// decl is a named type the generator declares.
type decl struct {
	name string
	doc  string
	// Exactly one of fields (a struct, possibly empty) and underlying
	// (a defined type "string", or an alias "= Pet") is used.
	fields     []field
	isStruct   bool
	underlying string
	file       string // the file that declares it
}

// componentPrefix starts a local reference to a component schema.
const componentPrefix = "#/components/schemas/"

// mapper turns schemas into Go types, declaring the named ones.
type mapper struct {
	doc   *openapi3.T
	names *namespace // Go identifiers of the package

	comps     map[string]string // component key → Go name
	declared  map[string]*decl  // by Go name
	order     []string          // Go names of declared types, in declaration order
	compQueue []string          // component keys used, not yet declared
	compDone  map[string]bool

	// probe is set while finding the components' references: nothing is
	// declared, no name handed out.
	probe bool
	refs  map[string]bool // the component keys a probe met

	// warnings are the document's own errors the generator met, each
	// once (see Spec.Warnings).
	warnings map[string]bool

	cut     map[[2]string]bool // (from, to) component references that close a cycle
	current string             // the component being declared, "" in an operation
	file    string             // the file inline types go to
	stack   []*openapi3.Schema // inline schemas being mapped (cycles through non-component refs)
}

func newMapper(doc *openapi3.T, names *namespace) *mapper {
	m := &mapper{doc: doc, names: names, comps: map[string]string{}, declared: map[string]*decl{}, compDone: map[string]bool{}, cut: map[[2]string]bool{}, warnings: map[string]bool{}}
	var keys []string
	if doc.Components != nil {
		for k := range doc.Components.Schemas {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		m.comps[k] = names.claim(exported(k, "Schema"))
	}
	m.findCycles(keys)
	return m
}

// component returns the key of the component schema ref names, or "".
func component(ref string) string {
	if k, ok := strings.CutPrefix(ref, componentPrefix); ok && !strings.Contains(k, "/") {
		return k
	}
	return ""
}

// findCycles marks every reference between two components of one
// strongly connected component of the reference graph (a component's
// reference to itself too): the schema reflector inlines every type, so a
// Go type that contains itself has no schema, and such a reference
// becomes a json.RawMessage. Which references are cut depends on the
// graph alone, not on the order types are met.
func (m *mapper) findCycles(keys []string) {
	edges := map[string][]string{}
	m.probe = true
	for _, k := range keys {
		m.refs = map[string]bool{}
		m.current = k
		m.declareComponent(k)
		for r := range m.refs {
			edges[k] = append(edges[k], r)
		}
		slices.Sort(edges[k])
	}
	m.probe, m.refs, m.current = false, nil, ""
	// Tarjan's algorithm.
	index := map[string]int{}
	low := map[string]int{}
	onStack := map[string]bool{}
	scc := map[string]int{}
	var stack []string
	n, c := 0, 0
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = n, n
		n++
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range edges[v] {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				scc[w] = c
				if w == v {
					break
				}
			}
			c++
		}
	}
	for _, k := range keys {
		if _, seen := index[k]; !seen {
			visit(k)
		}
	}
	for _, k := range keys {
		for _, r := range edges[k] {
			if scc[k] == scc[r] {
				m.cut[[2]string{k, r}] = true
			}
		}
	}
}

// typeOf maps the schema ref to a Go type; hint names an inline struct
// type it needs.
func (m *mapper) typeOf(ref *openapi3.SchemaRef, hint string) goType {
	if ref == nil || ref.Value == nil {
		return rawType
	}
	if key := component(ref.Ref); key != "" && m.comps[key] != "" {
		if m.probe {
			m.refs[key] = true
			return goType{expr: m.comps[key], kind: m.kindOf(ref.Value, nil), schema: ref.Value}
		}
		if m.cut[[2]string{m.current, key}] {
			t := rawType
			t.schema = ref.Value
			if key == m.current {
				t.why = fmt.Sprintf("%s contains itself: any JSON here", key)
			} else {
				t.why = fmt.Sprintf("%s and %s contain each other: any JSON here", m.current, key)
			}
			return t
		}
		if !m.compDone[key] && !slices.Contains(m.compQueue, key) {
			m.compQueue = append(m.compQueue, key)
		}
		return goType{expr: m.comps[key], kind: m.kindOf(ref.Value, nil), schema: ref.Value}
	}
	return m.inline(ref.Value, hint)
}

// kindOf classifies a schema the way [mapper.inline] maps it.
func (m *mapper) kindOf(s *openapi3.Schema, seen []*openapi3.Schema) kind {
	if s == nil || slices.Contains(seen, s) {
		return kindRaw
	}
	seen = append(seen, s)
	if one := single(s); one != nil {
		return m.kindOf(one.Value, seen)
	}
	if _, members := m.union(s, seen); members != nil {
		return kindRaw // an upstream.OneOf or AnyOf: JSON as it came
	}
	switch t := typeName(s); t {
	case "string":
		return kindString
	case "integer":
		return kindInt
	case "number":
		return kindFloat
	case "boolean":
		return kindBool
	case "array":
		return kindSlice
	case "object":
		if hasProperties(s, nil) {
			return kindStruct
		}
		return kindMap
	}
	return kindRaw
}

// typeName is the one JSON type of s ("null" aside), inferred from its
// keywords if it declares none; "" if it allows several or it cannot be
// told.
func typeName(s *openapi3.Schema) string {
	types := slices.DeleteFunc(s.Type.Clone(), func(t string) bool { return t == openapi3.TypeNull })
	switch {
	case len(types) == 1:
		return types[0]
	case len(types) > 1:
		return ""
	case len(s.Properties) > 0 || s.AdditionalProperties.Schema != nil || s.AdditionalProperties.Has != nil || len(s.AllOf) > 0 && allObjects(s.AllOf):
		return "object"
	case s.Items != nil:
		return "array"
	case len(s.Enum) > 0 && allStrings(s.Enum), isString(s.Const):
		return "string"
	}
	return ""
}

func allObjects(refs openapi3.SchemaRefs) bool {
	n := 0
	for _, r := range refs {
		switch {
		case r != nil && r.Value != nil && annotationOnly(r.Value):
			continue
		case r == nil || r.Value == nil || typeName(r.Value) != "object":
			return false
		}
		n++
	}
	return n > 0
}

// annotationOnly reports whether s only annotates (a description, a
// title, examples, a default, flags, extensions) and constrains nothing:
// as an allOf member it changes no value's validity, as in Box's
// allOf: [{$ref}, {description: …}], the common way to describe a
// reference in OpenAPI 3.0.
func annotationOnly(s *openapi3.Schema) bool {
	data, err := json.Marshal(s)
	if err != nil {
		return false
	}
	var keys map[string]json.RawMessage
	if json.Unmarshal(data, &keys) != nil {
		return false
	}
	for k := range keys {
		switch k {
		case "description", "title", "example", "examples", "default", "deprecated", "readOnly", "writeOnly", "externalDocs":
		default:
			if !strings.HasPrefix(k, "x-") {
				return false
			}
		}
	}
	return true
}

func allStrings(vs []any) bool {
	for _, v := range vs {
		if _, ok := v.(string); !ok && v != nil {
			return false
		}
	}
	return true
}

func isString(v any) bool { _, ok := v.(string); return ok }

// single returns the one schema a oneOf, anyOf or allOf of s stands for
// when it has one member besides {"type": "null"} and s says nothing
// else of its type (OpenAPI 3.1's way to write a nullable reference), or
// nil.
func single(s *openapi3.Schema) *openapi3.SchemaRef {
	if !s.Type.IsEmpty() || len(s.Properties) > 0 || s.Items != nil {
		return nil
	}
	for i, list := range []openapi3.SchemaRefs{s.OneOf, s.AnyOf, s.AllOf} {
		var only *openapi3.SchemaRef
		n := 0
		allOf := i == 2
		for _, r := range list {
			if r == nil || r.Value == nil {
				return nil
			}
			// In an allOf, a member that only annotates constrains
			// nothing; in a oneOf or anyOf it would accept anything.
			if r.Value.Type.Is(openapi3.TypeNull) || allOf && annotationOnly(r.Value) {
				continue
			}
			only = r
			n++
		}
		if n == 1 && len(s.OneOf)+len(s.AnyOf)+len(s.AllOf) == len(list) {
			return only
		}
	}
	return nil
}

// union returns the kind ("OneOf" or "AnyOf") and the members of s
// when s is a union the generator types as upstream.OneOf or AnyOf: a
// oneOf or an anyOf (not both, no allOf) of at least two schemas besides
// {"type": "null"}, each of one Go kind other than any JSON, and s says
// nothing else of its value's shape (no properties, items or
// additionalProperties; a type only if every member has it). nil
// otherwise.
func (m *mapper) union(s *openapi3.Schema, seen []*openapi3.Schema) (string, openapi3.SchemaRefs) {
	if len(s.AllOf) > 0 || len(s.Properties) > 0 || s.Items != nil || s.AdditionalProperties.Has != nil || s.AdditionalProperties.Schema != nil {
		return "", nil
	}
	kind, list := "OneOf", s.OneOf
	switch {
	case len(s.OneOf) > 0 && len(s.AnyOf) > 0:
		return "", nil
	case len(s.AnyOf) > 0:
		kind, list = "AnyOf", s.AnyOf
	}
	own := typeName(s)
	var members openapi3.SchemaRefs
	for _, r := range list {
		if r == nil || r.Value == nil {
			return "", nil
		}
		if r.Value.Type.Is(openapi3.TypeNull) {
			continue
		}
		if own != "" && typeName(r.Value) != own || m.kindOf(r.Value, seen) == kindRaw {
			return "", nil
		}
		members = append(members, r)
	}
	if len(members) < 2 {
		return "", nil
	}
	return kind, members
}

// objectUnion reports whether s is a union (see [mapper.union]) of
// objects only.
func (m *mapper) objectUnion(s *openapi3.Schema) bool {
	_, members := m.union(s, nil)
	if members == nil {
		return false
	}
	for _, r := range members {
		if k := m.kindOf(r.Value, nil); k != kindStruct && k != kindMap {
			return false
		}
	}
	return true
}

// unionType maps the union s (see [mapper.union]) to
// upstream.KIND[HINTAlternatives], declaring the struct of its
// alternatives: a field per member, of the member's type with its tags.
// A member that is a reference closing a cycle (any JSON) makes the
// union any JSON too: an alternative that accepts everything would
// accept what the others do.
func (m *mapper) unionType(s *openapi3.Schema, kind string, members openapi3.SchemaRefs, hint string) goType {
	if m.probe {
		for _, r := range members {
			m.typeOf(r, hint)
		}
		return goType{expr: hint, kind: kindRaw, schema: s}
	}
	for _, r := range members {
		if key := component(r.Ref); key != "" && m.cut[[2]string{m.current, key}] {
			t := rawType
			t.schema, t.why = s, fmt.Sprintf("one of several schemas, and %s and %s contain each other: any JSON here", m.current, key)
			return t
		}
	}
	name := m.names.claim(hint + "Alternatives")
	d := &decl{name: name, isStruct: true, file: m.file,
		doc: fmt.Sprintf("%s are the alternatives of upstream.%s[%s], one field each: a value is valid for %s of their schemas.", name, kind, name, map[string]string{"OneOf": "exactly one", "AnyOf": "at least one"}[kind])}
	m.declare(d)
	goNames := newNamespace("", "")
	for i, r := range members {
		base := fmt.Sprintf("Option%d", i+1)
		if key := component(r.Ref); key != "" && m.comps[key] != "" {
			base = m.comps[key]
		} else if r.Value.Title != "" {
			base = exported(r.Value.Title, base)
		}
		goName := goNames.claim(base)
		t := m.typeOf(r, name+goName)
		f := fieldFor(goName, snake(goName), t, true, "")
		if f.typ != t.expr {
			f.typ = t.expr // an alternative is a value: null is no member
		}
		f.omit = false
		d.fields = append(d.fields, f)
	}
	return goType{expr: "upstream." + kind + "[" + name + "]", kind: kindRaw, schema: s}
}

// nullable reports whether s allows null: OpenAPI 3.0's nullable, 3.1's
// type arrays and oneOf/anyOf with {"type": "null"}.
func nullable(s *openapi3.Schema) bool {
	if s == nil {
		return false
	}
	if s.Nullable || s.Type.IncludesNull() {
		return true
	}
	for _, list := range []openapi3.SchemaRefs{s.OneOf, s.AnyOf} {
		for _, r := range list {
			if r != nil && r.Value != nil && r.Value.Type.Is(openapi3.TypeNull) {
				return true
			}
		}
	}
	return false
}

// hasProperties reports whether s, with its allOf members, is an object
// with properties (a struct rather than a map).
func hasProperties(s *openapi3.Schema, seen []*openapi3.Schema) bool {
	if s == nil || slices.Contains(seen, s) {
		return false
	}
	if len(s.Properties) > 0 {
		return true
	}
	seen = append(seen, s)
	for _, r := range s.AllOf {
		if r != nil && hasProperties(r.Value, seen) {
			return true
		}
	}
	return s.AdditionalProperties.Schema == nil && s.AdditionalProperties.Has != nil && !*s.AdditionalProperties.Has
}

// inline maps a schema written in place (or reached by a reference that
// is not a component's).
func (m *mapper) inline(s *openapi3.Schema, hint string) goType {
	if slices.Contains(m.stack, s) {
		t := rawType
		t.schema, t.why = s, "the schema contains itself: any JSON here"
		return t
	}
	m.stack = append(m.stack, s)
	defer func() { m.stack = m.stack[:len(m.stack)-1] }()
	if one := single(s); one != nil {
		t := m.typeOf(one, hint)
		return t
	}
	if kind, members := m.union(s, nil); members != nil {
		return m.unionType(s, kind, members, hint)
	}
	t := goType{schema: s}
	switch typeName(s) {
	case "string":
		t.expr, t.kind = "string", kindString
	case "integer":
		t.expr, t.kind = "int64", kindInt
		if s.Format == "int32" {
			t.expr = "int32"
		}
	case "number":
		t.expr, t.kind = "float64", kindFloat
	case "boolean":
		t.expr, t.kind = "bool", kindBool
	case "array":
		elem := m.typeOf(s.Items, hint+"Item")
		t.expr, t.kind, t.elem = "[]"+elem.expr, kindSlice, &elem
	case "object":
		if hasProperties(s, nil) {
			name := hint
			if m.probe {
				m.fields(hint, s, nil, false) // for the references it holds
			} else {
				name = m.names.claim(hint)
				m.declareStruct(name, s, fmt.Sprintf("%s is an object of the document.", name), nil)
			}
			t.expr, t.kind = name, kindStruct
			return t
		}
		val := rawType
		if ap := s.AdditionalProperties.Schema; ap != nil {
			val = m.typeOf(ap, hint+"Value")
		}
		t.expr, t.kind = "map[string]"+val.expr, kindMap
	default:
		t.expr, t.kind = "json.RawMessage", kindRaw
		if len(s.OneOf)+len(s.AnyOf) > 0 {
			t.why = "one of several schemas: any JSON here"
		} else if s.Type.IsMultiple() {
			t.why = "one of the types " + strings.Join(s.Type.Slice(), ", ")
		}
	}
	return t
}

// property is one property of an object schema.
type property struct {
	name     string
	ref      *openapi3.SchemaRef
	required bool
	line     [2]int // where the document writes it, for the order
}

// properties returns the properties of s and its allOf members, in the
// document's order (members first), a name given twice taking its last
// schema; required is the union of the required lists.
func properties(s *openapi3.Schema) []property {
	var out []property
	required := map[string]bool{}
	var walk func(s *openapi3.Schema, seen []*openapi3.Schema)
	walk = func(s *openapi3.Schema, seen []*openapi3.Schema) {
		if s == nil || slices.Contains(seen, s) {
			return
		}
		seen = append(seen, s)
		for _, r := range s.AllOf {
			if r != nil {
				walk(r.Value, seen)
			}
		}
		for _, r := range s.Required {
			required[r] = true
		}
		var own []property
		for name, ref := range s.Properties {
			own = append(own, property{name: name, ref: ref, line: position(ref)})
		}
		slices.SortFunc(own, func(a, b property) int {
			return cmp.Or(cmp.Compare(a.line[0], b.line[0]), cmp.Compare(a.line[1], b.line[1]), strings.Compare(a.name, b.name))
		})
		for _, p := range own {
			if i := slices.IndexFunc(out, func(q property) bool { return q.name == p.name }); i >= 0 {
				out[i].ref = p.ref
				continue
			}
			out = append(out, p)
		}
	}
	walk(s, nil)
	for i := range out {
		out[i].required = required[out[i].name]
	}
	return out
}

// position is where the document writes ref (line, column), or zeros
// (then names decide the order).
func position(ref *openapi3.SchemaRef) [2]int {
	if ref == nil || ref.Origin == nil {
		return [2]int{}
	}
	if k := ref.Origin.Key; k != nil {
		return [2]int{k.Line, k.Column}
	}
	if len(ref.Origin.Fields) > 0 {
		return [2]int{ref.Origin.Fields[0].Line, ref.Origin.Fields[0].Column}
	}
	return [2]int{}
}

// declareStruct declares the struct type name for the object schema s;
// skip leaves out properties (by JSON name).
func (m *mapper) declareStruct(name string, s *openapi3.Schema, doc string, skip func(property) bool) {
	d := &decl{name: name, doc: doc, isStruct: true, file: m.file}
	m.declare(d)
	d.fields = m.fields(name, s, skip, false)
}

// fields maps the properties of the object schema s to struct fields of
// the type named owner; with optional, none is required.
func (m *mapper) fields(owner string, s *openapi3.Schema, skip func(property) bool, optional bool) []field {
	var out []field
	goNames := newNamespace("", "")
	for _, p := range properties(s) {
		if skip != nil && skip(p) {
			continue
		}
		if !validJSONName(p.name) {
			out = append(out, field{comment: fmt.Sprintf("The property %q is left out: no Go struct field carries that JSON name.", p.name)})
			continue
		}
		goName := goNames.claim(exported(p.name, "Field"))
		t := m.typeOf(p.ref, owner+goName)
		out = append(out, fieldFor(goName, p.name, t, p.required && !optional, ""))
	}
	// A property the schema requires but declares nowhere (Box's
	// SharedLink requires "accessed"): JSON Schema lets it hold any
	// value, and an answer carries it, so it is a field of any JSON; the
	// document's error is a warning.
	for _, name := range undeclared(s) {
		if skip != nil && skip(property{name: name, required: true}) || !validJSONName(name) {
			continue
		}
		goName := goNames.claim(exported(name, "Field"))
		t := rawType
		t.why = "required by the schema, which declares no such property: any JSON here"
		out = append(out, fieldFor(goName, name, t, !optional, ""))
		if !m.probe {
			m.warnings[fmt.Sprintf("the schema of %s requires the property %q, which it does not declare (likely an error of the document; JSON Schema lets it be any value): %s.%s is any JSON", owner, name, owner, goName)] = true
		}
	}
	return out
}

// undeclared returns the names the required lists of s and its allOf
// members hold that none of their properties declares, in the order of
// the lists; nil if s (or a member) allows other properties only
// through additionalProperties or patternProperties (which may declare
// them).
func undeclared(s *openapi3.Schema) []string {
	declared := map[string]bool{}
	for _, p := range properties(s) {
		declared[p.name] = true
	}
	var out []string
	open := false
	var walk func(s *openapi3.Schema, seen []*openapi3.Schema)
	walk = func(s *openapi3.Schema, seen []*openapi3.Schema) {
		if s == nil || slices.Contains(seen, s) {
			return
		}
		seen = append(seen, s)
		if s.AdditionalProperties.Schema != nil || len(s.PatternProperties) > 0 || len(s.OneOf)+len(s.AnyOf) > 0 {
			open = true
		}
		for _, r := range s.AllOf {
			if r != nil {
				walk(r.Value, seen)
			}
		}
		for _, name := range s.Required {
			if !declared[name] && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	walk(s, nil)
	if open {
		return nil
	}
	return out
}

// fieldFor is the struct field of a property or parameter: a required one
// holds its value, an optional one is omitted when unset (through a
// pointer, unless its zero value is nil), a nullable property is a
// pointer; a path parameter is always a value.
func fieldFor(goName, jsonName string, t goType, required bool, in string) field {
	f := field{name: goName, typ: t.expr, json: jsonName, in: in}
	switch {
	case t.kind.nilable(), in == "path":
	case in == "query" || in == "header":
		if !required {
			f.typ = "*" + t.expr // nil: not sent; a zero value is
		}
	case nullable(t.schema) || !required:
		f.typ = "*" + t.expr
	}
	f.omit = !required
	f.tags = constraints(t)
	f.desc = describe(t.schema)
	if t.why != "" {
		f.comment = t.why
	}
	return f
}

// declare records d.
func (m *mapper) declare(d *decl) {
	if m.probe {
		return
	}
	m.declared[d.name] = d
	m.order = append(m.order, d.name)
}

// declareComponent declares the component schema key's Go type.
func (m *mapper) declareComponent(key string) {
	ref := m.doc.Components.Schemas[key]
	name := m.comps[key]
	if !m.probe {
		m.compDone[key] = true
	}
	doc := fmt.Sprintf("%s is the schema %s%s of the document.", name, componentPrefix, key)
	if ref != nil && ref.Value != nil && ref.Value.Description != "" {
		doc += " " + oneLine(ref.Value.Description, 300)
	}
	if ref == nil || ref.Value == nil {
		m.declare(&decl{name: name, doc: doc, underlying: "= json.RawMessage", file: m.file})
		return
	}
	if target := component(ref.Ref); target != "" && m.comps[target] != "" {
		t := m.typeOf(ref, name)
		m.declare(&decl{name: name, doc: doc, underlying: "= " + t.expr, file: m.file})
		return
	}
	s := ref.Value
	if one := single(s); one == nil && typeName(s) == "object" && hasProperties(s, nil) {
		m.declareStruct(name, s, doc, nil)
		return
	}
	hint := name + "Value"
	if _, members := m.union(s, nil); members != nil {
		hint = name // its alternatives are NAMEAlternatives
	}
	t := m.inline(s, hint)
	if t.kind == kindRaw {
		m.declare(&decl{name: name, doc: doc, underlying: "= " + t.expr, file: m.file})
		return
	}
	if t.kind == kindStruct {
		// A nullable or single-member reference to an object: an alias of
		// its type.
		m.declare(&decl{name: name, doc: doc, underlying: "= " + t.expr, file: m.file})
		return
	}
	m.declare(&decl{name: name, doc: doc, underlying: t.expr, file: m.file})
}

// flushComponents declares the components met so far, and those they
// meet, in types.go.
func (m *mapper) flushComponents(file string) {
	saved := m.file
	m.file = file
	for len(m.compQueue) > 0 {
		key := m.compQueue[0]
		m.compQueue = m.compQueue[1:]
		if m.compDone[key] {
			continue
		}
		m.current = key
		m.declareComponent(key)
	}
	m.current, m.file = "", saved
}

// constraints is the jsonschema tag value for t's schema: bounds, lengths,
// patterns, formats and enums, for the schema keywords the reflector
// reads on t's kind (an array's for its items too).
func constraints(t goType) string {
	s := t.schema
	if s == nil {
		return ""
	}
	var tags []string
	switch t.kind {
	case kindString, kindInt, kindFloat:
		tags = scalarConstraints(s, t.kind)
	case kindSlice:
		if s.MinItems > 0 {
			tags = append(tags, "minItems="+strconv.FormatUint(s.MinItems, 10))
		}
		if s.MaxItems != nil {
			tags = append(tags, "maxItems="+strconv.FormatUint(*s.MaxItems, 10))
		}
		if s.UniqueItems {
			tags = append(tags, "uniqueItems=true")
		}
		if t.elem != nil && t.elem.schema != nil && (t.elem.kind == kindString || t.elem.kind == kindInt || t.elem.kind == kindFloat) {
			tags = append(tags, scalarConstraints(t.elem.schema, t.elem.kind)...)
		}
	}
	return strings.Join(tags, ",")
}

// scalarConstraints are the tags of a string or number schema.
func scalarConstraints(s *openapi3.Schema, k kind) []string {
	var tags []string
	if k == kindString {
		if s.MinLength > 0 {
			tags = append(tags, "minLength="+strconv.FormatUint(s.MinLength, 10))
		}
		if s.MaxLength != nil {
			tags = append(tags, "maxLength="+strconv.FormatUint(*s.MaxLength, 10))
		}
		if s.Pattern != "" && usablePattern(s.Pattern) {
			tags = append(tags, "pattern="+escapeTag(s.Pattern))
		}
		if formatRE.MatchString(s.Format) {
			tags = append(tags, "format="+s.Format)
		}
	} else {
		switch {
		case s.ExclusiveMin.Value != nil:
			tags = append(tags, "exclusiveMinimum="+number(*s.ExclusiveMin.Value))
		case s.Min != nil && s.ExclusiveMin.IsTrue():
			tags = append(tags, "exclusiveMinimum="+number(*s.Min))
		case s.Min != nil:
			tags = append(tags, "minimum="+number(*s.Min))
		}
		switch {
		case s.ExclusiveMax.Value != nil:
			tags = append(tags, "exclusiveMaximum="+number(*s.ExclusiveMax.Value))
		case s.Max != nil && s.ExclusiveMax.IsTrue():
			tags = append(tags, "exclusiveMaximum="+number(*s.Max))
		case s.Max != nil:
			tags = append(tags, "maximum="+number(*s.Max))
		}
		if s.MultipleOf != nil && *s.MultipleOf > 0 {
			tags = append(tags, "multipleOf="+number(*s.MultipleOf))
		}
	}
	enum := s.Enum
	if len(enum) == 0 && s.Const != nil {
		enum = []any{s.Const}
	}
	if vals, ok := enumValues(enum, k); ok {
		for _, v := range vals {
			tags = append(tags, "enum="+v)
		}
	}
	return tags
}

// formatRE are the formats written as tags: a word, as every format is.
var formatRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// usablePattern reports whether p compiles as the SDK's schema validator
// compiles it (Go's regexp) and can stand in a tag: ECMA-only syntax
// (look-arounds) would make the tool's schema unusable.
func usablePattern(p string) bool {
	if _, err := regexp.Compile(p); err != nil {
		return false
	}
	return !strings.ContainsAny(p, "`") && !strings.HasSuffix(p, `\`)
}

// escapeTag escapes the commas of a tag value (the reflector splits the
// tag at unescaped ones).
func escapeTag(v string) string { return strings.ReplaceAll(v, ",", `\,`) }

// number writes a bound as the reflector reads it back.
func number(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// enumValues are the values of an enum as tags of a schema of kind k, or
// false if one cannot be written (nulls are left out: a pointer is
// nullable).
func enumValues(enum []any, k kind) ([]string, bool) {
	var out []string
	for _, v := range enum {
		if v == nil {
			continue
		}
		var s string
		switch v := v.(type) {
		case string:
			if k != kindString || strings.ContainsAny(v, "`") || strings.HasSuffix(v, `\`) {
				return nil, false
			}
			s = escapeTag(v)
		case float64:
			if k == kindString {
				return nil, false
			}
			s = number(v)
		case int:
			if k == kindString {
				return nil, false
			}
			s = strconv.Itoa(v)
		case int64:
			if k == kindString {
				return nil, false
			}
			s = strconv.FormatInt(v, 10)
		case uint64:
			if k == kindString {
				return nil, false
			}
			s = strconv.FormatUint(v, 10)
		default:
			return nil, false
		}
		out = append(out, s)
	}
	return out, len(out) > 0
}

// describe is a field's description from its schema: the description,
// and its default value.
func describe(s *openapi3.Schema) string {
	if s == nil {
		return ""
	}
	d := oneLine(s.Description, 300)
	if s.Default != nil {
		if v, ok := scalarText(s.Default); ok {
			if d != "" && !strings.HasSuffix(d, ".") {
				d += "."
			}
			d = strings.TrimSpace(d + " Default: " + v + ".")
		}
	}
	if s.Deprecated {
		d = strings.TrimSpace("Deprecated. " + d)
	}
	return d
}

// scalarText writes a default value.
func scalarText(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v), true
	case bool:
		return strconv.FormatBool(v), true
	case float64:
		return number(v), true
	case int:
		return strconv.Itoa(v), true
	case int64:
		return strconv.FormatInt(v, 10), true
	}
	return "", false
}

// oneLine is text on one line, white space collapsed, backquotes made
// quotes (a struct tag is a raw string), cut at a word before max runes.
func oneLine(text string, max int) string {
	text = strings.Join(strings.Fields(strings.ReplaceAll(text, "`", "'")), " ")
	return cut(text, max)
}

// cut shortens text to at most max runes, at a word boundary, with "…".
func cut(text string, max int) string {
	r := []rune(text)
	if len(r) <= max {
		return text
	}
	short := string(r[:max-1])
	if i := strings.LastIndexAny(short, " \n"); i > max/2 {
		short = short[:i]
	}
	return strings.TrimRight(short, " \n.,;:") + "…"
}
