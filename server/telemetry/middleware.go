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
// through its context.
type request struct {
	tool     string // the tools/call's tool name; "" for other requests
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

func (t *Telemetry) serve(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (res mcp.Result, err error) {
	start := time.Now()
	st := &request{}
	if c, ok := authz.CallerFromContext(ctx); ok {
		st.subject, st.client, st.actors = c.Subject, c.Client, c.Actors
	}
	ctx = context.WithValue(ctx, requestKey{}, st)
	ctx = t.parent(ctx, req)
	mname := methodName(method)
	var (
		toolName string
		call     *mcp.CallToolRequest
	)
	if method == "tools/call" {
		if cr, ok := req.(*mcp.CallToolRequest); ok && cr.Params != nil {
			call, toolName = cr, cr.Params.Name
			st.tool = toolName
		}
	}
	version := protocolVersion(req)
	ctx, span := t.tracer.Start(ctx, mname, trace.WithSpanKind(trace.SpanKindServer))
	defer span.End()
	if call != nil {
		t.active.Add(ctx, 1)
		defer t.active.Add(context.WithoutCancel(ctx), -1)
		if len(call.Params.InputResponses) > 0 {
			t.question(ctx, st, toolName, "answered", "input_required", "")
		}
	}

	res, err = next(ctx, method, req)

	o := classify(ctx, call != nil, res, err, st)
	known := call != nil && !o.unknownTool
	if span.IsRecording() {
		// The attributes at the end, in one call: the subject may have been
		// learnt by the authorizer meanwhile.
		var buf [11]attribute.KeyValue
		attrs := append(buf[:0], semconv.McpMethodNameKey.String(mname))
		if version != "" {
			attrs = append(attrs, semconv.McpProtocolVersion(version))
		}
		if s, ok := req.GetSession().(*mcp.ServerSession); ok && s != nil && s.ID() != "" {
			attrs = append(attrs, semconv.McpSessionID(s.ID()))
		}
		if call != nil {
			attrs = append(attrs, semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(truncate.String(toolName)))
		}
		st.mu.Lock()
		subject := st.subject
		st.mu.Unlock()
		if subject != "" {
			attrs = append(attrs, semconv.EnduserID(subject))
		}
		// An agent acting for the user: who acts, for whom.
		if st.client != "" {
			attrs = append(attrs, attrClient.String(st.client))
		}
		if len(st.actors) > 0 {
			attrs = append(attrs, attrActors.StringSlice(st.actors))
		}
		if o.errorType != "" {
			attrs = append(attrs, semconv.ErrorTypeKey.String(o.errorType))
			if o.rpcCode != "" {
				attrs = append(attrs, semconv.RPCResponseStatusCodeKey.String(o.rpcCode))
			}
			span.SetStatus(codes.Error, o.outcome)
		}
		span.SetAttributes(attrs...)
		if known {
			span.SetName(mname + " " + toolName)
		}
	}
	k := opKey{method: mname, version: version, errorType: o.errorType, rpcCode: o.rpcCode}
	if known {
		k.tool = toolName
	}
	d := time.Since(start)
	t.opDuration.Inst().Record(ctx, d.Seconds(), t.opOpts.get(k, opAttrs))

	deprecated := false
	if known {
		if rec := srvoutcome.From(ctx); rec != nil && rec.Deprecated() {
			deprecated = true
			t.deprecatedCalls.Add(ctx, 1, t.toolOpts.get(toolName, toolAttrs))
		}
	}
	switch {
	case method == "initialize":
		t.trackSession(req)
	case call != nil && o.outcome == callInput:
		t.question(ctx, st, toolName, "asked", "input_required", "")
	}
	if t.audit != nil {
		switch {
		case call != nil:
			t.auditCall(ctx, st, call, known, deprecated, o, start, d)
		case method == "tools/list":
			t.auditList(ctx, st, res, o, start, d)
		}
	}
	return res, err
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

func toolAttrs(name string) []attribute.KeyValue {
	return []attribute.KeyValue{semconv.GenAIToolName(name)}
}

func opAttrs(k opKey) []attribute.KeyValue {
	attrs := []attribute.KeyValue{semconv.McpMethodNameKey.String(k.method)}
	if k.tool != "" {
		attrs = append(attrs, semconv.GenAIToolName(k.tool))
	}
	if k.version != "" {
		attrs = append(attrs, semconv.McpProtocolVersion(k.version))
	}
	if k.errorType != "" {
		attrs = append(attrs, semconv.ErrorTypeKey.String(k.errorType))
	}
	if k.rpcCode != "" {
		attrs = append(attrs, semconv.RPCResponseStatusCodeKey.String(k.rpcCode))
	}
	return attrs
}
