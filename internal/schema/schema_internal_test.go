package schema

import (
	"reflect"
	"testing"
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
