package rpcscan

import (
	"bytes"
	"encoding/json"
)

// The body scan of every stateless request ([Scan]) reads three
// members of a JSON-RPC message: a json.Unmarshal of it costs a call
// about ten allocations. Most bodies are a single message whose members
// are spelt plainly; for them, this file reads the members in place, as
// json.Unmarshal into [wireMessage] would, after json.Valid (whose
// scanner is pooled) has checked the whole body. Anything it cannot read
// as simply (a batch, an escape or a non-ASCII letter in a key, a key
// that json.Unmarshal would match only case-insensitively, a method
// that is not a plain string, params that are not an object) is left to
// json.Unmarshal: the result is the same either way (see
// FuzzScanMessages).

// plainMessage is a wireMessage read in place: slices of the body.
type plainMessage struct {
	id, method, requestID []byte
}

// scanPlain reads the single JSON-RPC message of body, which must be
// valid JSON; ok is false if it must be decoded instead.
func scanPlain(body []byte) (m plainMessage, ok bool) {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return m, false
	}
	it := members{b: body, i: i + 1}
	for {
		key, val, more := it.next()
		if !more {
			return m, !it.bad
		}
		switch string(key) {
		case "id":
			m.id = val
		case "method":
			switch {
			case string(val) == "null": // leaves the method as it was
			case val[0] == '"' && bytes.IndexByte(val, '\\') < 0:
				m.method = val[1 : len(val)-1]
			default:
				return m, false
			}
		case "params":
			switch {
			case string(val) == "null":
			case val[0] == '{':
				inner := members{b: val, i: 1}
				for {
					k, v, more := inner.next()
					if !more {
						if inner.bad {
							return m, false
						}
						break
					}
					if string(k) == "requestId" {
						m.requestID = v
					} else if !plainKey(k, "requestId") {
						return m, false
					}
				}
			default:
				return m, false
			}
		default:
			if !plainKey(key, "id", "method", "params") {
				return m, false
			}
		}
	}
}

// plainKey reports whether key, another key than names, is one that
// json.Unmarshal would match to none of names: it is spelt in ASCII
// without escapes, and none of names folds to it.
func plainKey(key []byte, names ...string) bool {
	for _, c := range key {
		if c == '\\' || c >= 0x80 {
			return false
		}
	}
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return false
		}
	}
	return true
}

// scan appends m's call id to ids, or the id m cancels to cancelled, as
// [wireMessage.scan].
func (m *plainMessage) scan(ids, cancelled []string) ([]string, []string) {
	switch {
	case string(m.method) == "notifications/cancelled" && len(m.requestID) > 0:
		if id, ok := IDKey(m.requestID); ok {
			cancelled = append(cancelled, id)
		}
	case string(m.method) == "tools/call" && len(m.id) > 0:
		if id, ok := IDKey(m.id); ok {
			ids = append(ids, id)
		}
	}
	return ids, cancelled
}

// members iterates the members of a JSON object in b, from i (past its
// "{"). b must be valid JSON; should it not be, bad is set rather than
// a panic.
type members struct {
	b   []byte
	i   int
	bad bool
}

// next returns the next member's key (inside its quotes, as spelt) and
// value (as spelt), or false at the object's end.
func (it *members) next() (key, val []byte, more bool) {
	b := it.b
	i := skipSpace(b, it.i)
	if i < len(b) && b[i] == ',' {
		i = skipSpace(b, i+1)
	}
	if i >= len(b) || b[i] != '"' {
		it.bad = i >= len(b) || b[i] != '}'
		return nil, nil, false
	}
	end := skipString(b, i)
	if end < 0 {
		it.bad = true
		return nil, nil, false
	}
	key = b[i+1 : end-1]
	i = skipSpace(b, end)
	if i >= len(b) || b[i] != ':' {
		it.bad = true
		return nil, nil, false
	}
	i = skipSpace(b, i+1)
	end = skipValue(b, i)
	if end < 0 {
		it.bad = true
		return nil, nil, false
	}
	it.i = end
	return key, b[i:end], true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipString returns the end of the string at b[i] (past its closing
// quote), or -1.
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipValue returns the end of the value at b[i], or -1.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end := skipString(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
literal:
	for ; j < len(b); j++ {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			break literal
		}
	}
	if j == i {
		return -1
	}
	return j
}

// scanDecoded is [Scan] by json.Unmarshal.
func scanDecoded(body []byte, ids []string) (_, cancelled []string) {
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) > 0 && b[0] == '[' {
		var msgs []wireMessage
		if json.Unmarshal(b, &msgs) != nil {
			return ids, nil
		}
		for i := range msgs {
			ids, cancelled = msgs[i].scan(ids, cancelled)
		}
		return ids, cancelled
	}
	var m wireMessage
	if json.Unmarshal(body, &m) != nil {
		return ids, nil
	}
	return m.scan(ids, cancelled)
}
