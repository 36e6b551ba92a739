package schema

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// written caches jsonFields' answers by struct type, as encoding/json
// caches its own.
var written sync.Map // reflect.Type → *writtenFields

type writtenFields struct {
	fields []field
	rec    reflect.Type
}

// jsonFields returns the fields encoding/json reads and writes for struct
// type t, in the order it writes them, as encoding/json itself says: it
// marshals t's shadow (see shadow) with every field holding its own
// index path, and reads which key holds which field. rec is the type, if
// any, that contains itself through embedded structs, which a shadow
// cannot.
func jsonFields(t reflect.Type) (fields []field, rec reflect.Type) {
	if w, ok := written.Load(t); ok {
		return w.(*writtenFields).fields, w.(*writtenFields).rec
	}
	w := new(writtenFields)
	st, rec := shadow(t, nil)
	if rec != nil {
		w.rec = rec
	} else {
		v := reflect.New(st).Elem()
		fill(v, "")
		data, err := json.Marshal(v.Interface())
		if err != nil {
			panic("schema: marshaling the shadow of " + t.String() + ": " + err.Error())
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.Token() // {
		for dec.More() {
			name, _ := dec.Token()
			value, _ := dec.Token()
			marker := value.(string)
			if q, err := strconv.Unquote(marker); err == nil {
				marker = q // a field with the ,string option
			}
			var index []int
			for s := range strings.SplitSeq(marker, ".") {
				i, _ := strconv.Atoi(s)
				index = append(index, i)
			}
			w.fields = append(w.fields, fieldAt(t, name.(string), index))
		}
	}
	v, _ := written.LoadOrStore(t, w)
	return v.(*writtenFields).fields, v.(*writtenFields).rec
}

// fieldAt returns the field of struct type t at index, named name.
func fieldAt(t reflect.Type, name string, index []int) field {
	f := field{name: name, index: index}
	for _, i := range index {
		f.sf = deref(t).Field(i)
		if f.path != "" {
			f.path += "."
		}
		f.path += f.sf.Name
		t = f.sf.Type
	}
	return f
}

var stringType = reflect.TypeFor[string]()

// shadows caches shadow's answers by struct type.
var (
	shadows     sync.Map // reflect.Type → reflect.Type
	shadowCount atomic.Int64
)

// shadow returns the shadow of struct type t: a struct type with t's
// field names, tags, embedding and exportedness, whose fields are strings
// (or structs, for embedded structs, which are shadows too). What
// encoding/json reads and writes of a struct depends on those alone, not
// on its fields' types or the identity of its embedded struct types,
// except in two ways reflect.StructOf cannot
// express, translated here by encoding/json's documented rules: an
// embedded struct named by a valid tag is a field of that name, and an
// embedded field of an unexported non-struct type is ignored. An embedded
// struct of an unexported type gets an exported name, which only a tag
// could make its key. rec is the type, if any, that contains itself
// through embedded structs.
func shadow(t reflect.Type, outer []reflect.Type) (st, rec reflect.Type) {
	if s, ok := shadows.Load(t); ok {
		return s.(reflect.Type), nil
	}
	for _, o := range outer {
		if o == t {
			return nil, t
		}
	}
	outer = append(outer, t)
	fs := make([]reflect.StructField, t.NumField())
	for i := range fs {
		sf := t.Field(i)
		f := reflect.StructField{Name: sf.Name, PkgPath: sf.PkgPath, Tag: sf.Tag, Type: stringType}
		if sf.Anonymous {
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			switch {
			case sf.Tag.Get("json") == "-" || !sf.IsExported() && ft.Kind() != reflect.Struct:
				// Ignored: an unexported field of the same index.
				f.PkgPath, f.Name = "schema", "ǝ"+sf.Name
			case ft.Kind() == reflect.Struct && validName(name):
				f.PkgPath, f.Name = "", "Ǝ"+sf.Name
			case ft.Kind() == reflect.Struct:
				if f.Type, rec = shadow(ft, outer); rec != nil {
					return nil, rec
				}
				f.Anonymous, f.PkgPath, f.Name = true, "", "Ǝ"+sf.Name
			default:
				f.Anonymous = true
			}
			if sf.Type.Kind() == reflect.Pointer {
				f.Type = reflect.PointerTo(f.Type)
			}
		}
		if f.PkgPath != "" {
			f.PkgPath = "schema" // reflect.StructOf wants one for all
		}
		fs[i] = f
	}
	// encoding/json tells types apart (the same type embedded twice at
	// one depth annihilates its fields): so must shadows, which an
	// unexported field tagged with a number of t's own does.
	fs = append(fs, reflect.StructField{Name: "ǝ", PkgPath: "schema", Type: reflect.TypeFor[struct{}](),
		Tag: reflect.StructTag(strconv.FormatInt(shadowCount.Add(1), 10))})
	st = reflect.StructOf(fs)
	s, _ := shadows.LoadOrStore(t, st)
	return s.(reflect.Type), nil
}

// fill sets every string of struct v (a shadow, addressable) to its index
// path, through embedded structs, allocating embedded pointers.
func fill(v reflect.Value, prefix string) {
	for i := range v.NumField() {
		f := v.Field(i)
		if !f.CanSet() {
			continue
		}
		if f.Kind() == reflect.Pointer {
			f.Set(reflect.New(f.Type().Elem()))
			f = f.Elem()
		}
		path := prefix + strconv.Itoa(i)
		if f.Kind() == reflect.Struct {
			fill(f, path+".")
		} else {
			f.SetString(path)
		}
	}
}

// validNames caches validName's answers.
var validNames sync.Map // string → bool

// validName reports whether encoding/json names a field by the tag name
// name, asking it: it marshals a struct of one field so tagged.
func validName(name string) bool {
	if name == "" {
		return false
	}
	if v, ok := validNames.Load(name); ok {
		return v.(bool)
	}
	t := reflect.StructOf([]reflect.StructField{{Name: "F", Type: stringType, Tag: reflect.StructTag(`json:` + strconv.Quote(name))}})
	v := reflect.New(t).Elem()
	data, err := json.Marshal(v.Interface())
	if err != nil {
		panic("schema: marshaling a struct tagged " + strconv.Quote(name) + ": " + err.Error())
	}
	var m map[string]any
	valid := json.Unmarshal(data, &m) == nil && m[name] != nil
	validNames.Store(name, valid)
	return valid
}
