package schemavalue_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/toolroute/toolroute/internal/testing/schemavalue"
)

func schema(t *testing.T, text string) *jsonschema.Schema {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(text), &s); err != nil {
		t.Fatalf("schema %s: %v", text, err)
	}
	return &s
}

// validate checks v against s with jsonschema-go, on its own: the test
// does not trust Generate's check.
func validate(t *testing.T, s *jsonschema.Schema, v any) {
	t.Helper()
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	if err := rs.Validate(v); err != nil {
		t.Errorf("value %s is not valid: %v", schemavalue.Brief(v), err)
	}
}

func TestGenerate(t *testing.T) {
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	dateTime := regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$`)
	for _, tc := range []struct {
		name     string
		schema   string
		optional bool
		want     any                // the exact value, if check is nil
		check    func(v any) string // else: a complaint, or ""
	}{
		{name: "string", schema: `{"type":"string"}`, want: schemavalue.Text},
		{name: "untyped", schema: `{}`, want: schemavalue.Text},
		{name: "nullable string", schema: `{"type":["null","string"]}`, want: schemavalue.Text},
		{name: "null", schema: `{"type":"null"}`, want: nil},
		{name: "boolean", schema: `{"type":"boolean"}`, want: true},
		{name: "const", schema: `{"const":{"a":[1,2]}}`, want: map[string]any{"a": []any{1.0, 2.0}}},
		{name: "enum: the first", schema: `{"type":"string","enum":["b","a"]}`, want: "b"},
		{name: "enum: not null", schema: `{"enum":[null,"on"]}`, want: "on"},
		{name: "integer", schema: `{"type":"integer"}`, want: 1.0},
		{name: "integer in bounds", schema: `{"type":"integer","minimum":10,"maximum":20}`, want: 10.0},
		{name: "integer above an exclusive minimum", schema: `{"type":"integer","exclusiveMinimum":10}`, want: 11.0},
		{name: "integer below an exclusive maximum", schema: `{"type":"integer","exclusiveMaximum":1}`, want: -1.0},
		{name: "integer: zero only if nothing else", schema: `{"type":"integer","minimum":0,"maximum":0}`, want: 0.0},
		{name: "integer: not zero", schema: `{"type":"integer","maximum":0}`, want: -1.0},
		{name: "multipleOf", schema: `{"type":"integer","multipleOf":5,"minimum":12}`, want: 15.0},
		{name: "number", schema: `{"type":"number"}`, want: 1.5},
		{name: "number between exclusive bounds", schema: `{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1}`, check: func(v any) string {
			if f := v.(float64); f <= 0 || f >= 1 {
				return "not in (0, 1)"
			}
			return ""
		}},
		{name: "minLength", schema: `{"type":"string","minLength":10}`, want: schemavalue.Text + "xxx"},
		{name: "maxLength", schema: `{"type":"string","maxLength":3}`, want: "x y"},
		{name: "pattern", schema: `{"type":"string","pattern":"^[A-Z]{3}-\\d{2,4}$"}`, want: "AAA-00"},
		{name: "pattern and minLength", schema: `{"type":"string","pattern":"^[a-z]+$","minLength":4}`, want: "aaaa"},
		{name: "unanchored pattern", schema: `{"type":"string","pattern":"ab","minLength":5}`, want: "abxxx"},
		{name: "pattern alternation", schema: `{"type":"string","pattern":"^(cat|dog)s?$"}`, want: "cat"},
		{name: "format uuid", schema: `{"type":"string","format":"uuid"}`, check: func(v any) string {
			if !uuid.MatchString(v.(string)) {
				return "not a UUID"
			}
			return ""
		}},
		{name: "format date-time", schema: `{"type":"string","format":"date-time"}`, check: func(v any) string {
			if !dateTime.MatchString(v.(string)) {
				return "not an RFC 3339 date-time"
			}
			return ""
		}},
		{name: "format email", schema: `{"type":"string","format":"email"}`, want: "someone@example.com"},
		{name: "format and pattern", schema: `{"type":"string","format":"email","pattern":"^[a-z]+@corp\\.example$"}`, want: "a@corp.example"},
		{name: "object: required only", schema: `{"type":"object","required":["b"],"properties":{"a":{"type":"string"},"b":{"type":"integer"}}}`,
			want: map[string]any{"b": 1.0}},
		{name: "object: optional too", optional: true, schema: `{"type":"object","required":["b"],"properties":{"a":{"type":"string"},"b":{"type":"integer"}}}`,
			want: map[string]any{"a": schemavalue.Text, "b": 1.0}},
		{name: "optional zero values left out", optional: true, schema: `{"type":"object","properties":{"o":{"type":"object","properties":{"deep":{"type":"object","properties":{"deeper":{"type":"object","properties":{"x":{"type":"string"}}}}}}},"e":{"enum":[""]},"n":{"type":"integer","maximum":0,"minimum":0}}}`,
			want: map[string]any{}},
		{name: "required zero values kept", optional: true, schema: `{"type":"object","required":["e","n"],"properties":{"e":{"enum":[""]},"n":{"type":"integer","maximum":0,"minimum":0}}}`,
			want: map[string]any{"e": "", "n": 0.0}},
		{name: "dependentRequired", schema: `{"type":"object","required":["a"],"properties":{"a":{"type":"string"},"b":{"type":"boolean"}},"dependentRequired":{"a":["b"]}}`,
			want: map[string]any{"a": schemavalue.Text, "b": true}},
		{name: "minProperties", schema: `{"type":"object","minProperties":2,"additionalProperties":{"type":"integer","minimum":3}}`,
			want: map[string]any{"extra1": 4.0, "extra2": 5.0}},
		{name: "maxProperties keeps required ones", optional: true, schema: `{"type":"object","maxProperties":1,"required":["z"],"properties":{"a":{"type":"string"},"z":{"type":"string"}}}`,
			want: map[string]any{"z": schemavalue.Text}},
		{name: "array: minItems", schema: `{"type":"array","minItems":1,"items":{"type":"string"}}`, want: []any{schemavalue.Text}},
		{name: "array: two distinct items", optional: true, schema: `{"type":"array","items":{"type":"integer"}}`, want: []any{1.0, 2.0}},
		{name: "array: unique enum items", optional: true, schema: `{"type":"array","uniqueItems":true,"items":{"enum":["a","b"]}}`, want: []any{"a", "b"}},
		{name: "array: maxItems", optional: true, schema: `{"type":"array","maxItems":1,"items":{"type":"boolean"}}`, want: []any{true}},
		{name: "prefixItems", schema: `{"type":"array","minItems":2,"prefixItems":[{"type":"integer"},{"type":"string","format":"date"}]}`,
			want: []any{1.0, "2024-05-07"}},
		{name: "allOf merges", schema: `{"$defs":{"A":{"type":"object","required":["a"],"properties":{"a":{"type":"string"}}}},
			"allOf":[{"$ref":"#/$defs/A"},{"required":["b"],"properties":{"b":{"type":"integer","minimum":4}}}]}`,
			want: map[string]any{"a": schemavalue.Text, "b": 4.0}},
		{name: "allOf narrows bounds", schema: `{"allOf":[{"type":"integer","minimum":3},{"maximum":3}]}`, want: 3.0},
		{name: "oneOf: the first alternative that works", schema: `{"oneOf":[{"type":"integer","minimum":5,"maximum":3},{"type":"string"}]}`, want: schemavalue.Text},
		{name: "oneOf: exactly one", schema: `{"type":"object","oneOf":[{"required":["a"],"properties":{"a":{"type":"string"}}},{"required":["b"],"properties":{"b":{"type":"string"}}}]}`,
			want: map[string]any{"a": schemavalue.Text}},
		{name: "oneOf: not the first alternative, which another one matches too", schema: `{"type":"object","required":["k"],"oneOf":[{"properties":{"k":{"type":"string","maxLength":3}}},{"properties":{"k":{"type":"string","maxLength":5}}}]}`,
			want: map[string]any{"k": "x y&z"}},
		{name: "oneOf told apart by an optional property", schema: `{"type":"object","oneOf":[{"properties":{"type":{"enum":["a"]},"n":{"type":"integer"}}},{"properties":{"type":{"enum":["b"]}}}]}`,
			want: map[string]any{"type": "a", "n": 1.0}},
		{name: "anyOf", schema: `{"anyOf":[{"type":"string","maxLength":0,"minLength":1},{"type":"boolean"}]}`, want: true},
		{name: "$ref with siblings", schema: `{"$defs":{"S":{"type":"string"}},"$ref":"#/$defs/S","maxLength":1}`, want: "x"},
		{name: "definitions", schema: `{"definitions":{"N":{"type":"integer","minimum":7}},"$ref":"#/definitions/N"}`, want: 7.0},
		{name: "recursion is bounded", optional: true, schema: `{"$defs":{"Node":{"type":"object","required":["v"],"properties":{"v":{"type":"string"},"kids":{"type":"array","items":{"$ref":"#/$defs/Node"}}}}},"$ref":"#/$defs/Node"}`,
			check: func(v any) string {
				if depth(v) > 8 {
					return "nests too deep"
				}
				return ""
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := schema(t, tc.schema)
			v, err := schemavalue.Generate(s, schemavalue.Options{Optional: tc.optional})
			if err != nil {
				t.Fatal(err)
			}
			validate(t, s, v)
			if tc.check != nil {
				if msg := tc.check(v); msg != "" {
					t.Errorf("value %s: %s", schemavalue.Brief(v), msg)
				}
			} else if diff := cmp.Diff(tc.want, v); diff != "" {
				t.Errorf("value (-want +got):\n%s", diff)
			}
			again, err := schemavalue.Generate(schema(t, tc.schema), schemavalue.Options{Optional: tc.optional})
			if err != nil || !cmp.Equal(v, again) {
				t.Errorf("not deterministic: %s, then %s (%v)", schemavalue.Brief(v), schemavalue.Brief(again), err)
			}
		})
	}
}

func depth(v any) int {
	d := 0
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			d = max(d, depth(e))
		}
		return d + 1
	case []any:
		for _, e := range v {
			d = max(d, depth(e))
		}
		return d + 1
	}
	return 0
}

// TestGenerateRefuses checks that what no value satisfies, or what
// generation gets wrong, is an error and never an invalid value.
func TestGenerateRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, schema, want string
	}{
		{"false schema", `{"not":{}}`, "admits no value"},
		{"a value the schema's not refuses", `{"type":"string","not":{"const":"` + schemavalue.Text + `"}}`, "is not valid for the schema"},
		{"oneOf that two alternatives match", `{"oneOf":[{"type":"object"},{"type":"object","properties":{"a":{"type":"string"}}}]}`, "no alternative of oneOf"},
		{"empty bounds", `{"type":"integer","minimum":3,"maximum":2}`, "no integer lies within"},
		{"lengths", `{"type":"string","minLength":3,"maxLength":2}`, "minLength 3 is more than maxLength 2"},
		{"endless required recursion", `{"$defs":{"L":{"type":"object","required":["next"],"properties":{"next":{"$ref":"#/$defs/L"}}}},"$ref":"#/$defs/L"}`, "nest more than"},
		{"remote ref", `{"$ref":"https://example.com/s.json"}`, "only \"#\""},
		{"missing definition", `{"$ref":"#/$defs/Nope"}`, "no such definition"},
		{"too few distinct items", `{"type":"array","minItems":3,"uniqueItems":true,"items":{"type":"boolean"}}`, "cannot make 3 distinct items"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := schemavalue.Generate(schema(t, tc.schema), schemavalue.Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Generate = %s, %v; want an error containing %q", schemavalue.Brief(v), err, tc.want)
			}
		})
	}
}

// TestObject checks the entry point for tools' input schemas: an object,
// or an error for a schema whose value is none.
func TestObject(t *testing.T) {
	s := schema(t, `{"type":"object","required":["id"],"properties":{"id":{"type":"string","minLength":1},"limit":{"type":"integer","minimum":1,"maximum":100}}}`)
	got, err := schemavalue.Object(s, schemavalue.Options{Optional: true})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"id": schemavalue.Text, "limit": 1.0}, got); diff != "" {
		t.Errorf("Object (-want +got):\n%s", diff)
	}
	if _, err := schemavalue.Object(schema(t, `{"type":"string"}`), schemavalue.Options{}); err == nil || !strings.Contains(err.Error(), "not an object") {
		t.Errorf("Object of a string schema: %v; want an error saying it is not an object", err)
	}
}
