package tool

import "strconv"

// TaskMode says whether a call of a tool may become an MCP task (the
// io.modelcontextprotocol/tasks extension, SEP-2663): answered at once
// with a task handle that the client polls with tasks/get, instead of
// with its result when the work is done.
//
// The extension leaves the choice to the server, per request; a tool
// only says whether the server may make it and when. A call becomes a
// task only for a client that declares the extension on that request
// (MCP 2026-07-28 and later), and only where the server serves tasks
// (server/tasks); every other client gets the synchronous answer, as if
// the tool had no TaskMode.
type TaskMode uint8

const (
	// TaskNever, the zero value: every call is answered synchronously.
	TaskNever TaskMode = iota
	// TaskAllowed: a call that has not finished after [Tool.TaskAfter]
	// becomes a task; a quicker one is answered synchronously, like any
	// other. The server decides per request, by how long the work takes.
	TaskAllowed
	// TaskAlways: every call becomes a task at once.
	TaskAlways
)

// String returns "never", "allowed" or "always" (or "TaskMode(N)" for a
// value that is none of them).
func (m TaskMode) String() string {
	switch m {
	case TaskNever:
		return "never"
	case TaskAllowed:
		return "allowed"
	case TaskAlways:
		return "always"
	}
	return "TaskMode(" + strconv.Itoa(int(m)) + ")"
}
