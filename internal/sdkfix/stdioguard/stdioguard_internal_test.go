package stdioguard

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestResponseID: the id of a response is read whatever its place; a
// request, a notification or a response without a valid id has none.
func TestResponseID(t *testing.T) {
	five, _ := jsonrpc.MakeID(float64(5))
	abc, _ := jsonrpc.MakeID("abc")
	for _, tt := range []struct {
		msg    string
		want   jsonrpc.ID
		wantOK bool
	}{
		{`{"jsonrpc":"2.0","id":5,"result":{"big":[1,2,3]}}`, five, true},
		{`{"jsonrpc":"2.0","id":"abc","error":{"code":-1,"message":"x"}}`, abc, true},
		{`{"result":{},"jsonrpc":"2.0","id":5}`, five, true},
		{`{"jsonrpc":"2.0","id":5,"method":"ping"}`, jsonrpc.ID{}, false},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`, jsonrpc.ID{}, false},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`, jsonrpc.ID{}, false},
		{`[1]`, jsonrpc.ID{}, false},
		{`{"jsonrpc":`, jsonrpc.ID{}, false},
	} {
		got, ok := responseID([]byte(tt.msg))
		if ok != tt.wantOK || got != tt.want {
			t.Errorf("responseID(%s) = %v, %v; want %v, %v", tt.msg, got, ok, tt.want, tt.wantOK)
		}
	}
}
