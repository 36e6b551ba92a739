package server

import "github.com/modelcontextprotocol/go-sdk/mcp"

// ListenersForTest is how many of s's listeners are told of changes.
func ListenersForTest(s *mcp.Server) int {
	l := reporterOf(s).lists
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, li := range l.m {
		if li.acked {
			n++
		}
	}
	return n
}
