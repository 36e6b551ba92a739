package stdioguard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/testing/rawstdio"
)

// TestCanarySDKEndsSessionAtBadLine demonstrates go-sdk issue #1209
// against the raw SDK: one line that is not JSON ends a stdio session, and
// the request after it is never answered. When this test fails, the SDK
// survives bad lines itself: delete internal/sdkfix/stdioguard.
func TestCanarySDKEndsSessionAtBadLine(t *testing.T) {
	c := rawstdio.Connect(t, mcp.NewServer(&mcp.Implementation{Name: "raw", Version: "1"}, nil))
	c.Send("{bad json\n" + `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	ended := make(chan error, 1)
	go func() { ended <- c.Session.Wait() }()
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("the session ended without an error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("go-sdk #1209 is fixed: a bad line no longer ends the session; delete internal/sdkfix/stdioguard")
	}
	c.Session.Close()
	for l := range c.Lines {
		if strings.Contains(l, `"id":1`) {
			t.Fatalf("go-sdk #1209 is fixed: the ping after a bad line was answered (%s); delete internal/sdkfix/stdioguard", l)
		}
	}
}
