package registry

import (
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolroute/toolroute/tool"
)

// defaultTaskAfter is tool.Tool.TaskAfter's default for TaskAllowed.
const defaultTaskAfter = time.Second

// taskMetaKey is the key, in a task-capable tool's definition _meta, of
// when its calls may become tasks: {"mode": "allowed", "afterMs": 1000}
// or {"mode": "always"}. It is informative: the extension lets the server
// decide per request, and a client that declares it must handle a task
// from any tool.
const taskMetaKey = "io.github.toolroute/task"

// taskAfter is t's TaskAfter with its default applied.
func taskAfter[C any](t tool.Tool[C]) time.Duration {
	if t.Task == tool.TaskAllowed && t.TaskAfter == 0 {
		return defaultTaskAfter
	}
	return t.TaskAfter
}

// taskMeta is the definition _meta of a task-capable tool, nil for others.
func taskMeta(c *tool.Call) map[string]any {
	switch c.Task {
	case tool.TaskAllowed:
		return map[string]any{taskMetaKey: map[string]any{"mode": c.Task.String(), "afterMs": c.TaskAfter.Milliseconds()}}
	case tool.TaskAlways:
		return map[string]any{taskMetaKey: map[string]any{"mode": c.Task.String()}}
	}
	return nil
}

// joinMeta is a definition's _meta with the entries of each of ms (their
// keys never collide: each is a derivation's own); nil when all are.
func joinMeta(ms ...mcp.Meta) mcp.Meta {
	var out mcp.Meta
	for _, m := range ms {
		for k, v := range m {
			if out == nil {
				out = mcp.Meta{}
			}
			out[k] = v
		}
	}
	return out
}
