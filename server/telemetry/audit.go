package telemetry

import (
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolroute/toolroute/internal/core/truncate"
)

// AuditVersion is the version of the [Record] schema. It changes when a
// field changes meaning or is removed; added fields keep it.
const AuditVersion = 1

// The events of audit records.
const (
	EventCall     = "tools/call" // one per tools/call, refused ones included
	EventList     = "tools/list" // one per tools/list
	EventQuestion = "question"   // a question to the user asked, or answered
	// EventTask (tasks.go): a task's status change.
)

// Record is one audit record, schema version [AuditVersion]. It never
// holds a bearer token nor an argument value: arguments appear only as a
// digest, upstream requests only as their route templates.
type Record struct {
	// V is the schema version, [AuditVersion].
	V int `json:"v"`
	// Time is when the request arrived (for a question: when it was
	// asked or answered).
	Time time.Time `json:"time"`
	// Event is [EventCall], [EventList] or [EventQuestion].
	Event string `json:"event"`
	// Subject is the caller's subject; "" if the request had no caller.
	Subject string `json:"subject"`
	// Client is the OAuth client the caller's token was issued to (an
	// agent acting for Subject), if known (authz.Caller.Client).
	Client string `json:"client,omitempty"`
	// Actors are the caller's delegation chain, current actor first
	// (authz.Caller.Actors): who acts for Subject.
	Actors []string `json:"actors,omitempty"`
	// TraceID is the request's trace id (hex), if it is traced.
	TraceID string `json:"trace_id,omitempty"`

	// Tool is the called tool's name (tools/call, question). A name the
	// server does not know is recorded as the client sent it.
	Tool string `json:"tool,omitempty"`
	// Decision is the authorization's answer for the call or list:
	// "allow", "deny", "unauthenticated" or "outage"; "" when no
	// authorizer was asked (a local tool, an unknown tool, a request
	// without a caller).
	Decision string `json:"decision,omitempty"`
	// Outcome is how the request ended, as the server logs it: "ok",
	// "tool_error", "denied", "panic", "cancelled", "unknown_tool",
	// "outage", "input_required", "rate_limited" or "error". A
	// tools/call's is the server's own classification, the outcome of
	// its log record.
	Outcome string `json:"outcome,omitempty"`
	// ErrorType is the error.type of the request's span and metric: a
	// JSON-RPC error code, "tool_error", "cancelled" or "_OTHER".
	ErrorType string `json:"error_type,omitempty"`
	// DurationMS is how long the request took, in milliseconds.
	DurationMS float64 `json:"duration_ms,omitempty"`
	// ArgsDigest is "sha256:HEX" of the call's arguments as received (the
	// raw JSON), or "hmac-sha256:HEX" with [Options.AuditKey]; "" for none.
	ArgsDigest string `json:"args_digest,omitempty"`
	// Upstream are the upstream requests the call sent or had refused,
	// in order.
	Upstream []UpstreamRequest `json:"upstream,omitempty"`
	// Deprecated is true for a call of a deprecated tool (tools/call
	// under server.New, which knows the tools).
	Deprecated bool `json:"deprecated,omitempty"`

	// Visible is the number of tools the caller was shown (tools/list).
	Visible *int `json:"visible,omitempty"`

	// Question is "asked" or "answered" (question).
	Question string `json:"question,omitempty"`
	// Channel is how the question travelled: "input_required" (MCP
	// 2026-07-28 multi-round-trip requests) or "elicitation".
	Channel string `json:"channel,omitempty"`
	// Answer is the answer's action for an elicitation ("accept",
	// "decline", "cancel"); never its content.
	Answer string `json:"answer,omitempty"`

	// Task is the task of a task record: "sha256:" and the first 16 hex
	// digits of its id's digest (the id is a handle, never written).
	Task string `json:"task,omitempty"`
}

// UpstreamRequest is one upstream request of a call, in an audit
// [Record].
type UpstreamRequest struct {
	// Method is the HTTP method.
	Method string `json:"method"`
	// Route is the route template the request fell under
	// ("/catalog/api/v1/items/{id}"), never the concrete path; "_OTHER"
	// if none of the tool's routes matched (such a request is refused).
	Route string `json:"route"`
	// Status is the response's HTTP status, or 0 if no response came.
	Status int `json:"status,omitempty"`
	// Error is the error.type of a request that got no response:
	// "denied", "unauthenticated", "outage" (refused before it left), or
	// an error class.
	Error string `json:"error,omitempty"`
}

// An Auditor receives audit records. Audit is called on the request's
// goroutine and must be safe for concurrent use; it owns r.
type Auditor interface {
	Audit(ctx context.Context, r *Record)
}

// JSONAudit writes each record as one line of JSON to a writer. It must
// be created with [NewJSONAudit].
type JSONAudit struct {
	mu     sync.Mutex
	w      io.Writer
	onErr  func(error)
	failed bool
}

// NewJSONAudit returns an Auditor writing JSON lines to w, one write per
// record. onErr (optional) receives the first write error (an audit trail
// that fails should be noticed); later records are still attempted.
func NewJSONAudit(w io.Writer, onErr func(error)) *JSONAudit {
	return &JSONAudit{w: w, onErr: onErr}
}

// Audit writes r as one line.
func (a *JSONAudit) Audit(_ context.Context, r *Record) {
	line, err := json.Marshal(r)
	if err != nil {
		return // a Record always marshals
	}
	line = append(line, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.w.Write(line); err != nil && !a.failed {
		a.failed = true
		if a.onErr != nil {
			a.onErr(err)
		}
	}
}

func (t *Telemetry) newRecord(ctx context.Context, event string, st *request, at time.Time) *Record {
	r := &Record{V: AuditVersion, Time: at.UTC(), Event: event}
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		r.TraceID = sc.TraceID().String()
	}
	if st != nil {
		st.mu.Lock()
		r.Subject, r.Decision = st.subject, st.decision
		r.Client, r.Actors = st.client, st.actors
		st.mu.Unlock()
	}
	return r
}

func (t *Telemetry) auditCall(ctx context.Context, st *request, call *mcp.CallToolRequest, known, deprecated bool, o outcome, start time.Time, d time.Duration) {
	r := t.newRecord(ctx, EventCall, st, start)
	r.Tool = call.Params.Name
	r.Deprecated = deprecated
	if !known {
		// An unknown name's decision was about no route of its own (authz
		// asks once for it only to answer as for a hidden tool).
		r.Tool, r.Decision = truncate.String(r.Tool), ""
	}
	r.Outcome, r.ErrorType = o.outcome, o.errorType
	r.DurationMS = float64(d.Microseconds()) / 1000
	r.ArgsDigest = t.digest(call.Params.Arguments)
	st.mu.Lock()
	r.Upstream = st.upstream
	st.mu.Unlock()
	t.audit.Audit(ctx, r)
}

func (t *Telemetry) auditList(ctx context.Context, st *request, res mcp.Result, o outcome, start time.Time, d time.Duration) {
	r := t.newRecord(ctx, EventList, st, start)
	r.Outcome, r.ErrorType = o.outcome, o.errorType
	r.DurationMS = float64(d.Microseconds()) / 1000
	if lr, ok := res.(*mcp.ListToolsResult); ok && lr != nil {
		n := len(lr.Tools)
		r.Visible = &n
	}
	t.audit.Audit(ctx, r)
}
