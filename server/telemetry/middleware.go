package telemetry

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/mcpconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/internal/core/truncate"
	srvoutcome "github.com/toolroute/toolroute/internal/serve/outcome"
)

// The span attributes of a delegated caller (no semantic convention
// names them yet): the OAuth client acting, and the delegation chain.
const (
	attrClient = attribute.Key("toolroute.caller.client")
	attrActors = attribute.Key("toolroute.caller.actors")
)

// request is what the decorators learn about one MCP request, shared
// through its context. The fields above mu are set when the request
// arrives and read when it ends, on its goroutine; the ones below, which
// the authorizer and the transport write, are guarded by mu.
type request struct {
	tool    string               // the tools/call's tool name; "" for other requests
	call    *mcp.CallToolRequest // the tools/call; nil for other requests
	method  string               // mcp.method.name
	version string               // mcp.protocol.version; "" if none
	start   time.Time
	span    trace.Span
	named   bool // the span was named after its tool when it started
	ended   bool // end has run

	// startAttrs holds the span's attributes known when the request
	// arrives (the backing array of its start option): part of this one
	// allocation rather than one of their own.
	startAttrs [8]attribute.KeyValue
	startOpts  [2]trace.SpanStartOption

	mu       sync.Mutex
	subject  string
	client   string   // the caller's OAuth client, if known
	actors   []string // the caller's delegation chain, current actor first
	asked    bool     // the authorizer was asked during the request
	decision string   // the first decision's outcome; "" if none
	upstream []UpstreamRequest
}

type requestKey struct{}

func requestFrom(ctx context.Context) *request {
	r, _ := ctx.Value(requestKey{}).(*request)
	return r
}

// noteDecision records the outcome of the request's first authorization
// (later ones, of upstream requests, do not change it).
func (r *request) noteDecision(subject, outcome string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.subject == "" {
		r.subject = subject
	}
	if !r.asked {
		r.asked, r.decision = true, outcome
	}
}

func (r *request) noteUpstream(u UpstreamRequest) {
	r.mu.Lock()
	r.upstream = append(r.upstream, u)
	r.mu.Unlock()
}

// metaCarrier reads a trace context from params._meta (the MCP
// convention: "traceparent", "tracestate", "baggage" keys).
type metaCarrier map[string]any

func (m metaCarrier) Get(key string) string {
	s, _ := m[key].(string)
	return s
}
func (m metaCarrier) Set(key, value string) { m[key] = value }
func (m metaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// parent returns ctx carrying the remote parent of req: from
// params._meta.traceparent if present, else from the HTTP request's
// traceparent header; else ctx unchanged (its span, if any, stays the
// parent).
func (t *Telemetry) parent(ctx context.Context, req mcp.Request) context.Context {
	// A request without params holds a nil pointer of its params type.
	if p := req.GetParams(); p != nil && !reflect.ValueOf(p).IsNil() {
		if meta := p.GetMeta(); meta != nil {
			if _, ok := meta["traceparent"].(string); ok {
				return t.prop.Extract(ctx, metaCarrier(meta))
			}
		}
	}
	if extra := req.GetExtra(); extra != nil && extra.Header != nil && extra.Header.Get("traceparent") != "" {
		return t.prop.Extract(ctx, propagation.HeaderCarrier(extra.Header))
	}
	return ctx
}

// Middleware returns the receiving middleware that makes one server span
// per MCP request (named "{mcp.method.name} {gen_ai.tool.name}" for a
// tools/call of a known tool, else "{mcp.method.name}"), records
// mcp.server.operation.duration, toolroute.calls.active,
// mcp.server.session.duration (for stateful sessions: stdio, in-memory,
// stateful HTTP) and the questions of input_required results, and writes
// the audit records of tools/call and tools/list.
//
// Install it in [server.Options.Observers], where it runs right after
// the caller is resolved and before authorization: so its spans and
// metrics cover the authorization decision and the calls authorization
// refuses, and its records carry the caller's subject. (In
// [server.Options.Middleware] it would run after authorization and see
// only the calls authorization let through.)
func (t *Telemetry) Middleware() mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			return t.serve(ctx, method, req, next)
		}
	}
}

// serve observes one request. Its own frame is small, because next runs
// the whole call path on this goroutine's stack: the span's and the
// metrics' work is in begin and end, whose frames are gone while next
// runs (a bigger frame here made the request's goroutine grow its stack,
// a copy of it, on every call).
func (t *Telemetry) serve(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	ctx, st := t.begin(ctx, method, req)
	defer t.abandon(ctx, st)
	res, err := next(ctx, method, req)
	t.end(ctx, st, req, res, err)
	return res, err
}

// serverKind is the server span's kind option, made once.
var serverKind = trace.WithSpanKind(trace.SpanKindServer)

// begin starts the request's span, with the attributes known on arrival
// (so that a sampler sees them), and returns the context carrying it and
// the request's state.
func (t *Telemetry) begin(ctx context.Context, method string, req mcp.Request) (context.Context, *request) {
	st := &request{start: time.Now(), method: methodName(method), version: protocolVersion(req)}
	if c, ok := authz.CallerFromContext(ctx); ok {
		st.subject, st.client, st.actors = c.Subject, c.Client, c.Actors
	}
	ctx = context.WithValue(ctx, requestKey{}, st)
	ctx = t.parent(ctx, req)
	if method == "tools/call" {
		if cr, ok := req.(*mcp.CallToolRequest); ok && cr.Params != nil {
			st.call, st.tool = cr, cr.Params.Name
		}
	}
	name := st.method
	attrs := append(st.startAttrs[:0], semconv.McpMethodNameKey.String(st.method))
	if st.version != "" {
		attrs = append(attrs, semconv.McpProtocolVersion(st.version))
	}
	if s, ok := req.GetSession().(*mcp.ServerSession); ok && s != nil && s.ID() != "" {
		attrs = append(attrs, semconv.McpSessionID(s.ID()))
	}
	if st.call != nil {
		attrs = append(attrs, semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(truncate.String(st.tool)))
		if n, ok := t.toolSpans.lookup(st.tool); ok {
			name, st.named = n, true
		}
	}
	if st.subject != "" {
		attrs = append(attrs, semconv.EnduserID(st.subject))
	}
	// An agent acting for the user: who acts, for whom.
	if st.client != "" {
		attrs = append(attrs, attrClient.String(st.client))
	}
	if len(st.actors) > 0 {
		attrs = append(attrs, attrActors.StringSlice(st.actors))
	}
	st.startOpts = [2]trace.SpanStartOption{serverKind, trace.WithAttributes(attrs...)}
	ctx, st.span = t.tracer.Start(ctx, name, st.startOpts[:]...)
	if st.call != nil {
		t.activeCalls.Add(1)
		if len(st.call.Params.InputResponses) > 0 {
			t.question(ctx, st, st.tool, "answered", "input_required", "")
		}
	}
	return ctx, st
}

// abandon ends the span and the active call of a request whose handler
// panicked (end did not run): the server's panic boundary, outside the
// observers, answers it.
func (t *Telemetry) abandon(ctx context.Context, st *request) {
	if st.ended {
		return
	}
	st.span.End()
	if st.call != nil {
		t.activeCalls.Add(-1)
	}
}

// end records the request's answer: its span's remaining attributes and
// status, and its metrics and audit record.
func (t *Telemetry) end(ctx context.Context, st *request, req mcp.Request, res mcp.Result, err error) {
	st.ended = true
	o := classify(ctx, st.call != nil, res, err, st)
	known := st.call != nil && !o.unknownTool
	k := opKey{method: st.method, version: st.version, errorType: o.errorType, rpcCode: o.rpcCode}
	if known {
		k.tool = st.tool
	}
	m := t.opOpts.get(k, opMeasurement)
	if span := st.span; span.IsRecording() {
		if !startedWith(st, semconv.EnduserIDKey) {
			st.mu.Lock()
			subject := st.subject
			st.mu.Unlock()
			if subject != "" {
				// Learnt by the authorizer meanwhile.
				span.SetAttributes(semconv.EnduserID(subject))
			}
		}
		if o.errorType != "" {
			span.SetAttributes(m.span...)
			span.SetStatus(codes.Error, o.outcome)
		}
		switch {
		case known && !st.named:
			span.SetName(t.toolSpans.get(st.tool, toolSpanName))
		case !known && st.named:
			// A tool the server no longer has.
			span.SetName(st.method)
		}
	}
	st.span.End()
	if st.call != nil {
		t.activeCalls.Add(-1)
	}
	d := time.Since(st.start)
	t.opDuration.Inst().Record(ctx, d.Seconds(), m.rec...)

	deprecated := false
	if known {
		if rec := srvoutcome.From(ctx); rec != nil && rec.Deprecated() {
			deprecated = true
			t.deprecatedSums.cell(st.tool, toolAttrs).n.Add(1)
		}
	}
	switch {
	case st.method == "initialize":
		t.trackSession(req)
	case st.call != nil && o.outcome == callInput:
		t.question(ctx, st, st.tool, "asked", "input_required", "")
	}
	if t.audit != nil {
		switch {
		case st.call != nil:
			t.auditCall(ctx, st, st.call, known, deprecated, o, st.start, d)
		case st.method == "tools/list":
			t.auditList(ctx, st, res, o, st.start, d)
		}
	}
}

// startedWith reports whether the request's span started with an
// attribute of key k.
func startedWith(st *request, k attribute.Key) bool {
	for _, kv := range st.startAttrs {
		if kv.Key == k {
			return true
		}
	}
	return false
}

// toolSpanName is the server span name of a call of tool, kept in
// Telemetry.toolSpans for the tools the server answered as its own (never
// for a caller's made-up name): so that a call's span is named when it
// starts, where a sampler sees the name, rather than renamed at its end.
func toolSpanName(tool string) string {
	return string(mcpconv.MethodNameToolsCall) + " " + tool
}

// How a request other than tools/call ended (Record.Outcome), in the
// words of the server's log record of a call. A tools/call's outcome is
// the server's own classification (internal/serve/outcome).
const (
	callOK        = "ok"             // the request was answered
	callDenied    = "denied"         // authorization refused it
	callCancelled = "cancelled"      // its context ended: cancellation, deadline or shutdown
	callOutage    = "outage"         // the authorizer could not decide
	callInput     = "input_required" // the tool asks the client for input
	callError     = "error"          // any other protocol error
)

// outcome is how a request ended.
type outcome struct {
	outcome     string // the server's words: call*, or an outcome.Outcome's
	errorType   string // error.type: "tool_error", a JSON-RPC code, or "_OTHER"; "" if none
	rpcCode     string // the JSON-RPC error code, if any
	unknownTool bool   // the name is no tool of the server's
	hidden      bool   // answered like an unknown tool, but a tool of the server's
	asked       bool   // the authorizer was asked during the request
}

// classify tells how a request ended: its attributes (error.type, the
// JSON-RPC code, whether a call's tool is one of the server's) from its
// answer, and its outcome. A tools/call's outcome is the server's: the
// one its log record of the call holds, which the server leaves in the
// request's context ([outcome.Record]); where no server did (the
// middleware on a bare *mcp.Server), it is classified by the same rules
// ([outcome.Of]). Other requests, which the server does not classify,
// are classified here.
func classify(ctx context.Context, isCall bool, res mcp.Result, err error, st *request) outcome {
	var o outcome
	st.mu.Lock()
	decision, asked := st.decision, st.asked
	st.mu.Unlock()
	o.asked = asked
	if err != nil {
		var rpc *jsonrpc.Error
		switch {
		case errors.As(err, &rpc):
			o.rpcCode = strconv.FormatInt(rpc.Code, 10)
			o.errorType = o.rpcCode
			sdkUnknown := rpc.Code == jsonrpc.CodeInvalidParams && strings.HasPrefix(rpc.Message, "unknown tool")
			if h := (*authz.HiddenToolError)(nil); errors.As(err, &h) {
				// authz says whether the server has the tool (it asks the
				// authorizer for unknown names too).
				o.unknownTool, o.hidden = !h.Exists, h.Exists
			} else {
				o.unknownTool, o.hidden = sdkUnknown && !asked, sdkUnknown && asked
			}
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			o.errorType = "cancelled"
		default:
			o.errorType = other
		}
	} else if r, _ := res.(*mcp.CallToolResult); r != nil && r.IsError && !r.NeedsInput() {
		o.errorType = "tool_error"
		// An outage's answer to a name the server does not have says so in
		// its cause.
		h := (*authz.HiddenToolError)(nil)
		o.unknownTool = errors.As(r.GetError(), &h) && !h.Exists
	}
	if isCall {
		if rec := srvoutcome.From(ctx); rec != nil {
			if oc, ok := rec.Get(); ok {
				o.outcome = oc.String()
				return o
			}
		}
		oc, _ := srvoutcome.Of(ctx, res, err)
		o.outcome = oc.String()
		return o
	}
	switch {
	case err == nil:
		o.outcome = callOK
	case o.errorType == "cancelled" || ctx.Err() != nil:
		o.outcome = callCancelled
	case decision == outcomeOutage:
		o.outcome = callOutage
	case decision == outcomeUnauthenticated || decision == outcomeDeny:
		o.outcome = callDenied
	default:
		o.outcome = callError
	}
	return o
}

// trackSession records mcp.server.session.duration when a stateful
// session ends: a session of its own transport (stdio, in-memory: no
// HTTP request), or of stateful HTTP (it has an id). A stateless HTTP
// request's session lives for one request and is no session a client
// keeps.
func (t *Telemetry) trackSession(req mcp.Request) {
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if !ok || ss == nil || (req.GetExtra() != nil && ss.ID() == "") {
		return
	}
	start := time.Now()
	go func() {
		ss.Wait()
		var attrs []attribute.KeyValue
		if p := ss.InitializeParams(); p != nil && slices.Contains(supportedVersions, p.ProtocolVersion) {
			attrs = append(attrs, semconv.McpProtocolVersion(p.ProtocolVersion))
		}
		t.sessionDuration.Inst().Record(context.Background(), time.Since(start).Seconds(), metric.WithAttributes(attrs...))
	}()
}

// SendingMiddleware returns the sending middleware that counts the
// questions a tool asks the user by elicitation (authz/permission asks
// pre-2026 clients so), and their answers, and audits them. Add it with
// s.AddSendingMiddleware.
func (t *Telemetry) SendingMiddleware() mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "elicitation/create" {
				return next(ctx, method, req)
			}
			st := requestFrom(ctx)
			tool := ""
			if st != nil {
				tool = st.tool
			}
			t.question(ctx, st, tool, "asked", "elicitation", "")
			res, err := next(ctx, method, req)
			if er, ok := res.(*mcp.ElicitResult); ok && err == nil && er != nil {
				t.question(ctx, st, tool, "answered", "elicitation", er.Action)
			}
			return res, err
		}
	}
}

// question counts a question asked or answered, and audits it.
func (t *Telemetry) question(ctx context.Context, st *request, tool, state, channel, action string) {
	t.questions.Add(ctx, 1, metric.WithAttributes(AttrQuestionState.String(state), AttrQuestionChannel.String(channel)))
	if t.audit == nil {
		return
	}
	r := t.newRecord(ctx, EventQuestion, st, time.Now())
	r.Tool, r.Question, r.Channel, r.Answer = tool, state, channel, action
	t.audit.Audit(ctx, r)
}

// digest returns the hex digest of a call's raw arguments.
func (t *Telemetry) digest(args []byte) string {
	if len(args) == 0 {
		return ""
	}
	if t.auditKey != nil {
		m := hmac.New(sha256.New, t.auditKey)
		m.Write(args)
		return "hmac-sha256:" + hex.EncodeToString(m.Sum(nil))
	}
	sum := sha256.Sum256(args)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// opKey is the attributes of an operation's measurement.
type opKey struct {
	method, tool, version, errorType, rpcCode string
}

// toolAttrs are the attributes of a count by tool alone.
func toolAttrs(name string) []attribute.KeyValue {
	return []attribute.KeyValue{semconv.GenAIToolName(name)}
}

// opMeasurement is the measurement of k, and the attributes of its
// request's span at its end: error.type and rpc.response.status_code.
func opMeasurement(k opKey) *measurement {
	attrs := []attribute.KeyValue{semconv.McpMethodNameKey.String(k.method)}
	if k.tool != "" {
		attrs = append(attrs, semconv.GenAIToolName(k.tool))
	}
	if k.version != "" {
		attrs = append(attrs, semconv.McpProtocolVersion(k.version))
	}
	var span []attribute.KeyValue
	if k.errorType != "" {
		span = append(span, semconv.ErrorTypeKey.String(k.errorType))
	}
	if k.rpcCode != "" {
		span = append(span, semconv.RPCResponseStatusCodeKey.String(k.rpcCode))
	}
	return newMeasurement(append(attrs, span...), span)
}
