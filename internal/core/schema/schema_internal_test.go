package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	invopop "github.com/invopop/jsonschema"
)

type benchArgs struct {
	ID    string `json:"id" jsonschema:"minLength=1,description=the item's id"`
	Limit int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=100"`
}

type benchResult struct {
	ID    string   `json:"id"`
	Name  string   `json:"name"`
	Count int      `json:"count"`
	Tags  []string `json:"tags,omitempty"`
}

// TestObjectSchemaShared checks that handlers of the same types share
// their schemas, and that input and output schemas of one type do not.
func TestObjectSchemaShared(t *testing.T) {
	a, errA := Output(reflect.TypeFor[benchResult]())
	b, errB := Output(reflect.TypeFor[benchResult]())
	c, errC := Input(reflect.TypeFor[benchResult]())
	if errA != nil || errB != nil || errC != nil {
		t.Fatal(errA, errB, errC)
	}
	if a != b {
		t.Error("two output schemas of one type differ")
	}
	if a == c {
		t.Error("the input and output schemas of one type are shared")
	}
	_, err1 := Input(reflect.TypeFor[[]int]())
	_, err2 := Input(reflect.TypeFor[[]int]())
	if err1 == nil || err1 != err2 {
		t.Errorf("cached errors: %v, %v", err1, err2)
	}
}

// BenchmarkObjectSchemaUncached is what Handle costs for a tool whose
// argument and result types no other handler uses: reflecting and
// resolving both schemas.
func BenchmarkObjectSchemaUncached(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := newObject(reflect.TypeFor[benchArgs](), false); err != nil {
			b.Fatal(err)
		}
		if _, err := newObject(reflect.TypeFor[benchResult](), true); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSchemaForUncached(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := For(reflect.TypeFor[benchArgs]()); err != nil {
			b.Fatal(err)
		}
		if _, err := For(reflect.TypeFor[benchResult]()); err != nil {
			b.Fatal(err)
		}
	}
}

type Inner struct {
	Z int
}

type inner struct {
	ID string `json:"id"`
}

type Level string

type hidden string

type twiceA struct{ Inner }

type twiceB struct{ Inner }

type tagA struct {
	Name string `json:"Name"`
}

type tagB struct {
	Name string
}

type stringer struct{}

func (stringer) String() string { return "s" }

// TestJSONFieldsAgreeWithMarshal checks that jsonFields names the keys
// json.Marshal writes for a value of the type whose fields are all set,
// in its order, and the fields it writes under them.
func TestJSONFieldsAgreeWithMarshal(t *testing.T) {
	tests := []struct {
		name  string
		value any
		want  map[string][]int // index of the field under some keys
	}{
		{"invalid tag name", struct {
			Owner string `json:"owner's"`
			Kind  string `json:"kind"`
		}{"o", "k"}, map[string][]int{"Owner": {0}}},
		{"string option", struct {
			N int    `json:"n,string"`
			S string `json:"s,string"`
		}{1, "s"}, map[string][]int{"n": {0}, "s": {1}}},
		{"embedded struct named by its tag", struct {
			Inner `json:"inner"`
			X     int `json:"x"`
		}{Inner{1}, 2}, map[string][]int{"inner": {0}}},
		{"embedded pointer to an unexported struct", struct {
			*inner
			X int `json:"x"`
		}{&inner{"i"}, 1}, map[string][]int{"id": {0, 0}}},
		{"embedded exported non-struct", struct {
			Level
			X int `json:"x"`
		}{"l", 1}, map[string][]int{"Level": {0}}},
		{"embedded unexported non-struct", struct {
			hidden
			X int `json:"x"`
		}{"h", 1}, map[string][]int{"x": {1}}},
		{"the same type twice at one depth", struct {
			twiceA
			twiceB
			X int `json:"x"`
		}{twiceA{Inner{1}}, twiceB{Inner{2}}, 3}, nil},
		{"a tag wins at one depth", struct {
			tagB
			tagA
		}{tagB{"b"}, tagA{"a"}}, map[string][]int{"Name": {1, 0}}},
		{"the shallower wins", struct {
			ID string `json:"id"`
			inner
		}{"outer", inner{"inner"}}, map[string][]int{"id": {0}}},
		{"embedded interface", struct {
			fmt.Stringer
		}{stringer{}}, map[string][]int{"Stringer": {0}}},
		{"dash comma", struct {
			D string `json:"-,"`
			E string `json:"-"`
		}{"d", "e"}, map[string][]int{"-": {0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := json.Marshal(tt.value)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.Token()
			for dec.More() {
				k, _ := dec.Token()
				want = append(want, k.(string))
				var skip json.RawMessage
				dec.Decode(&skip)
			}
			fields, rec := jsonFields(reflect.TypeOf(tt.value))
			if rec != nil {
				t.Fatalf("jsonFields: recursive through %v", rec)
			}
			var got []string
			for _, f := range fields {
				got = append(got, f.name)
				if index, ok := tt.want[f.name]; ok && !slices.Equal(index, f.index) {
					t.Errorf("field %q at %v, want %v", f.name, f.index, index)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("jsonFields names %q, json.Marshal writes %s", got, data)
			}
		})
	}
}

type loop struct {
	*loop
	X int `json:"x"`
}

type hiddenLoop struct {
	*hiddenLoop `jsonschema:"-"`
	X           int `json:"x"`
}

// TestEmbeddedRecursion checks that a struct that embeds itself is
// refused, not reflected until the stack overflows.
func TestEmbeddedRecursion(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[loop](), reflect.TypeFor[hiddenLoop]()} {
		_, err := For(typ)
		if err == nil || !strings.Contains(err.Error(), "contains itself (through schema.") {
			t.Errorf("For(%v) = %v, want a recursive type refused", typ, err)
		}
	}
}

type pair struct{ A, B int }

func (p pair) MarshalJSON() ([]byte, error) { return json.Marshal([2]int{p.A, p.B}) }

// aliased is reflected as another type, which holds a marshaler that
// does not describe itself.
type aliased struct{ N int }

func (aliased) JSONSchemaAlias() any {
	return struct {
		P pair `json:"p"`
	}{}
}

// TestAliasChecked checks that the type a JSONSchemaAlias method gives is
// checked as the reflector reflects it.
func TestAliasChecked(t *testing.T) {
	_, err := Input(reflect.TypeFor[struct {
		A aliased `json:"a"`
	}]())
	if err == nil || !strings.Contains(err.Error(), "schema.pair marshals itself (MarshalJSON)") {
		t.Errorf("err = %v, want pair refused", err)
	}
}

// described describes itself, and is written as its fields.
type described struct {
	L []string `json:"l"`
}

func (described) JSONSchema() *invopop.Schema {
	props := invopop.NewProperties()
	props.Set("l", &invopop.Schema{Type: "array", Items: &invopop.Schema{Type: "string"}})
	return &invopop.Schema{Type: "object", Properties: props}
}

// renamed describes itself with properties that are not its fields.
type renamed struct {
	L []string `json:"l"`
}

func (renamed) JSONSchema() *invopop.Schema {
	props := invopop.NewProperties()
	props.Set("list", &invopop.Schema{Type: "array"})
	return &invopop.Schema{Type: "object", Properties: props}
}

// TestDescribedOutputNulls checks that an output accepts the nulls
// encoding/json writes in a type that describes itself, and that such a
// type's properties are its author's choice.
func TestDescribedOutputNulls(t *testing.T) {
	s, err := Output(reflect.TypeFor[struct {
		D described `json:"d"`
		R renamed   `json:"r"`
	}]())
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Schema.Properties["d"].Properties["l"].Types; !slices.Equal(got, []string{"array", "null"}) {
		t.Errorf("types of d.l = %q, want array and null", got)
	}
	if got := s.Schema.Properties["r"].Properties["list"].Type; got != "array" {
		t.Errorf("type of r.list = %q, want array", got)
	}
}
