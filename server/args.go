package server

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/tool"
)

// Some clients (and models) send array or object arguments as JSON text
// in a string: {"ids": "[\"a\",\"b\"]"} for {"ids": ["a","b"]}. The SDK's
// validation would refuse such arguments; the server decodes them first,
// only where it is unambiguous: a top-level property whose schema accepts
// arrays or objects and not strings, whose value is a string holding
// valid JSON of an accepted kind.
//
// Models also often send null for an optional argument they mean to
// leave out ({"note": null}). The schema refuses it, though encoding/json
// would read it as absent: the server drops a null top-level argument
// that is not required and whose schema does not accept null.

// structKinds are the structured kinds a property accepts.
type structKinds uint8

const (
	kindArray structKinds = 1 << iota
	kindObject
	// kindDropNull marks an optional property whose schema refuses null:
	// a null value is dropped.
	kindDropNull
)

// argDecoder knows, for each tool with such properties, the structured
// kinds each of its top-level properties accepts.
type argDecoder map[string]map[string]structKinds

// newArgDecoder reads the tools' input schemas. A property that accepts a
// string, or whose schema names no type, is never decoded.
func newArgDecoder(tools []*tool.Call) argDecoder {
	d := argDecoder{}
	for _, t := range tools {
		if t.InputSchema == nil {
			continue
		}
		for name, p := range t.InputSchema.Properties {
			k := kindsOf(p)
			if !slices.Contains(t.InputSchema.Required, name) && !acceptsNull(p) {
				k |= kindDropNull
			}
			if k == 0 {
				continue
			}
			if d[t.Tool] == nil {
				d[t.Tool] = map[string]structKinds{}
			}
			d[t.Tool][name] = k
		}
	}
	return d
}

// acceptsNull reports whether s accepts null, or may (it names no type).
func acceptsNull(s *jsonschema.Schema) bool {
	if s == nil || s.Type == "" && len(s.Types) == 0 {
		return true
	}
	return s.Type == "null" || slices.Contains(s.Types, "null")
}

func kindsOf(s *jsonschema.Schema) structKinds {
	if s == nil {
		return 0
	}
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	var k structKinds
	for _, t := range types {
		switch t {
		case "string":
			return 0
		case "array":
			k |= kindArray
		case "object":
			k |= kindObject
		}
	}
	return k
}

// middleware decodes the string-encoded structured arguments of every
// tools/call of a known tool before its handler validates them.
func (d argDecoder) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		cr, ok := req.(*mcp.CallToolRequest)
		if !ok || cr.Params == nil {
			return next(ctx, method, req)
		}
		props := d[cr.Params.Name]
		if props == nil {
			return next(ctx, method, req)
		}
		if args, ok := decodeArgs(cr.Params.Arguments, props); ok {
			params := *cr.Params
			params.Arguments = args
			r := *cr
			r.Params = &params
			req = &r
		}
		return next(ctx, method, req)
	}
}

// decodeArgs returns raw with the string values of props decoded where
// they hold JSON of a kind the property accepts and the nulls of optional
// properties dropped, and whether it changed anything. Arguments that are
// not a JSON object are left to validation.
func decodeArgs(raw json.RawMessage, props map[string]structKinds) (json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' || !maybeEncoded(raw) && !bytes.Contains(raw, []byte("null")) {
		return nil, false
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil, false
	}
	changed := false
	for name, v := range args {
		k := props[name]
		if k&kindDropNull != 0 && string(v) == "null" {
			delete(args, name)
			changed = true
			continue
		}
		if k&(kindArray|kindObject) == 0 || len(v) == 0 || v[0] != '"' {
			continue
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			continue
		}
		inner := bytes.TrimSpace([]byte(s))
		if len(inner) == 0 {
			continue
		}
		switch {
		case inner[0] == '[' && k&kindArray != 0, inner[0] == '{' && k&kindObject != 0:
		default:
			continue
		}
		if !json.Valid(inner) {
			continue
		}
		args[name] = inner
		changed = true
	}
	if !changed {
		return nil, false
	}
	out, err := json.Marshal(args)
	if err != nil {
		return nil, false
	}
	return out, true
}

// maybeEncoded reports whether raw may hold a string starting with "[" or
// "{" (after spaces or escapes): a quick test that spares most calls the
// decoding.
func maybeEncoded(raw []byte) bool {
	return bytes.Contains(raw, []byte(`"[`)) || bytes.Contains(raw, []byte(`"{`)) ||
		bytes.Contains(raw, []byte(`" `)) || bytes.Contains(raw, []byte(`"\`))
}
