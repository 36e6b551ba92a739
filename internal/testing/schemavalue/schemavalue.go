package schemavalue

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Text is the string [Generate] makes where a schema asks for no
// particular form: a space, "&" and "=" need escaping in a query, a space
// and "é" in a path segment, and "é" is outside ASCII.
const Text = "x y&z=é"

// Options tune [Generate]. The zero value fills required properties only.
type Options struct {
	// Optional fills every optional property as well, and gives arrays
	// two items where their bounds allow, down to MaxDepth levels of
	// nesting; deeper, or with Optional false, objects get their required
	// properties and arrays their minItems.
	Optional bool
	// MaxDepth is how many levels of objects and arrays Optional fills.
	// 0 selects 3.
	MaxDepth int
}

// maxNesting bounds how deep a value nests: a schema whose required
// properties recurse without end has no finite value.
const maxNesting = 32

// Generate returns a value valid for s (a schema as it is listed or
// unmarshalled, whose "$ref"s point into its own "$defs" or
// "definitions"), the same for the same s and opts. It checks the value
// against s with jsonschema-go; an error names what it could not
// satisfy.
func Generate(s *jsonschema.Schema, opts Options) (any, error) {
	if s == nil {
		return nil, errors.New("schemavalue: nil schema")
	}
	if opts.MaxDepth == 0 {
		opts.MaxDepth = 3
	}
	g := &generator{root: s, opts: opts, resolved: map[*jsonschema.Schema]resolution{}, fill: -1}
	v, err := g.value(s, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("schemavalue: %w", err)
	}
	if err := g.check(s, v); err != nil {
		return nil, fmt.Errorf("schemavalue: the value made, %s, is not valid for the schema: %w", Brief(v), err)
	}
	return v, nil
}

// Object is [Generate] for a schema whose values are objects, such as a
// tool's input schema.
func Object(s *jsonschema.Schema, opts Options) (map[string]any, error) {
	v, err := Generate(s, opts)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schemavalue: the schema's value %s is not an object", Brief(v))
	}
	return m, nil
}

// Brief returns v as JSON, cut to 200 bytes, for messages.
func Brief(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

type generator struct {
	root     *jsonschema.Schema
	opts     Options
	resolved map[*jsonschema.Schema]resolution
	// fill is a depth at which objects get their optional properties
	// whatever opts says (-1: none): an alternative of a oneOf that
	// another one matches too may be told apart by them.
	fill int
}

type resolution struct {
	rs  *jsonschema.Resolved
	err error
}

// check validates v against s, which is g.root or one of the schemas
// generation went through (a subschema of the root, or one merged from
// several).
func (g *generator) check(s *jsonschema.Schema, v any) error {
	r, ok := g.resolved[s]
	if !ok {
		r.rs, r.err = g.resolve(s)
		g.resolved[s] = r
	}
	if r.err != nil {
		return r.err
	}
	return r.rs.Validate(v)
}

// resolve prepares s for validation. The root resolves as it is; any
// other schema is copied into a root of its own that carries the root's
// definitions its "$ref"s reach (jsonschema-go resolves trees only).
func (g *generator) resolve(s *jsonschema.Schema) (*jsonschema.Resolved, error) {
	if s == g.root {
		return s.Resolve(nil)
	}
	data, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var c jsonschema.Schema
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, err
	}
	if c.Defs != nil || c.Definitions != nil {
		return nil, fmt.Errorf("a subschema with definitions of its own (%s) cannot be checked alone", Brief(s))
	}
	defs, definitions, err := g.reachable(s)
	if err != nil {
		return nil, err
	}
	if len(defs) > 0 || len(definitions) > 0 {
		// Copy them too: the root's own schemas must stay in one tree.
		holder := &jsonschema.Schema{Defs: defs, Definitions: definitions}
		data, err := json.Marshal(holder)
		if err != nil {
			return nil, err
		}
		var copied jsonschema.Schema
		if err := json.Unmarshal(data, &copied); err != nil {
			return nil, err
		}
		c.Defs, c.Definitions = copied.Defs, copied.Definitions
	}
	return c.Resolve(nil)
}

// reachable returns the root's definitions that s reaches through
// "$ref"s, transitively.
func (g *generator) reachable(s *jsonschema.Schema) (defs, definitions map[string]*jsonschema.Schema, err error) {
	seen := map[string]bool{}
	var walk func(*jsonschema.Schema) error
	walk = func(s *jsonschema.Schema) error {
		if s == nil {
			return nil
		}
		if s.Ref != "" && !seen[s.Ref] {
			seen[s.Ref] = true
			t, err := g.lookup(s.Ref)
			if err != nil {
				return err
			}
			if t != g.root {
				name, inDefs := refName(s.Ref)
				if inDefs {
					if defs == nil {
						defs = map[string]*jsonschema.Schema{}
					}
					defs[name] = t
				} else {
					if definitions == nil {
						definitions = map[string]*jsonschema.Schema{}
					}
					definitions[name] = t
				}
				if err := walk(t); err != nil {
					return err
				}
			}
		}
		for _, c := range children(s) {
			if err := walk(c); err != nil {
				return err
			}
		}
		return nil
	}
	err = walk(s)
	return defs, definitions, err
}

// refName returns the definition a local "$ref" names and whether it is
// under "$defs" (else under "definitions").
func refName(ref string) (string, bool) {
	if name, ok := strings.CutPrefix(ref, "#/$defs/"); ok {
		return unescapePointer(name), true
	}
	name, _ := strings.CutPrefix(ref, "#/definitions/")
	return unescapePointer(name), false
}

func unescapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// lookup returns the schema a local "$ref" points to.
func (g *generator) lookup(ref string) (*jsonschema.Schema, error) {
	if ref == "#" {
		return g.root, nil
	}
	var (
		m    map[string]*jsonschema.Schema
		name string
	)
	switch {
	case strings.HasPrefix(ref, "#/$defs/"):
		m = g.root.Defs
	case strings.HasPrefix(ref, "#/definitions/"):
		m = g.root.Definitions
	default:
		return nil, fmt.Errorf("$ref %q: only \"#\", \"#/$defs/NAME\" and \"#/definitions/NAME\" are followed", ref)
	}
	name, _ = refName(ref)
	if strings.Contains(name, "/") {
		return nil, fmt.Errorf("$ref %q: only whole definitions are followed", ref)
	}
	t, ok := m[name]
	if !ok || t == nil {
		return nil, fmt.Errorf("$ref %q: no such definition", ref)
	}
	return t, nil
}

// deref follows s's "$ref"s. A "$ref" with sibling keywords (allowed in
// 2020-12) becomes the allOf of its target and the siblings.
func (g *generator) deref(s *jsonschema.Schema) (*jsonschema.Schema, error) {
	for i := 0; s.Ref != ""; i++ {
		if i > maxNesting {
			return nil, fmt.Errorf("$ref %q: a chain of more than %d references", s.Ref, maxNesting)
		}
		t, err := g.lookup(s.Ref)
		if err != nil {
			return nil, err
		}
		if rest := withoutRef(s); rest != nil {
			return &jsonschema.Schema{AllOf: []*jsonschema.Schema{t, rest}}, nil
		}
		s = t
	}
	return s, nil
}

// withoutRef returns s without its "$ref", or nil if s has no keyword
// besides "$ref" and annotations.
func withoutRef(s *jsonschema.Schema) *jsonschema.Schema {
	c := *s
	c.Ref = ""
	a := c
	a.Title, a.Description, a.Default, a.Examples, a.Comment = "", "", nil, nil, ""
	a.Deprecated, a.ReadOnly, a.WriteOnly, a.Extra = false, false, false, nil
	if b, err := json.Marshal(&a); err == nil && (string(b) == "true" || string(b) == "{}") {
		return nil
	}
	return &c
}

// isFalse reports whether s is the schema that admits nothing.
func isFalse(s *jsonschema.Schema) bool {
	if s.Not == nil {
		return false
	}
	b, err := json.Marshal(s.Not)
	return err == nil && (string(b) == "true" || string(b) == "{}")
}

// value makes a value valid for s; depth is how deep in the value it is,
// variant which of several distinct values to make (0 is the first).
func (g *generator) value(s *jsonschema.Schema, depth, variant int) (any, error) {
	if depth > maxNesting {
		return nil, fmt.Errorf("the value would nest more than %d levels deep (a required property recurses?)", maxNesting)
	}
	s, err := g.deref(s)
	if err != nil {
		return nil, err
	}
	if isFalse(s) {
		return nil, errors.New("a schema admits no value (false, or not: {})")
	}
	if s.Const != nil {
		return clone(*s.Const), nil
	}
	if len(s.Enum) > 0 {
		return clone(pickEnum(s.Enum, variant)), nil
	}
	if len(s.AllOf) > 0 {
		m, err := g.merged(s)
		if err != nil {
			return nil, err
		}
		return g.value(m, depth, variant)
	}
	if len(s.OneOf) > 0 || len(s.AnyOf) > 0 {
		return g.alternative(s, depth, variant)
	}
	switch typeOf(s) {
	case "object":
		return g.object(s, depth, variant)
	case "array":
		return g.array(s, depth, variant)
	case "string":
		return g.str(s, variant)
	case "integer":
		return g.number(s, true, variant)
	case "number":
		return g.number(s, false, variant)
	case "boolean":
		return variant%2 == 0, nil
	case "null":
		return nil, nil
	default:
		return withVariant(Text, variant), nil
	}
}

// pickEnum returns the variant-th non-null value of enum (null only if
// it is all enum allows).
func pickEnum(enum []any, variant int) any {
	var vals []any
	for _, e := range enum {
		if e != nil {
			vals = append(vals, e)
		}
	}
	if len(vals) == 0 {
		return nil
	}
	return vals[variant%len(vals)]
}

// clone deep-copies a value taken from a schema, so that callers may
// change what Generate returns.
func clone(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var c any
	if json.Unmarshal(b, &c) != nil {
		return v
	}
	return c
}

// typeOf returns the JSON type to make for s: the first non-null one it
// names, else the one its keywords imply, else "" (any).
func typeOf(s *jsonschema.Schema) string {
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	for _, t := range types {
		if t != "null" {
			return t
		}
	}
	if len(types) > 0 {
		return "null"
	}
	switch {
	case s.Properties != nil || len(s.Required) > 0 || s.AdditionalProperties != nil || s.MinProperties != nil || s.PatternProperties != nil:
		return "object"
	case s.Items != nil || s.PrefixItems != nil || s.ItemsArray != nil || s.MinItems != nil || s.MaxItems != nil:
		return "array"
	case s.MinLength != nil || s.MaxLength != nil || s.Pattern != "" || s.Format != "":
		return "string"
	case s.Minimum != nil || s.Maximum != nil || s.ExclusiveMinimum != nil || s.ExclusiveMaximum != nil || s.MultipleOf != nil:
		return "number"
	}
	return ""
}

// alternative makes a value for a schema with oneOf or anyOf: the first
// alternative, merged with the rest of s, whose value s accepts (for
// oneOf, that no other alternative accepts as well); failing that, the
// first whose value with its optional properties s accepts.
func (g *generator) alternative(s *jsonschema.Schema, depth, variant int) (any, error) {
	kind, alts := "oneOf", s.OneOf
	base := *s
	if len(alts) > 0 {
		base.OneOf = nil
	} else {
		kind, alts = "anyOf", s.AnyOf
		base.AnyOf = nil
	}
	var errs []error
	for _, fill := range []bool{false, true} {
		if v, ok := g.alternativeOf(s, &base, kind, alts, depth, variant, fill, &errs); ok {
			return v, nil
		}
	}
	return nil, fmt.Errorf("no alternative of %s gives a value the schema accepts: %w", kind, errors.Join(errs...))
}

// alternativeOf tries each alternative in turn (with its optional
// properties if fill), and returns the first value s accepts.
func (g *generator) alternativeOf(s, base *jsonschema.Schema, kind string, alts []*jsonschema.Schema, depth, variant int, fill bool, errs *[]error) (any, bool) {
	if fill {
		prev := g.fill
		g.fill = depth
		defer func() { g.fill = prev }()
	}
	for i, alt := range alts {
		a, err := g.deref(alt)
		if err == nil && len(a.AllOf) > 0 {
			a, err = g.merged(a)
		}
		if err != nil {
			*errs = append(*errs, fmt.Errorf("%s[%d]: %w", kind, i, err))
			continue
		}
		cand := *base
		if err := combine(&cand, a); err != nil {
			*errs = append(*errs, fmt.Errorf("%s[%d]: %w", kind, i, err))
			continue
		}
		v, err := g.value(&cand, depth, variant)
		if err == nil {
			err = g.check(s, v)
		}
		if err != nil {
			if fill {
				err = fmt.Errorf("with its optional properties: %w", err)
			}
			*errs = append(*errs, fmt.Errorf("%s[%d]: %w", kind, i, err))
			continue
		}
		return v, true
	}
	return nil, false
}

// merged returns the schema whose values are those of s and of each of
// its allOf, as far as generation needs: types, bounds and lengths
// intersected, properties and required names united.
func (g *generator) merged(s *jsonschema.Schema) (*jsonschema.Schema, error) {
	m := *s
	m.AllOf = nil
	for i, sub := range s.AllOf {
		sub, err := g.deref(sub)
		if err != nil {
			return nil, fmt.Errorf("allOf[%d]: %w", i, err)
		}
		if len(sub.AllOf) > 0 {
			if sub, err = g.merged(sub); err != nil {
				return nil, fmt.Errorf("allOf[%d]: %w", i, err)
			}
		}
		if err := combine(&m, sub); err != nil {
			return nil, fmt.Errorf("allOf[%d]: %w", i, err)
		}
	}
	return &m, nil
}

// combine narrows m (a copy of its own: maps and slices it changes are
// new) by b, which has no "$ref" and no allOf.
func combine(m, b *jsonschema.Schema) error {
	if bt := typesOf(b); len(bt) > 0 {
		if mt := typesOf(m); len(mt) == 0 {
			m.Type, m.Types = "", bt
		} else {
			var both []string
			for _, t := range mt {
				if slices.Contains(bt, t) || (t == "integer" && slices.Contains(bt, "number")) {
					both = append(both, t)
				} else if t == "number" && slices.Contains(bt, "integer") {
					both = append(both, "integer")
				}
			}
			if len(both) == 0 {
				return fmt.Errorf("types %v and %v have no value in common", mt, bt)
			}
			m.Type, m.Types = "", both
		}
	}
	if b.Const != nil {
		m.Const = b.Const
	}
	if len(b.Enum) > 0 {
		if len(m.Enum) == 0 {
			m.Enum = b.Enum
		} else {
			var both []any
			for _, e := range m.Enum {
				if slices.ContainsFunc(b.Enum, func(f any) bool { return Brief(e) == Brief(f) }) {
					both = append(both, e)
				}
			}
			if len(both) == 0 {
				return errors.New("two enums have no value in common")
			}
			m.Enum = both
		}
	}
	m.Minimum = maxPtr(m.Minimum, b.Minimum)
	m.ExclusiveMinimum = maxPtr(m.ExclusiveMinimum, b.ExclusiveMinimum)
	m.Maximum = minPtr(m.Maximum, b.Maximum)
	m.ExclusiveMaximum = minPtr(m.ExclusiveMaximum, b.ExclusiveMaximum)
	if m.MultipleOf == nil {
		m.MultipleOf = b.MultipleOf
	}
	m.MinLength = maxPtr(m.MinLength, b.MinLength)
	m.MaxLength = minPtr(m.MaxLength, b.MaxLength)
	if m.Pattern == "" {
		m.Pattern = b.Pattern
	}
	if m.Format == "" {
		m.Format = b.Format
	}
	m.MinItems = maxPtr(m.MinItems, b.MinItems)
	m.MaxItems = minPtr(m.MaxItems, b.MaxItems)
	m.UniqueItems = m.UniqueItems || b.UniqueItems
	m.Items = both(m.Items, b.Items)
	if len(m.PrefixItems) == 0 {
		m.PrefixItems = b.PrefixItems
	}
	if b.Properties != nil {
		props := maps.Clone(m.Properties)
		if props == nil {
			props = map[string]*jsonschema.Schema{}
		}
		for name, p := range b.Properties {
			props[name] = both(props[name], p)
		}
		m.Properties = props
	}
	if len(b.Required) > 0 {
		req := slices.Clone(m.Required)
		for _, r := range b.Required {
			if !slices.Contains(req, r) {
				req = append(req, r)
			}
		}
		m.Required = req
	}
	if b.DependentRequired != nil {
		dr := maps.Clone(m.DependentRequired)
		if dr == nil {
			dr = map[string][]string{}
		}
		for k, v := range b.DependentRequired {
			dr[k] = append(slices.Clone(dr[k]), v...)
		}
		m.DependentRequired = dr
	}
	switch {
	case b.AdditionalProperties == nil:
	case m.AdditionalProperties == nil:
		m.AdditionalProperties = b.AdditionalProperties
	case isFalse(b.AdditionalProperties):
		m.AdditionalProperties = b.AdditionalProperties
	case !isFalse(m.AdditionalProperties):
		m.AdditionalProperties = both(m.AdditionalProperties, b.AdditionalProperties)
	}
	if b.PatternProperties != nil {
		pp := maps.Clone(m.PatternProperties)
		if pp == nil {
			pp = map[string]*jsonschema.Schema{}
		}
		for k, v := range b.PatternProperties {
			pp[k] = both(pp[k], v)
		}
		m.PatternProperties = pp
	}
	m.MinProperties = maxPtr(m.MinProperties, b.MinProperties)
	m.MaxProperties = minPtr(m.MaxProperties, b.MaxProperties)
	switch {
	case len(b.OneOf) == 0:
	case len(m.OneOf) == 0:
		m.OneOf = b.OneOf
	case len(m.AnyOf) == 0:
		m.AnyOf = b.OneOf
	default:
		return errors.New("more oneOf and anyOf than one value can be made for")
	}
	switch {
	case len(b.AnyOf) == 0:
	case len(m.AnyOf) == 0:
		m.AnyOf = b.AnyOf
	case len(m.OneOf) == 0:
		m.OneOf = b.AnyOf
	default:
		return errors.New("more oneOf and anyOf than one value can be made for")
	}
	if m.Not == nil {
		m.Not = b.Not
	}
	return nil
}

// both returns the schema of the values both a and b accept (either may
// be nil: no constraint).
func both(a, b *jsonschema.Schema) *jsonschema.Schema {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return &jsonschema.Schema{AllOf: []*jsonschema.Schema{a, b}}
}

func typesOf(s *jsonschema.Schema) []string {
	if s.Type != "" {
		return []string{s.Type}
	}
	return s.Types
}

func maxPtr[T int | float64](a, b *T) *T {
	if a == nil || (b != nil && *b > *a) {
		return b
	}
	return a
}

func minPtr[T int | float64](a, b *T) *T {
	if a == nil || (b != nil && *b < *a) {
		return b
	}
	return a
}

// object makes an object: its required properties (and those they
// require), its optional ones when Options.Optional reaches this deep,
// and extra ones up to minProperties.
func (g *generator) object(s *jsonschema.Schema, depth, variant int) (any, error) {
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	names := map[string]bool{}
	maps.Copy(names, required)
	if g.opts.Optional && depth < g.opts.MaxDepth || depth == g.fill {
		for name := range s.Properties {
			names[name] = true
		}
	}
	for changed := true; changed; {
		changed = false
		for name := range names {
			for _, dep := range s.DependentRequired[name] {
				if !names[dep] {
					names[dep], required[dep], changed = true, true, true
				}
			}
		}
	}
	order := slices.Sorted(maps.Keys(names))
	// Required names first, so that maxProperties drops optional ones.
	slices.SortStableFunc(order, func(a, b string) int {
		switch {
		case required[a] == required[b]:
			return 0
		case required[a]:
			return -1
		}
		return 1
	})
	if s.MaxProperties != nil && len(order) > *s.MaxProperties {
		order = order[:max(*s.MaxProperties, len(required))]
	}
	obj := make(map[string]any, len(order))
	for _, name := range order {
		v, err := g.value(propertySchema(s, name), depth+1, 0)
		if err != nil {
			if !required[name] {
				continue // an optional property it cannot fill is left out
			}
			return nil, fmt.Errorf("property %q: %w", name, err)
		}
		if !required[name] && isZero(v) {
			continue // as an omitempty field would be: say nothing rather than ""
		}
		obj[name] = v
	}
	if s.MinProperties != nil {
		spare := slices.Sorted(maps.Keys(s.Properties))
		for i := 1; len(obj) < *s.MinProperties; i++ {
			if i > *s.MinProperties+len(spare)+1 {
				return nil, fmt.Errorf("cannot make the %d properties minProperties asks for", *s.MinProperties)
			}
			var name string
			if len(spare) > 0 {
				name, spare = spare[0], spare[1:]
			} else if s.AdditionalProperties == nil || !isFalse(s.AdditionalProperties) {
				name = "extra" + strconv.Itoa(i)
			} else {
				continue
			}
			if _, ok := obj[name]; ok {
				continue
			}
			v, err := g.value(propertySchema(s, name), depth+1, i)
			if err != nil {
				return nil, fmt.Errorf("property %q: %w", name, err)
			}
			obj[name] = v
		}
	}
	return obj, nil
}

// propertySchema is the schema of s's property name: its own, else the
// first patternProperties' that matches it, else additionalProperties,
// else any.
func propertySchema(s *jsonschema.Schema, name string) *jsonschema.Schema {
	if p, ok := s.Properties[name]; ok && p != nil {
		return p
	}
	for _, pat := range slices.Sorted(maps.Keys(s.PatternProperties)) {
		if re, err := compile(pat); err == nil && re.MatchString(name) {
			return s.PatternProperties[pat]
		}
	}
	if s.AdditionalProperties != nil {
		return s.AdditionalProperties
	}
	return &jsonschema.Schema{}
}

// array makes an array of minItems items (two when Options.Optional
// reaches this deep and maxItems allows), each a different variant of
// its item schema, distinct if uniqueItems asks.
func (g *generator) array(s *jsonschema.Schema, depth, variant int) (any, error) {
	lo := 0
	if s.MinItems != nil {
		lo = *s.MinItems
	}
	n := lo
	if g.opts.Optional && depth < g.opts.MaxDepth && n < 2 {
		n = 2
	}
	if s.MaxItems != nil && n > *s.MaxItems {
		n = *s.MaxItems
	}
	if n < lo {
		return nil, fmt.Errorf("minItems %d is more than maxItems %d", lo, n)
	}
	items := make([]any, 0, n)
	seen := map[string]bool{}
	for i := 0; len(items) < n; i++ {
		if i > n+32 {
			if len(items) >= lo {
				break
			}
			return nil, fmt.Errorf("cannot make %d distinct items", lo)
		}
		v, err := g.value(itemSchema(s, len(items)), depth+1, i)
		if err != nil {
			if len(items) >= lo {
				break
			}
			return nil, fmt.Errorf("item %d: %w", len(items), err)
		}
		if s.UniqueItems {
			key := Brief(v)
			if seen[key] {
				continue
			}
			seen[key] = true
		}
		items = append(items, v)
	}
	return items, nil
}

// itemSchema is the schema of the i-th item of an array of s.
func itemSchema(s *jsonschema.Schema, i int) *jsonschema.Schema {
	switch {
	case i < len(s.PrefixItems):
		return s.PrefixItems[i]
	case i < len(s.ItemsArray):
		return s.ItemsArray[i]
	case len(s.ItemsArray) > 0 && s.AdditionalItems != nil:
		return s.AdditionalItems
	case s.Items != nil:
		return s.Items
	}
	return &jsonschema.Schema{}
}

// isZero reports whether v is its JSON type's zero value: null, false,
// 0, "", [] or {}.
func isZero(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case bool:
		return !v
	case float64:
		return v == 0
	case string:
		return v == ""
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}

// children returns s's direct subschemas.
func children(s *jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	add := func(ss ...*jsonschema.Schema) {
		for _, c := range ss {
			if c != nil {
				out = append(out, c)
			}
		}
	}
	addMap := func(m map[string]*jsonschema.Schema) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			add(m[k])
		}
	}
	add(s.Items, s.AdditionalItems, s.Contains, s.UnevaluatedItems, s.AdditionalProperties,
		s.PropertyNames, s.UnevaluatedProperties, s.Not, s.If, s.Then, s.Else, s.ContentSchema)
	add(s.PrefixItems...)
	add(s.ItemsArray...)
	add(s.AllOf...)
	add(s.AnyOf...)
	add(s.OneOf...)
	addMap(s.Properties)
	addMap(s.PatternProperties)
	addMap(s.DependentSchemas)
	addMap(s.DependencySchemas)
	return out
}
