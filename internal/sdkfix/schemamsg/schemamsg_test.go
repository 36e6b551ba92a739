package schemamsg

import "testing"

// TestPlain: the validator's texts for a null and for a number out of
// bounds are rewritten naming the argument its schema path leads to;
// every other text is left alone. (server's TestPlainSchemaMessages
// checks the texts the SDK really writes.)
func TestPlain(t *testing.T) {
	const v = `validating "arguments": `
	for _, tt := range []struct{ in, want string }{
		{v + `validating root: validating /properties/count: type: <invalid reflect.Value> has type "null", want "integer"`,
			v + `argument "count": null is not allowed (want integer)`},
		{v + `validating root: validating /properties/id: type: <invalid reflect.Value> has type "null", want one of "integer, string"`,
			v + `argument "id": null is not allowed (want one of integer, string)`},
		{v + `validating root: type: <invalid reflect.Value> has type "null", want "object"`,
			v + `arguments: null is not allowed (want object)`},
		{v + `validating root: validating /properties/a~1b~0c/properties/d: type: <invalid reflect.Value> has type "null", want "string"`,
			v + `argument "a/b~c.d": null is not allowed (want string)`},
		{v + `validating root: validating /properties/tags/items: type: <invalid reflect.Value> has type "null", want "string"`,
			v + `argument "tags[]": null is not allowed (want string)`},
		{v + `validating root: validating /properties/m/additionalProperties: type: <invalid reflect.Value> has type "null", want "string"`,
			v + `arguments: null is not allowed (want string)`},
		{v + `validating root: validating /properties/count: maximum: 100000000000000000000/1 is greater than 1000000.000000`,
			v + `argument "count": maximum: 1e+20 is greater than 1000000`},
		{v + `validating root: validating /properties/count: minimum: -1/1 is less than 0.000000`,
			v + `argument "count": minimum: -1 is less than 0`},
		{v + `validating root: validating /properties/ratio: exclusiveMaximum: 3/1 is greater than or equal to 2.250000`,
			v + `argument "ratio": exclusiveMaximum: 3 is greater than or equal to 2.25`},
		{v + `validating root: validating /properties/ratio: exclusiveMinimum: 1/2 is less than or equal to 0.500000`,
			v + `argument "ratio": exclusiveMinimum: 0.5 is less than or equal to 0.5`},
		{v + `validating root: validating /properties/step: multipleOf: 7/1 is not a multiple of 5.000000`,
			v + `argument "step": multipleOf: 7 is not a multiple of 5`},
	} {
		got, ok := Plain(tt.in)
		if !ok || got != tt.want {
			t.Errorf("Plain(%q) = %q, %v; want %q", tt.in, got, ok, tt.want)
		}
	}
	for _, in := range []string{
		v + `validating root: validating /properties/kind: enum: c does not equal any of: [a b]`,
		v + `validating root: validating /properties/count: type: 0.5 has type "number", want "integer"`,
		v + `validating root: validating /properties/count: maximum: 1/0 is greater than 3.000000`,
		`validating root: validating /properties/count: type: <invalid reflect.Value> has type "null", want "integer"`,
		`tool error: upstream said no`,
	} {
		if got, ok := Plain(in); ok {
			t.Errorf("Plain(%q) = %q, want it left alone", in, got)
		}
	}
}
