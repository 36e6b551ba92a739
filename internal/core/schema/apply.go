package schema

import (
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	segjson "github.com/segmentio/encoding/json"
)

// Object is a tool's argument or result schema made ready to serve: the
// schema, its JSON (encoded once, byte for byte what encoding/json writes
// for the schema) and its resolved form (resolved once), which validates.
//
// A tool added to the SDK with the schema itself costs a
// jsonschema.Schema.MarshalJSON at every Server.AddTool (the SDK encodes
// the input schema to look for x-mcp-header annotations) and, over
// streamable HTTP from MCP 2026-07-28, at every tools/call (it looks
// again). Added with the JSON, the SDK copies bytes instead, and
// [Object.Input] and [Object.Output] validate as the SDK's typed tools do.
type Object struct {
	Schema   *jsonschema.Schema
	JSON     json.RawMessage
	Resolved *jsonschema.Resolved
}

func newObjectOf(s *jsonschema.Schema, what string) (*Object, error) {
	r, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		return nil, fmt.Errorf("invalid schema: %w", err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("%s schema does not encode: %w", what, err)
	}
	return &Object{Schema: s, JSON: b, Resolved: r}, nil
}

// Input validates a tool's arguments (nil or empty: none) against o and
// applies its defaults, as the go-sdk's typed tools (mcp.AddTool) do, with
// the same error texts: they are read into a map (so no arguments are
// {}, and so are null arguments), given their defaults, validated, and
// written again. The caller decodes the result into the handler's
// argument type with [Decode].
//
// The SDK's texts matter: clients, tests and internal/sdkfix/schemamsg read
// them; the tool's handler wraps them as the SDK does (`validating
// "arguments": ...`).
func (o *Object) Input(data json.RawMessage) (json.RawMessage, error) {
	v := make(map[string]any)
	if len(data) > 0 {
		if err := Decode(data, &v); err != nil {
			return nil, fmt.Errorf("unmarshaling arguments: %w", err)
		}
	}
	if v == nil {
		// Arguments null: none. (go-sdk v1.8.0's typed tools keep the
		// nil map null decodes to, and jsonschema-go's ApplyDefaults
		// panics writing a default into it: the crash go-sdk #1062
		// fixed for Elicit. tool's TestSDKParity fails when go-sdk
		// fixes it.)
		v = make(map[string]any)
	}
	var value any = v
	if err := o.Resolved.ApplyDefaults(&value); err != nil {
		return nil, fmt.Errorf("applying schema defaults:\n%w", err)
	}
	if err := o.Resolved.Validate(&value); err != nil {
		return nil, err
	}
	out, err := json.Marshal(value)
	if err != nil {
		return nil, fmt.Errorf("marshalling with defaults: %v", err)
	}
	return out, nil
}

// Output validates a tool's structured result, as encoding/json wrote it,
// against o and applies its defaults, as the go-sdk's typed tools do: an
// object is read into a map, given its defaults, validated and written
// again; null becomes {} with the defaults where the schema's type is
// exactly "object" (an output schema that accepts null keeps it).
func (o *Object) Output(data json.RawMessage) (json.RawMessage, error) {
	var value any
	if len(data) > 0 {
		if err := Decode(data, &value); err != nil {
			return nil, fmt.Errorf("unmarshaling output: %w", err)
		}
	}
	if value == nil && o.Schema.Type == "object" {
		value = make(map[string]any)
	}
	_, isMap := value.(map[string]any)
	if isMap {
		if err := o.Resolved.ApplyDefaults(&value); err != nil {
			return nil, fmt.Errorf("applying schema defaults:\n%w", err)
		}
	}
	if err := o.Resolved.Validate(&value); err != nil {
		return nil, err
	}
	if !isMap {
		return data, nil
	}
	out, err := json.Marshal(value)
	if err != nil {
		return nil, fmt.Errorf("marshalling with defaults: %v", err)
	}
	return out, nil
}

// maxDepth is the nesting the SDK's JSON layer accepts.
const maxDepth = 1000

var errDepth = fmt.Errorf("json: exceeded maximum nesting depth of %d", maxDepth)

// Decode reads data, one JSON value, into v as the SDK's JSON layer does
// (github.com/segmentio/encoding/json, object keys matched to struct
// fields case-sensitively, nesting refused beyond 1,000 levels), with
// the same error texts, without the 32 KiB read buffer the SDK's
// decoder allocates for every value.
func Decode(data []byte, v any) error {
	if err := checkDepth(data); err != nil {
		return err
	}
	_, err := segjson.Parse(data, v, segjson.DontMatchCaseInsensitiveStructFields)
	return err
}

// checkDepth refuses data nested deeper than maxDepth. It only counts
// brackets outside strings: a syntax error is left to the decoder.
func checkDepth(data []byte) error {
	depth, inString, escaped := 0, false, false
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > maxDepth {
				return errDepth
			}
		case '}', ']':
			depth = max(depth-1, 0)
		}
	}
	return nil
}
