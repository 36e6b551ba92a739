package rpcscan

import (
	"encoding/json"
	"slices"
	"testing"
)

// scanCases are bodies whose scan the in-place reading must get as
// json.Unmarshal does: plain ones it reads, and the ones it leaves to
// json.Unmarshal.
var scanCases = []string{
	`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a]}\"{","n":[1,{"x":null}]}}}`,
	` {"id" : "c-1" , "method" : "tools/call" } `,
	`{"id":"é","method":"tools/call"}`,
	`{"id":"a\u0062","method":"tools/call"}`,
	`{"id":1,"method":"tools\/call"}`,
	`{"id":1,"method":"tools/list"}`,
	`{"id":null,"method":"tools/call"}`,
	`{"id":{"a":1},"method":"tools/call"}`,
	`{"id":true,"method":"tools/call"}`,
	`{"id":1.5e3,"method":"tools/call"}`,
	`{"id":-0,"method":"tools/call"}`,
	`{"method":"tools/call"}`,
	`{"id":1,"method":"tools/call","method":null}`,
	`{"id":1,"method":"tools/call","method":"x"}`,
	`{"id":1,"method":1}`,
	`{"id":1,"method":"tools/call","ID":2}`,
	`{"Id":1,"method":"tools/call"}`,
	`{"id":1,"METHOD":"tools/call"}`,
	`{"id":1,"method":"tools/call","paramſ":{}}`,
	`{"i\u0064":1,"method":"tools/call"}`,
	`{"id":1,"method":"tools/call","params":[1]}`,
	`{"id":1,"method":"tools/call","params":"x"}`,
	`{"id":1,"method":"tools/call","params":null}`,
	`{"id":1,"method":"tools/call","x":"tools/call","y":{"id":2}}`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"x"}}`,
	`{"method":"notifications/cancelled","params":{"requestId":"r-1"},"params":{"x":1}}`,
	`{"method":"notifications/cancelled","params":{"requestId":"r-1"},"params":null}`,
	`{"method":"notifications/cancelled","params":{"requestid":"r-1"}}`,
	`{"method":"notifications/cancelled","params":{"requestId":"r-1","RequestId":"r-2"}}`,
	`{"method":"notifications/cancelled","params":{}}`,
	`{"method":"notifications/cancelled","params":{"requestId":null}}`,
	`[{"id":1,"method":"tools/call"},{"method":"notifications/cancelled","params":{"requestId":2}}]`,
	`[{"id":1,"method":"tools/call"},{"id":2,"method":3}]`,
	`"tools/call"`,
	`7`,
	`{"id":1,"method":"tools/call"`,
	`{"id":1,"method":"tools/call"}x`,
	`{"id":1,"method":"tools/call"}{}`,
	``,
	`{}`,
	`{"x\\":1,"id":1,"method":"tools/call"}`,
}

// TestScanPlainAsDecoded: reading a body in place finds what
// json.Unmarshal finds.
func TestScanPlainAsDecoded(t *testing.T) {
	for _, body := range scanCases {
		checkScan(t, []byte(body))
	}
}

// FuzzScanMessages: reading a body in place finds what json.Unmarshal
// finds, whatever the body.
func FuzzScanMessages(f *testing.F) {
	for _, body := range scanCases {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkScan(t, body) })
}

func checkScan(t *testing.T, body []byte) {
	t.Helper()
	ids, cancelled := Scan(body, nil)
	wantIDs, wantCancelled := scanDecoded(body, nil)
	if !slices.Equal(ids, wantIDs) || !slices.Equal(cancelled, wantCancelled) {
		t.Errorf("%s: scanned ids %q, cancelled %q; decoded ids %q, cancelled %q", body, ids, cancelled, wantIDs, wantCancelled)
	}
}

// TestKeyJSON: an id's key turns back into JSON of the same id, and a
// string id and a number id of the same text stay apart.
func TestKeyJSON(t *testing.T) {
	for _, raw := range []string{`"c-5"`, `7`, `-1.5e3`, `"\u00e9\"\\ \u2028"`, `""`, `"7"`} {
		key, ok := IDKey(json.RawMessage(raw))
		if !ok {
			t.Fatalf("IDKey(%s) failed", raw)
		}
		back, ok := KeyJSON(key)
		if !ok {
			t.Fatalf("KeyJSON(%q) failed", key)
		}
		if again, ok := IDKey(back); !ok || again != key {
			t.Errorf("%s: key %q, back %s, its key %q", raw, key, back, again)
		}
	}
	s, _ := IDKey(json.RawMessage(`"7"`))
	n, _ := IDKey(json.RawMessage(`7`))
	if s == n {
		t.Errorf(`"7" and 7 share the key %q`, s)
	}
	for _, bad := range []string{"", "x1", "b7"} {
		if raw, ok := KeyJSON(bad); ok {
			t.Errorf("KeyJSON(%q) = %s, want false", bad, raw)
		}
	}
	for _, bad := range []string{`null`, `{"a":1}`, `[1]`, `true`, `"x`} {
		if k, ok := IDKey(json.RawMessage(bad)); ok {
			t.Errorf("IDKey(%s) = %q, want false", bad, k)
		}
	}
}
