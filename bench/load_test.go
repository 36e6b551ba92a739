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
	body26, h26 := benchtools.Call(benchtools.Name(1), benchtools.NewVersion)
	for _, tg := range []Target{
		{Name: "raw", URL: s.raw.URL + "/mcp"},
		{Name: "toolroute", URL: s.toolroute.URL + "/mcp", Token: benchtools.Token},
		{Name: "mcpgo", URL: s.mcpgo.URL + "/mcp"},
		{Name: "raw 2026-07-28", URL: s.raw.URL + "/mcp", Header: h26},
		{Name: "toolroute 2026-07-28", URL: s.toolroute.URL + "/mcp", Token: benchtools.Token, Header: h26},
	} {
		body := benchtools.CallBody(benchtools.Name(1))
		if tg.Header != nil {
			body = body26
		}
		c := benchtools.Client{Header: tg.Header}
		got, err := c.Post(tg.URL, tg.Token, body)
		if err != nil || !bytes.Contains(got, []byte(`"name":"item 42"`)) || bytes.Contains(got, []byte(`"isError":true`)) {
			t.Fatalf("%s: the call answers %s (%v), want the item", tg.Name, got, err)
		}
		st, err := Load(hc, tg, body, 4, 5*time.Second, 40)
		if err != nil {
			t.Fatalf("%s: %v", tg.Name, err)
		}
		if st.Calls != 40 || len(st.Latencies) != 40 || st.Quantile(0.99) <= 0 || st.PerSecond() <= 0 {
			t.Errorf("%s: %d calls, %d latencies, p99 %v, %.0f/s; want 40 calls within the budget", tg.Name, st.Calls, len(st.Latencies), st.Quantile(0.99), st.PerSecond())
		}
	}
}
