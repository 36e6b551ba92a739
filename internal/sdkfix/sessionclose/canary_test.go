package sessionclose_test

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCanarySDKHandlerHasNoClose demonstrates go-sdk issue #440 against
// the raw SDK: a StreamableHTTPHandler has no Close that would end its
// sessions and refuse new ones. When this test fails (go-sdk PR #1029 or
// an equivalent landed), use the SDK's Close at shutdown and delete
// internal/sdkfix/sessionclose.
func TestCanarySDKHandlerHasNoClose(t *testing.T) {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return nil }, nil)
	if _, ok := reflect.TypeOf(h).MethodByName("Close"); ok {
		t.Fatal("go-sdk's StreamableHTTPHandler has Close (go-sdk #440 fixed): delete internal/sdkfix/sessionclose")
	}
}
