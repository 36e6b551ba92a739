package stdioguard_test

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCanarySDKEndsSessionAtBadLine demonstrates go-sdk issue #1209
// against the raw SDK: one line that is not JSON ends a stdio session, and
// the request after it is never answered. When this test fails, the SDK
// survives bad lines itself: delete internal/stdioguard.
func TestCanarySDKEndsSessionAtBadLine(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := mcp.NewServer(&mcp.Implementation{Name: "raw", Version: "1"}, nil)
	ss, err := s.Connect(context.Background(), &mcp.IOTransport{Reader: inR, Writer: outW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 8)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	go io.WriteString(inW, "{bad json\n"+`{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n")
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("the session ended without an error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("go-sdk #1209 is fixed: a bad line no longer ends the session; delete internal/stdioguard")
	}
	outW.Close()
	for l := range lines {
		if strings.Contains(l, `"id":1`) {
			t.Fatalf("go-sdk #1209 is fixed: the ping after a bad line was answered (%s); delete internal/stdioguard", l)
		}
	}
	inW.Close()
}
