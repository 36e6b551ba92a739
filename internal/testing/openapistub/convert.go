package openapistub

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/jsonschema-go/jsonschema"
)

// Use says which side of an exchange a schema describes, for the
// properties OpenAPI marks readOnly or writeOnly.
type Use int

const (
	// InResponse drops writeOnly properties (and their "required"): a
	// server does not send them.
	InResponse Use = iota
	// InRequest drops readOnly properties (and their "required"): a
	// client does not send them.
	InRequest
)

// JSONSchema converts an OpenAPI schema, as kin-openapi loaded it (3.0
// or 3.1, references resolved), into a JSON Schema 2020-12 document for
// jsonschema-go and package schemavalue: every schema it reaches through
// a "$ref" becomes one entry of its "$defs" (so recursive schemas stay
// finite), 3.0's nullable becomes a "null" type, 3.0's boolean
// exclusiveMinimum/Maximum the 2020-12 numbers, and a discriminator's
// mapping a const on its property in each alternative. Annotations
// (descriptions, examples, defaults) are left out. use says which of
// readOnly and writeOnly properties to drop.
func JSONSchema(ref *openapi3.SchemaRef, use Use) (*jsonschema.Schema, error) {
	c := &converter{use: use, names: map[*openapi3.Schema]string{}, taken: map[string]bool{}, defs: map[string]*jsonschema.Schema{}}
	s, err := c.ref(ref)
	if err != nil {
		return nil, err
	}
	if len(c.defs) > 0 {
		if s.Ref != "" {
			// A root that is a reference: keep it one, next to the
			// definitions (2020-12 allows "$ref" with siblings).
			s = &jsonschema.Schema{Ref: s.Ref}
		}
		s.Defs = c.defs
	}
	return s, nil
}

type converter struct {
	use   Use
	names map[*openapi3.Schema]string // the $defs entry of each referenced schema
	taken map[string]bool
	defs  map[string]*jsonschema.Schema
}

// ref converts one schema reference: a "$ref" to its $defs entry (made
// the first time), an inline schema in place.
func (c *converter) ref(r *openapi3.SchemaRef) (*jsonschema.Schema, error) {
	if r == nil {
		return &jsonschema.Schema{}, nil
	}
	if r.Value == nil {
		return nil, fmt.Errorf("openapistub: unresolved $ref %q", r.Ref)
	}
	if r.Ref == "" {
		return c.schema(r.Value)
	}
	name, ok := c.names[r.Value]
	if !ok {
		name = c.defName(r.Ref)
		c.names[r.Value] = name
		c.taken[name] = true
		s, err := c.schema(r.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.Ref, err)
		}
		c.defs[name] = s
	}
	return &jsonschema.Schema{Ref: "#/$defs/" + escapePointer(name)}, nil
}

// defName is the $defs name for a reference: the component's name,
// made unique.
func (c *converter) defName(ref string) string {
	name := ref
	if i := strings.LastIndex(ref, "#/components/schemas/"); i >= 0 {
		name = ref[i+len("#/components/schemas/"):]
	}
	name = strings.NewReplacer("/", ".", "~", ".", "#", ".").Replace(name)
	unique := name
	for i := 2; c.taken[unique]; i++ {
		unique = name + "." + strconv.Itoa(i)
	}
	return unique
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// skipped reports whether a property of this schema is left out for c's
// use.
func (c *converter) skipped(p *openapi3.SchemaRef) bool {
	if p == nil || p.Value == nil {
		return false
	}
	return (c.use == InResponse && p.Value.WriteOnly) || (c.use == InRequest && p.Value.ReadOnly)
}

func (c *converter) list(refs openapi3.SchemaRefs) ([]*jsonschema.Schema, error) {
	var out []*jsonschema.Schema
	for i, r := range refs {
		s, err := c.ref(r)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		out = append(out, s)
	}
	return out, nil
}

func (c *converter) props(m openapi3.Schemas) (map[string]*jsonschema.Schema, error) {
	if m == nil {
		return nil, nil
	}
	out := map[string]*jsonschema.Schema{}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if c.skipped(m[name]) {
			continue
		}
		s, err := c.ref(m[name])
		if err != nil {
			return nil, fmt.Errorf("property %q: %w", name, err)
		}
		out[name] = s
	}
	return out, nil
}

func intPtr(n uint64) *int {
	i := int(n)
	return &i
}

func optInt(n *uint64) *int {
	if n == nil {
		return nil
	}
	return intPtr(*n)
}

// schema converts one schema's keywords.
func (c *converter) schema(v *openapi3.Schema) (*jsonschema.Schema, error) {
	out := &jsonschema.Schema{
		Format:            v.Format,
		Pattern:           v.Pattern,
		UniqueItems:       v.UniqueItems,
		Minimum:           v.Min,
		Maximum:           v.Max,
		MultipleOf:        v.MultipleOf,
		MaxLength:         optInt(v.MaxLength),
		MaxItems:          optInt(v.MaxItems),
		MaxProperties:     optInt(v.MaxProps),
		MinContains:       optInt(v.MinContains),
		MaxContains:       optInt(v.MaxContains),
		Required:          nil,
		Enum:              slices.Clone(v.Enum),
		DependentRequired: maps.Clone(v.DependentRequired),
	}
	if v.Type != nil {
		types := slices.Clone(v.Type.Slice())
		if v.Nullable && !slices.Contains(types, "null") && len(types) > 0 {
			types = append(types, "null")
		}
		switch len(types) {
		case 0:
		case 1:
			out.Type = types[0]
		default:
			out.Types = types
		}
	}
	if v.Nullable && len(out.Enum) > 0 && !slices.Contains(out.Enum, nil) {
		out.Enum = append(out.Enum, nil)
	}
	if v.Const != nil {
		k := v.Const
		out.Const = &k
	}
	switch {
	case v.ExclusiveMin.Value != nil:
		out.ExclusiveMinimum = v.ExclusiveMin.Value
	case v.ExclusiveMin.Bool != nil && *v.ExclusiveMin.Bool && v.Min != nil:
		out.ExclusiveMinimum, out.Minimum = v.Min, nil
	}
	switch {
	case v.ExclusiveMax.Value != nil:
		out.ExclusiveMaximum = v.ExclusiveMax.Value
	case v.ExclusiveMax.Bool != nil && *v.ExclusiveMax.Bool && v.Max != nil:
		out.ExclusiveMaximum, out.Maximum = v.Max, nil
	}
	if v.MinLength > 0 {
		out.MinLength = intPtr(v.MinLength)
	}
	if v.MinItems > 0 {
		out.MinItems = intPtr(v.MinItems)
	}
	if v.MinProps > 0 {
		out.MinProperties = intPtr(v.MinProps)
	}
	var err error
	if v.Items != nil {
		if out.Items, err = c.ref(v.Items); err != nil {
			return nil, fmt.Errorf("items: %w", err)
		}
	}
	if out.PrefixItems, err = c.list(v.PrefixItems); err != nil {
		return nil, fmt.Errorf("prefixItems%w", err)
	}
	if out.Properties, err = c.props(v.Properties); err != nil {
		return nil, err
	}
	for _, r := range v.Required {
		if p, ok := v.Properties[r]; ok && c.skipped(p) {
			continue
		}
		out.Required = append(out.Required, r)
	}
	switch {
	case v.AdditionalProperties.Has != nil && !*v.AdditionalProperties.Has:
		out.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
	case v.AdditionalProperties.Schema != nil:
		if out.AdditionalProperties, err = c.ref(v.AdditionalProperties.Schema); err != nil {
			return nil, fmt.Errorf("additionalProperties: %w", err)
		}
	}
	if out.PatternProperties, err = c.props(v.PatternProperties); err != nil {
		return nil, err
	}
	for _, sub := range []struct {
		name string
		from *openapi3.SchemaRef
		to   **jsonschema.Schema
	}{
		{"not", v.Not, &out.Not}, {"contains", v.Contains, &out.Contains}, {"propertyNames", v.PropertyNames, &out.PropertyNames},
		{"if", v.If, &out.If}, {"then", v.Then, &out.Then}, {"else", v.Else, &out.Else},
	} {
		if sub.from == nil {
			continue
		}
		if *sub.to, err = c.ref(sub.from); err != nil {
			return nil, fmt.Errorf("%s: %w", sub.name, err)
		}
	}
	if out.AllOf, err = c.list(v.AllOf); err != nil {
		return nil, fmt.Errorf("allOf%w", err)
	}
	if out.AnyOf, err = c.list(v.AnyOf); err != nil {
		return nil, fmt.Errorf("anyOf%w", err)
	}
	if out.OneOf, err = c.list(v.OneOf); err != nil {
		return nil, fmt.Errorf("oneOf%w", err)
	}
	if d := v.Discriminator; d != nil && d.PropertyName != "" {
		discriminate(d, v.OneOf, out.OneOf)
		discriminate(d, v.AnyOf, out.AnyOf)
	}
	return out, nil
}

// discriminate makes each alternative (refs, converted into alts) hold
// its discriminator value: the mapping's key for its reference, else the
// name of the component it references.
func discriminate(d *openapi3.Discriminator, refs openapi3.SchemaRefs, alts []*jsonschema.Schema) {
	for i, r := range refs {
		if r == nil || r.Ref == "" {
			continue
		}
		key := r.Ref[strings.LastIndex(r.Ref, "/")+1:]
		for _, k := range slices.Sorted(maps.Keys(d.Mapping)) {
			if d.Mapping[k].Ref == r.Ref {
				key = k
				break
			}
		}
		var value any = key
		alts[i] = &jsonschema.Schema{AllOf: []*jsonschema.Schema{alts[i], {
			Properties: map[string]*jsonschema.Schema{d.PropertyName: {Const: &value}},
			Required:   []string{d.PropertyName},
		}}}
	}
}
