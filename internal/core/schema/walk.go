package schema

import (
	"cmp"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// A node is what the walk learned about one node of a type's schema: how
// to fit what the reflector wrote to what encoding/json reads and writes.
// A nil node needs nothing.
type node struct {
	t     reflect.Type
	kind  reflect.Kind    // reflect.Struct, reflect.Slice (arrays too) or reflect.Map
	props map[string]prop // struct: the properties the reflector describes
	omits []string        // struct: properties a nil embedded pointer omits
	elem  prop            // slice, array, map: the element or value
	keys  string          // map: the pattern of the keys encoding/json writes, or textKeys
	own   bool            // struct: its author describes it, with properties of their choice
}

// textKeys marks a map whose keys MarshalText writes.
const textKeys = "text"

// A prop is a node in its place: a property, element or value, which
// encoding/json writes as null for a Go nil if null is set.
type prop struct {
	n    *node
	null bool
}

// A field is a struct field as encoding/json or the reflector names it.
type field struct {
	name   string
	tagged bool  // named by its tag
	index  []int // as reflect.Type.FieldByIndex
	path   string
	sf     reflect.StructField
	ptr    bool // promoted through an embedded pointer
}

func (f field) String() string {
	if len(f.index) > 1 {
		return fmt.Sprintf("the embedded %s %v", f.path, f.sf.Type)
	}
	return fmt.Sprintf("%s %v", f.path, f.sf.Type)
}

// The kinds of problem, most fundamental first: walk reports the first
// problem of the first kind it found.
const (
	recursion = iota
	marshaling
	wire
	kinds
)

// A walker walks a type once, through the fields, elements and map values
// the reflector describes, the way the reflector does.
type walker struct {
	root  reflect.Type
	outer []reflect.Type // the named types being walked, of any kind
	check bool           // refuse what is wrong; false below a type that describes itself
	same  bool           // compare struct fields with encoding/json's
	errs  [kinds]error
}

// walk walks t and returns its node, or the reason t's schema cannot
// describe what encoding/json reads and writes for it.
func walk(t reflect.Type) (*node, error) {
	w := &walker{root: t, check: true, same: true}
	n := w.walk(t)
	for _, err := range w.errs {
		if err != nil {
			return nil, err
		}
	}
	return n, nil
}

// recursive reports that t, inside w.root, contains itself.
func (w *walker) recursive(t reflect.Type) {
	// The reflector inlines every type: it would recurse until the stack
	// overflows, which no recover can catch.
	w.fail(recursion, fmt.Errorf("%v contains itself (through %v): an inline schema cannot describe a recursive type", w.root, t))
}

func (w *walker) fail(kind int, err error) {
	if w.check && w.errs[kind] == nil {
		w.errs[kind] = err
	}
}

func (w *walker) walk(t reflect.Type) *node {
	defer func(outer []reflect.Type, check, same bool) {
		w.outer, w.check, w.same = outer, check, same
	}(w.outer, w.check, w.same)
	// A named type of any kind can contain itself (type tree
	// map[string]tree).
	for {
		if t.Name() != "" {
			if slices.Contains(w.outer, t) {
				w.recursive(t)
				return nil
			}
			w.outer = append(w.outer, t)
		}
		if t.Kind() != reflect.Pointer {
			break
		}
		t = t.Elem()
	}
	// What marshals itself has a JSON its fields do not describe.
	switch {
	case !w.check:
		if marshals(t) {
			return nil
		}
	case t == urlType:
		w.fail(marshaling, fmt.Errorf("%v is an object of its fields for encoding/json, which cannot read a URL string into it: use a string field (and url.Parse it)", t))
		return nil
	case t == numberType || reflectorKnows(t):
		return nil
	case t.Implements(invopopAlias):
		// The reflector describes another type: check it as it is
		// reflected, but not as encoding/json writes it (t is written).
		if alias := reflect.TypeOf(reflect.New(t).Interface().(interface{ JSONSchemaAlias() any }).JSONSchemaAlias()); alias != nil {
			same := w.same
			w.same = false
			w.walk(alias)
			w.same = same
		}
		fallthrough
	case t.Implements(invopopSchema):
		if marshals(t) {
			return nil
		}
		// Its author describes it: find the nulls encoding/json writes,
		// refuse nothing.
		w.check = false
	case t.Implements(jsonMarshaler):
		w.fail(marshaling, fmt.Errorf("%v marshals itself (MarshalJSON), so its fields do not describe its JSON: give it a JSONSchema() *jsonschema.Schema method (github.com/invopop/jsonschema, value receiver) or a JSONSchemaAlias() any method", t))
		return nil
	case reflect.PointerTo(t).Implements(jsonMarshaler):
		w.fail(marshaling, pointerMarshaler(t, "MarshalJSON"))
		return nil
	case t.Implements(textMarshaler):
		return nil // a string
	case reflect.PointerTo(t).Implements(textMarshaler):
		w.fail(marshaling, pointerMarshaler(t, "MarshalText"))
		return nil
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil // base64 string, or integers
		}
		return &node{t: t, kind: reflect.Slice, elem: prop{w.walk(t.Elem()), nilable(t.Elem())}}
	case reflect.Map:
		keys := w.mapKeys(t)
		return &node{t: t, kind: reflect.Map, keys: keys, elem: prop{w.walk(t.Elem()), nilable(t.Elem())}}
	case reflect.Struct:
		return w.walkStruct(t)
	case reflect.Chan, reflect.Func, reflect.Complex64, reflect.Complex128, reflect.UnsafePointer:
		// encoding/json cannot encode these, and the reflector panics on
		// them: refuse them here, with a message.
		if w.check {
			w.fail(wire, fmt.Errorf("%v holds a %v, which encoding/json cannot encode: leave it out of the JSON (json:\"-\")", w.root, t))
		}
	}
	return nil
}

func pointerMarshaler(t reflect.Type, method string) error {
	return fmt.Errorf("%v has %s on its pointer only (*%v), which encoding/json does not call for a value it cannot address, such as a result, so its JSON is sometimes its fields: give %s a value receiver", t, method, t, method)
}

// mapKeys refuses a map type t whose keys encoding/json cannot write, and
// returns how it writes them: integer keys as decimal digits, with a sign
// for a negative one (the reflector allows digits only, for signed keys
// only), a TextMarshaler's as MarshalText writes them.
func (w *walker) mapKeys(t reflect.Type) string {
	if !w.check {
		return ""
	}
	k := t.Key()
	text := k.Implements(textMarshaler)
	switch k.Kind() {
	case reflect.String:
		return ""
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if text {
			return textKeys
		}
		return "^-?[0-9]+$"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if text {
			return textKeys
		}
		return "^[0-9]+$"
	}
	if !text {
		w.fail(wire, fmt.Errorf("%v: encoding/json cannot write a map key of type %v: use string, integer or encoding.TextMarshaler keys", t, k))
	}
	return "" // the reflector's additionalProperties
}

// walkStruct walks the fields the reflector describes for struct type t
// and, unless t describes itself, checks that they are the fields
// encoding/json writes.
func (w *walker) walkStruct(t reflect.Type) *node {
	var all []field
	w.described(t, nil, "", false, &all)
	n := &node{t: t, kind: reflect.Struct, props: map[string]prop{}, own: !w.check}
	props := map[string]field{}
	var order []string
	for _, f := range all { // a later field of a name replaces an earlier one
		if _, ok := props[f.name]; !ok {
			order = append(order, f.name)
		}
		props[f.name] = f
	}
	if w.check && w.same {
		w.compare(t, props, all)
	}
	for _, name := range order {
		f := props[name]
		n.props[name] = prop{w.walk(f.sf.Type), nilable(f.sf.Type) && !omits(f.sf)}
		if f.ptr {
			n.omits = append(n.omits, name) // a nil embedded pointer omits all its fields
		}
	}
	return n
}

// described appends to all the fields the reflector describes for struct
// type t, in its order: it promotes the fields of embedded structs (and of
// fields tagged inline) depth first, and skips fields tagged json:"-..."
// or jsonschema:"-". Of the fields of one name, it describes the last.
func (w *walker) described(t reflect.Type, index []int, path string, ptr bool, all *[]field) {
	for i := range t.NumField() {
		sf := t.Field(i)
		tags := strings.Split(sf.Tag.Get("json"), ",")
		if tags[0] == "-" || strings.Split(sf.Tag.Get("jsonschema"), ",")[0] == "-" {
			continue
		}
		fi := append(slices.Clone(index), i)
		fp := sf.Name
		if path != "" {
			fp = path + "." + sf.Name
		}
		ft := sf.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if sf.Anonymous && tags[0] == "" && ft.Kind() == reflect.Struct || slices.Contains(tags[1:], "inline") {
			if ft.Kind() == reflect.Struct {
				if slices.Contains(w.outer, ft) {
					w.recursive(ft)
					continue
				}
				w.outer = append(w.outer, ft)
				w.described(ft, fi, fp, ptr || sf.Type.Kind() == reflect.Pointer, all)
				w.outer = w.outer[:len(w.outer)-1]
			}
			continue
		}
		if !sf.Anonymous && !sf.IsExported() {
			continue
		}
		*all = append(*all, field{name: cmp.Or(tags[0], sf.Name), tagged: tags[0] != "", index: fi, path: fp, sf: sf, ptr: ptr})
	}
}

// compare checks that the properties the reflector describes for struct
// type t are the fields encoding/json reads and writes, by name and by Go
// field. all is every field the reflector saw, replaced ones included.
func (w *walker) compare(t reflect.Type, described map[string]field, all []field) {
	fields, rec := jsonFields(t)
	if rec != nil {
		w.recursive(rec)
		return
	}
	var problems []string
	written := map[string]bool{}
	for _, f := range fields {
		written[f.name] = true
		d, ok := described[f.name]
		switch {
		case ok && slices.Equal(d.index, f.index):
		case ok:
			problems = append(problems, fmt.Sprintf("field %q: encoding/json writes %v, the schema describes %v (rename one)", f.name, f, d))
		default:
			why := ""
			switch tags := strings.Split(f.sf.Tag.Get("json"), ","); {
			case strings.Split(f.sf.Tag.Get("jsonschema"), ",")[0] == "-":
				why = ` (jsonschema:"-" hides it from the schema only; json:"-" drops it)`
			case slices.Contains(tags[1:], "inline"):
				why = " (encoding/json has no inline option)"
			case tags[0] != "" && tags[0] != f.name:
				why = fmt.Sprintf(" (encoding/json ignores the tag name %q, not a valid key for it)", tags[0])
			}
			problems = append(problems, fmt.Sprintf("field %q: encoding/json writes %v, the schema does not describe it%s", f.name, f, why))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(described)) {
		if written[name] {
			continue
		}
		d := described[name]
		why := "encoding/json does not write it"
		if same := sameDepth(all, name); len(same) > 1 {
			why = fmt.Sprintf("encoding/json writes neither %v nor %v (the same name at the same depth)", same[0], same[1])
		} else if d.sf.Anonymous {
			why = "encoding/json ignores an embedded field of an unexported type that is not a struct"
		}
		problems = append(problems, fmt.Sprintf("field %q: the schema describes %v, but %s", name, d, why))
	}
	if len(problems) > 0 {
		w.fail(wire, fmt.Errorf("%v: %s", t, strings.Join(problems, "; ")))
	}
}

// sameDepth returns the fields of all named name at the least depth any
// is, if they are all named by their tag or all not (for encoding/json, a
// tag names a field above the others at its depth).
func sameDepth(all []field, name string) []field {
	var same []field
	for _, f := range all {
		switch {
		case f.name != name:
		case len(same) == 0 || len(f.index) < len(same[0].index):
			same = []field{f}
		case len(f.index) == len(same[0].index):
			same = append(same, f)
		}
	}
	for _, f := range same {
		if f.tagged != same[0].tagged {
			return nil
		}
	}
	return same
}

// fit fits s, the schema reflected from n's type, to what encoding/json
// reads and writes: map keys, and for an output the nulls it writes.
func (n *node) fit(s *jsonschema.Schema, output bool) error {
	if n == nil || s == nil {
		return nil
	}
	switch n.kind {
	case reflect.Struct:
		if !n.own && s.Properties != nil && !slices.Equal(slices.Sorted(maps.Keys(s.Properties)), slices.Sorted(maps.Keys(n.props))) {
			return fmt.Errorf("%v: the schema's properties %q are not the fields %q it should describe", n.t, slices.Sorted(maps.Keys(s.Properties)), slices.Sorted(maps.Keys(n.props)))
		}
		for name, p := range n.props {
			if err := p.fit(s.Properties[name], output); err != nil {
				return err
			}
		}
		if output {
			s.Required = slices.DeleteFunc(s.Required, func(name string) bool { return slices.Contains(n.omits, name) })
		}
	case reflect.Slice:
		return n.elem.fit(s.Items, output)
	case reflect.Map:
		if n.keys != "" {
			// The reflector gives signed integer keys patternProperties
			// "^[0-9]+$", and other keys additionalProperties.
			value := s.AdditionalProperties
			for _, v := range s.PatternProperties {
				value = v
			}
			if value == nil {
				value = &jsonschema.Schema{} // any value
			}
			if n.keys == textKeys {
				s.PatternProperties, s.AdditionalProperties = nil, value
			} else {
				s.PatternProperties = map[string]*jsonschema.Schema{n.keys: value}
				s.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
			}
		}
		for _, v := range s.PatternProperties {
			return n.elem.fit(v, output) // the only one; additionalProperties is false
		}
		return n.elem.fit(s.AdditionalProperties, output)
	}
	return nil
}

// fit fits s, the schema of p's place, as its node does, and for an
// output makes it accept null if encoding/json writes one there.
func (p prop) fit(s *jsonschema.Schema, output bool) error {
	if s == nil {
		return nil
	}
	if output && p.null {
		nullable(s)
	}
	return p.n.fit(s, output)
}

// omits reports whether encoding/json omits field f when it is empty or
// zero.
func omits(f reflect.StructField) bool {
	_, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
	for o := range strings.SplitSeq(opts, ",") {
		if o == "omitempty" || o == "omitzero" {
			return true
		}
	}
	return false
}

// nilable reports whether a value of type t can marshal to null.
func nilable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map:
		return true
	}
	return false
}

// nullable makes s accept null too. A schema without a type already
// accepts it, unless it is an enum or const, or a oneOf or anyOf (a
// union of upstream's, which describes itself), which becomes an anyOf
// of itself and {"type": "null"}.
func nullable(s *jsonschema.Schema) {
	if s.Type == "" && len(s.Types) == 0 && (len(s.OneOf) > 0 || len(s.AnyOf) > 0) {
		union := *s
		*s = jsonschema.Schema{AnyOf: []*jsonschema.Schema{&union, {Type: "null"}}}
		return
	}
	switch {
	case s.Type != "":
		s.Types = []string{s.Type, "null"}
		s.Type = ""
	case len(s.Types) > 0 && !slices.Contains(s.Types, "null"):
		s.Types = append(s.Types, "null")
	}
	if len(s.Enum) > 0 && !slices.Contains(s.Enum, nil) {
		s.Enum = append(s.Enum, nil)
	}
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}
