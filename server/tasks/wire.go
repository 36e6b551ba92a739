package tasks

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Extension is the extension's identifier, the key a client declares in
// its per-request capabilities and the server in its own.
const Extension = "io.modelcontextprotocol/tasks"

// The methods of the extension.
const (
	methodGet    = "tasks/get"
	methodUpdate = "tasks/update"
	methodCancel = "tasks/cancel"
)

// protocolTasks is the first protocol version whose requests carry the
// client's capabilities, and so the first under which the extension is
// defined: a 2025 request never gets a task, whatever it declares.
const protocolTasks = "2026-07-28"

// Status is a task's status, as the SEP names it.
type Status string

// The statuses of a task; Completed, Failed and Cancelled are terminal.
const (
	Working       Status = "working"
	InputRequired Status = "input_required"
	Completed     Status = "completed"
	Failed        Status = "failed"
	Cancelled     Status = "cancelled"
)

// Terminal reports whether s is terminal: a task in it never changes again.
func (s Status) Terminal() bool { return s == Completed || s == Failed || s == Cancelled }

// The wire names, one table: each field of the SEP's Task, of its derived
// shapes (DetailedTask) and of the requests' params, as this package
// writes and reads it.
//
//	SEP field        Go field                     where
//	resultType       result.ResultType            CreateTaskResult ("task"), every other result ("complete")
//	taskId           wireTask.TaskID              Task; params of tasks/get, tasks/update, tasks/cancel
//	status           wireTask.Status              Task
//	statusMessage    wireTask.StatusMessage       Task (optional)
//	createdAt        wireTask.CreatedAt           Task, ISO 8601 (RFC 3339, UTC, milliseconds)
//	lastUpdatedAt    wireTask.LastUpdatedAt       Task, ISO 8601
//	ttlMs            wireTask.TTLMs               Task, integer ms from creation (never null here)
//	pollIntervalMs   wireTask.PollIntervalMs      Task, integer ms
//	inputRequests    wireTask.InputRequests       InputRequiredTask
//	result           wireTask.Result              CompletedTask: the CallToolResult
//	error            wireTask.Error               FailedTask: the JSON-RPC error
//	inputResponses   updateParams.InputResponses  params of tasks/update
type wireTask struct {
	TaskID         string          `json:"taskId"`
	Status         Status          `json:"status"`
	StatusMessage  string          `json:"statusMessage,omitempty"`
	CreatedAt      string          `json:"createdAt"`
	LastUpdatedAt  string          `json:"lastUpdatedAt"`
	TTLMs          int64           `json:"ttlMs"`
	PollIntervalMs int64           `json:"pollIntervalMs,omitempty"`
	InputRequests  json.RawMessage `json:"inputRequests,omitempty"`
	Result         json.RawMessage `json:"result,omitempty"`
	Error          json.RawMessage `json:"error,omitempty"`
}

// result is every result of the extension: CreateTaskResult and
// GetTaskResult carry a task, the acknowledgements of tasks/update and
// tasks/cancel none.
type result struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
	*wireTask
}

// The values of resultType.
const (
	resultTask     = "task"
	resultComplete = "complete"
)

// taskParams are the params of tasks/get and tasks/cancel.
type taskParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

// updateParams are the params of tasks/update.
type updateParams struct {
	mcp.ParamsBase
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
}

// wire is r as the client sees it. with says whether the status's payload
// (input requests, result, error) goes with it: tasks/get's answer, not
// CreateTaskResult.
func (r *Record) wire(with bool) *wireTask {
	w := &wireTask{
		TaskID:         r.ID,
		Status:         r.Status,
		StatusMessage:  r.StatusMessage,
		CreatedAt:      stamp(r.CreatedAt),
		LastUpdatedAt:  stamp(r.UpdatedAt),
		TTLMs:          r.ExpiresAt.Sub(r.CreatedAt).Milliseconds(),
		PollIntervalMs: r.PollInterval.Milliseconds(),
	}
	if with {
		switch r.Status {
		case InputRequired:
			w.InputRequests = r.pending()
		case Completed:
			w.Result = r.Result
		case Failed:
			w.Error = r.Error
		}
	}
	return w
}

// stamp is t in ISO 8601, UTC, to the millisecond.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// The JSON-RPC errors of the extension.

// missingCapability is the SEP's error for a client that did not declare
// the extension on its request.
func missingCapability() error {
	return &jsonrpc.Error{
		Code:    mcp.CodeMissingRequiredClientCapabilities,
		Message: "Missing required client capability: " + Extension,
		Data:    json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + Extension + `":{}}}}`),
	}
}

// notFound answers a task id that is unknown, expired, or another
// caller's: the three answer alike.
func notFound(method string) error {
	verb := map[string]string{methodGet: "retrieve", methodUpdate: "update", methodCancel: "cancel"}[method]
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("Failed to %s task: Task not found", verb)}
}

// headerMismatch answers a request whose Mcp-Name header is not its
// taskId.
func headerMismatch(method string) error {
	return &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: fmt.Sprintf("header mismatch: the Mcp-Name header of %s must be its params.taskId", method)}
}

// internal is a JSON-RPC internal error with a message for the client.
func internal(msg string) error { return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg} }

// CodeTooManyTasks is the JSON-RPC error code of a call refused because
// its caller, or the server, runs as many tasks as it may. Its data is
// {"retryAfterMs": N}.
const CodeTooManyTasks = -32011

// tooMany answers a call over a cap on running tasks.
func tooMany(what string, retry time.Duration) error {
	return &jsonrpc.Error{
		Code:    CodeTooManyTasks,
		Message: "too many running tasks (" + what + "); retry later",
		Data:    json.RawMessage(fmt.Sprintf(`{"retryAfterMs":%d}`, retry.Milliseconds())),
	}
}

// rpcError is err as the JSON object a failed task's error field holds.
func rpcError(err error) json.RawMessage {
	var w struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data,omitempty"`
	}
	if e := (*jsonrpc.Error)(nil); errors.As(err, &e) {
		w.Code, w.Message, w.Data = e.Code, e.Message, e.Data
	} else {
		w.Code, w.Message = jsonrpc.CodeInternalError, err.Error()
	}
	b, _ := json.Marshal(w)
	return b
}

// invalidParams is a JSON-RPC invalid-params error.
func invalidParams(msg string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
}

// pending is r's input requests that have no answer yet: those the SEP's
// inputRequests list.
func (r *Record) pending() json.RawMessage {
	if len(r.Answers) == 0 {
		return r.InputRequests
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r.InputRequests, &m); err != nil {
		return r.InputRequests
	}
	for k := range r.Answers {
		delete(m, k)
	}
	b, _ := json.Marshal(m)
	return b
}
