package server

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"
)

func TestKindsOf(t *testing.T) {
	tests := []struct {
		schema *jsonschema.Schema
		want   structKinds
	}{
		{nil, 0},
		{&jsonschema.Schema{}, 0}, // any value, strings too
		{&jsonschema.Schema{Type: "string"}, 0},
		{&jsonschema.Schema{Type: "integer"}, 0},
		{&jsonschema.Schema{Type: "array"}, kindArray},
		{&jsonschema.Schema{Type: "object"}, kindObject},
		{&jsonschema.Schema{Types: []string{"array", "null"}}, kindArray},
		{&jsonschema.Schema{Types: []string{"array", "object"}}, kindArray | kindObject},
		{&jsonschema.Schema{Types: []string{"array", "string"}}, 0},
		{&jsonschema.Schema{Types: []string{"string", "object"}}, 0},
	}
	for _, tt := range tests {
		if got := kindsOf(tt.schema); got != tt.want {
			data, _ := json.Marshal(tt.schema)
			t.Errorf("kindsOf(%s) = %v, want %v", data, got, tt.want)
		}
	}
}

func TestDecodeArgs(t *testing.T) {
	props := map[string]structKinds{"list": kindArray, "obj": kindObject, "either": kindArray | kindObject, "opt": kindDropNull, "optList": kindArray | kindDropNull}
	tests := []struct {
		in, want string // want "" means unchanged
	}{
		{`{"list":"[1,2]"}`, `{"list":[1,2]}`},
		{`{"list":" [1] ","other":"[2]"}`, `{"list":[1],"other":"[2]"}`},
		{`{"obj":"{\"a\":[1]}"}`, `{"obj":{"a":[1]}}`},
		{`{"either":"{}","list":"[]"}`, `{"either":{},"list":[]}`},
		{`{"list":[1]}`, ""},
		{`{"list":"{}"}`, ""},                   // an object for an array
		{`{"obj":"[]"}`, ""},                    // an array for an object
		{`{"list":"[1,"}`, ""},                  // not JSON
		{`{"list":"1"}`, ""},                    // JSON, but no array
		{`{"list":""}`, ""},                     // empty
		{`{"other":"[1]"}`, ""},                 // not a structured property
		{`["list"]`, ""},                        // not an object: left to validation
		{`{"list":"[1]"`, ""},                   // broken
		{``, ""},                                // no arguments
		{`{"list":"\u005b1]"}`, `{"list":[1]}`}, // an escaped bracket is still one
		{`{"opt":null,"list":[1]}`, `{"list":[1]}`},
		{`{"optList":null,"opt":"x"}`, `{"opt":"x"}`},
		{`{"optList":"[2]"}`, `{"optList":[2]}`},
		{`{"list":null}`, ""},  // required, or accepting null: left to validation
		{`{"other":null}`, ""}, // not a known property
		{`{"opt":"null"}`, ""}, // a string
	}
	for _, tt := range tests {
		got, changed := decodeArgs(json.RawMessage(tt.in), props)
		if tt.want == "" {
			if changed {
				t.Errorf("decodeArgs(%s) = %s, want it unchanged", tt.in, got)
			}
			continue
		}
		if !changed {
			t.Errorf("decodeArgs(%s) unchanged, want %s", tt.in, tt.want)
			continue
		}
		var gotV, wantV any
		if err := json.Unmarshal(got, &gotV); err != nil {
			t.Fatalf("decodeArgs(%s) = %s: %v", tt.in, got, err)
		}
		json.Unmarshal([]byte(tt.want), &wantV)
		if diff := cmp.Diff(wantV, gotV); diff != "" {
			t.Errorf("decodeArgs(%s) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func BenchmarkDecodeArgs(b *testing.B) {
	props := map[string]structKinds{"ids": kindArray, "filter": kindObject}
	for _, bc := range []struct{ name, args string }{
		{"json", `{"ids":["a","b","c"],"filter":{"min":1},"name":"x"}`},
		{"encoded", `{"ids":"[\"a\",\"b\",\"c\"]","filter":"{\"min\":1}","name":"x"}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			raw := json.RawMessage(bc.args)
			b.ReportAllocs()
			for b.Loop() {
				decodeArgs(raw, props)
			}
		})
	}
}
