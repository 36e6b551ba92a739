package bench

import (
	"bytes"
	"testing"
	"time"

	"github.com/toolroute/toolroute/internal/testing/benchtools"
)

// TestLoad runs a short load of each server: every call answers, and the
// run stops at its call budget.
func TestLoad(t *testing.T) {
	s := startServers(t, 2)
	hc := LoadClient(4)
	defer hc.CloseIdleConnections()
	for _, tg := range []Target{{"raw", s.raw.URL + "/mcp", ""}, {"toolroute", s.toolroute.URL + "/mcp", benchtools.Token}, {"mcpgo", s.mcpgo.URL + "/mcp", ""}} {
		var c benchtools.Client
		body, err := c.Post(tg.URL, tg.Token, benchtools.CallBody(benchtools.Name(1)))
		if err != nil || !bytes.Contains(body, []byte(`"name":"item 42"`)) || bytes.Contains(body, []byte(`"isError":true`)) {
			t.Fatalf("%s: the call answers %s (%v), want the item", tg.Name, body, err)
		}
		st, err := Load(hc, tg, benchtools.CallBody(benchtools.Name(1)), 4, 5*time.Second, 40)
		if err != nil {
			t.Fatalf("%s: %v", tg.Name, err)
		}
		if st.Calls != 40 || len(st.Latencies) != 40 || st.Quantile(0.99) <= 0 || st.PerSecond() <= 0 {
			t.Errorf("%s: %d calls, %d latencies, p99 %v, %.0f/s; want 40 calls within the budget", tg.Name, st.Calls, len(st.Latencies), st.Quantile(0.99), st.PerSecond())
		}
	}
}
