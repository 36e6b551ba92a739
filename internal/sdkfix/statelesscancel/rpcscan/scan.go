package rpcscan

import (
	"bytes"
	"encoding/json"
)

// wireMessage is what [Scan] reads of a JSON-RPC message.
type wireMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

// Scan returns the ids of the tools/call requests a body (a
// JSON-RPC message or a batch) carries (appended to ids), and the ids its
// notifications/cancelled name, each as an [IDKey]: only calls are
// reported, not other requests. A body that does not parse carries none
// (whoever serves it answers it). A body that names neither method, even
// escaped, is not decoded.
func Scan(body []byte, ids []string) (_, cancelled []string) {
	if !bytes.Contains(body, []byte("tools/call")) && !bytes.Contains(body, []byte("notifications/cancelled")) && bytes.IndexByte(body, '\\') < 0 {
		return ids, nil
	}
	if !json.Valid(body) {
		return ids, nil
	}
	if m, ok := scanPlain(body); ok {
		return m.scan(ids, nil)
	}
	return scanDecoded(body, ids)
}

// scan appends m's call id to ids, or the id m cancels to cancelled.
func (m *wireMessage) scan(ids, cancelled []string) ([]string, []string) {
	switch {
	case m.Method == "notifications/cancelled" && len(m.Params.RequestID) > 0:
		if id, ok := IDKey(m.Params.RequestID); ok {
			cancelled = append(cancelled, id)
		}
	case m.Method == "tools/call" && len(m.ID) > 0:
		if id, ok := IDKey(m.ID); ok {
			ids = append(ids, id)
		}
	}
	return ids, cancelled
}

// IDKey is a JSON-RPC id as a map key: a string id and a number id of the
// same text differ, as in JSON-RPC. raw may come from another replica:
// anything but one JSON string or number (with what follows it ignored,
// as a json.Decoder does) is refused.
func IDKey(raw json.RawMessage) (string, bool) {
	// The usual ids (numbers, and strings of printable ASCII without
	// escapes) are their own text.
	if v := bytes.TrimRight(raw, " \t\r\n"); len(v) > 0 && json.Valid(v) {
		switch c := v[0]; {
		case c == '-' || '0' <= c && c <= '9':
			return "n" + string(v), true
		case c == '"' && plainString(v[1:len(v)-1]):
			return "s" + string(v[1:len(v)-1]), true
		}
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return "", false
	}
	switch v := v.(type) {
	case string:
		return "s" + v, true
	case json.Number:
		return "n" + v.String(), true
	}
	return "", false
}

// plainString reports whether the inside of a JSON string is its value:
// printable ASCII without escapes.
func plainString(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return false
		}
	}
	return true
}

// KeyJSON is the JSON of an [IDKey]'s id (a string or a number), or false
// if key is not one.
func KeyJSON(key string) (json.RawMessage, bool) {
	if key == "" {
		return nil, false
	}
	switch key[0] {
	case 's':
		b, err := json.Marshal(key[1:])
		if err != nil {
			return nil, false
		}
		return b, true
	case 'n':
		return json.RawMessage(key[1:]), true
	}
	return nil, false
}
