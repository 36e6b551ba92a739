package server

import (
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/core/lifecycle"
	"github.com/toolroute/toolroute/tool"
)

// checkSuccessors refuses a tool deprecated in favour of a tool the
// server does not have.
func checkSuccessors(tools []*tool.Call) error {
	names := make(map[string]bool, len(tools))
	for _, t := range tools {
		names[t.Tool] = true
	}
	var errs []error
	for _, t := range tools {
		if d := t.Deprecated; d != nil && d.Successor != "" && !names[d.Successor] {
			errs = append(errs, fmt.Errorf("server: tool %q is deprecated in favour of %q, which no installer (registry) adds", t.Tool, d.Successor))
		}
	}
	return errors.Join(errs...)
}

// hideSuccessors returns the tools/list page res with every deprecated
// tool whose successor the page does not show replaced by a copy that
// does not name it: a caller is never told the name of a tool it cannot
// see. A successor on another page is left out too (fail closed: the
// page cannot tell whether the caller sees it).
func (c *chain) hideSuccessors(res mcp.Result) mcp.Result {
	lr, ok := res.(*mcp.ListToolsResult)
	if !ok || lr == nil {
		return res
	}
	var shown map[string]bool
	var out *mcp.ListToolsResult
	for i, t := range lr.Tools {
		tc := c.known[t.Name]
		if tc == nil || tc.Info.Deprecated == nil || tc.Info.Deprecated.Successor == "" {
			continue
		}
		if shown == nil {
			shown = make(map[string]bool, len(lr.Tools))
			for _, t := range lr.Tools {
				shown[t.Name] = true
			}
		}
		if shown[tc.Info.Deprecated.Successor] {
			continue
		}
		if out == nil {
			cp := *lr
			cp.Tools = append([]*mcp.Tool(nil), lr.Tools...)
			out = &cp
		}
		out.Tools[i] = lifecycle.WithoutSuccessor(t, tc.Info.Deprecated)
	}
	if out == nil {
		return res
	}
	return out
}
