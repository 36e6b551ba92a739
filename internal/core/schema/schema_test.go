package schema_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/toolroute/toolroute/internal/core/schema"
)

type filter struct {
	MinPrice float64 `json:"minPrice" jsonschema:"minimum=0"`
	InStock  *bool   `json:"inStock,omitempty"`
}

func TestFor(t *testing.T) {
	s, err := schema.For(reflect.TypeFor[*filter]())
	if err != nil {
		t.Fatal(err)
	}
	want := &jsonschema.Schema{
		Type: "object",
		Properties: map[string]*jsonschema.Schema{
			"minPrice": {Type: "number", Minimum: jsonschema.Ptr(0.0)},
			"inStock":  {Type: "boolean"},
		},
		Required:             []string{"minPrice"},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
		// The struct's order, not the alphabet's.
		PropertyOrder: []string{"minPrice", "inStock"},
	}
	if diff := cmp.Diff(want, s, cmp.AllowUnexported(jsonschema.Schema{})); diff != "" {
		t.Errorf("For mismatch (-want +got):\n%s", diff)
	}
	if _, err := schema.For(reflect.TypeFor[fmt.Stringer]()); err == nil {
		t.Error("For(fmt.Stringer) succeeded")
	}
}
