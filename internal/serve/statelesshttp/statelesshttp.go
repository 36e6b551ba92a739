package statelesshttp

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Handler serves stateless streamable HTTP requests for one server: the
// plain ones itself (see the package doc), every other through the SDK's
// handler it was given. It must be created with [New].
type Handler struct {
	server *mcp.Server
	sdk    http.Handler
	// legacy is the server's protocol versions before 2026-07-28, which
	// the fast path serves; nil: it serves none (every request goes to
	// the SDK's handler).
	legacy map[string]bool
	// headerParams is Options.HeaderParams.
	headerParams func(name string) bool
}

// Options configures a [Handler].
type Options struct {
	// HeaderParams reports whether the server's tool of this name may
	// have an argument with an x-mcp-header annotation in its input
	// schema (whose Mcp-Param header only the SDK's handler checks), and
	// must report true for a name it does not know. The fast path serves
	// a 2026-07-28 tools/call only of a tool for which it reports false;
	// nil: it serves none.
	HeaderParams func(name string) bool
}

// New returns a Handler of s that hands every request it does not serve
// itself to sdk, which must be go-sdk's stateless StreamableHTTPHandler
// of s, configured as the caller serves it (its answers are the ones this
// handler's must equal). New asks s, through the transport, which
// protocol versions it serves (see [legacyVersions]); if s does not say,
// or if the process runs with go-sdk compatibility settings (MCPGODEBUG,
// such as allowsessionsinstateless, which changes what go-sdk's handler
// does with a stateless request), the handler serves nothing itself.
func New(s *mcp.Server, sdk http.Handler, opts Options) *Handler {
	h := &Handler{server: s, sdk: sdk, headerParams: opts.HeaderParams}
	if !compatibility {
		h.legacy = legacyVersions(s)
	}
	return h
}

// compatibility is whether go-sdk runs with compatibility settings,
// which it reads once, at start, as this does.
var compatibility = os.Getenv("MCPGODEBUG") != ""

// Serve answers r, whose body (for a POST) the caller has read: body,
// which r.Body still holds too, for the SDK's handler to read again.
func (h *Handler) Serve(w http.ResponseWriter, r *http.Request, body []byte) {
	if h.legacy == nil || !h.plainHeaders(r) {
		h.sdk.ServeHTTP(w, r)
		return
	}
	newProtocol := r.Header.Get("Mcp-Protocol-Version") == newVersion
	req, ok := plainRequest(body, newProtocol)
	if !ok || newProtocol && (r.Header.Get("Mcp-Method") != req.Method || !h.namedAlike(r, req)) {
		h.sdk.ServeHTTP(w, r)
		return
	}
	h.serve(w, r, req, newProtocol)
}

// newVersion is MCP 2026-07-28, whose requests carry their protocol
// version, client information and capabilities in their own _meta.
const newVersion = "2026-07-28"

// plainHeaders reports whether the SDK's handler would get past its
// checks of r's method and headers, for a protocol version the fast path
// serves. A false answer only sends r to the SDK's handler, so that the
// checks may be stricter than the SDK's, never laxer.
func (h *Handler) plainHeaders(r *http.Request) bool {
	if r.Method != http.MethodPost {
		return false
	}
	// DNS rebinding protection (the SDK's answer is 403).
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && local != nil {
		if loopback(local.String()) && !loopback(r.Host) {
			return false
		}
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && v != newVersion && !h.legacy[v] {
		return false
	}
	if len(r.Header.Values("Last-Event-ID")) > 0 {
		return false
	}
	if t, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || t != "application/json" {
		return false
	}
	return acceptsBoth(r.Header.Values("Accept"))
}

// acceptsBoth reports whether the Accept values name both JSON and event
// streams (or wildcards that cover them), as streamable HTTP requires.
func acceptsBoth(values []string) bool {
	var json, events bool
	for _, v := range values {
		for item := range strings.SplitSeq(v, ",") {
			mediaType, _, _ := strings.Cut(item, ";")
			switch strings.ToLower(strings.TrimSpace(mediaType)) {
			case "*/*":
				json, events = true, true
			case "application/json", "application/*":
				json = true
			case "text/event-stream", "text/*":
				events = true
			}
		}
	}
	return json && events
}

// loopback reports whether addr (a host, or host:port) is localhost or
// a loopback IP address.
func loopback(addr string) bool {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	} else {
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// plainMethods are the methods the fast path serves before MCP
// 2026-07-28: calls of a session's first request that change nothing in
// it (initialize, logging/setLevel and subscriptions go to the SDK's
// handler), and that the SDK's handler takes with any params object.
var plainMethods = map[string]bool{
	"tools/call":               true,
	"tools/list":               true,
	"prompts/list":             true,
	"prompts/get":              true,
	"resources/list":           true,
	"resources/read":           true,
	"resources/templates/list": true,
	"completion/complete":      true,
	"ping":                     true,
}

// newPlainMethods are the methods the fast path serves from MCP
// 2026-07-28: those whose headers name no tool, prompt or resource, and
// those that do when their Mcp-Name (and for a tools/call, the tool's
// x-mcp-header arguments) are as the SDK's handler wants them
// ([Handler.namedAlike]).
var newPlainMethods = map[string]bool{
	"tools/list":               true,
	"prompts/list":             true,
	"resources/list":           true,
	"resources/templates/list": true,
	"completion/complete":      true,
	"server/discover":          true,
	"ping":                     true, // removed: answered 404
	"tools/call":               true, // when namedAlike
	"prompts/get":              true, // when namedAlike
	"resources/read":           true, // when namedAlike
}

// named are the 2026-07-28 methods whose Mcp-Name header the SDK's
// handler checks against a member of the body's params, and the params
// members the fast path takes with them (others, such as the
// inputResponses and requestState of a retried call, go to the SDK's
// handler).
var named = map[string]struct {
	member string
	params func() any
	keys   []string
}{
	"tools/call":     {"name", func() any { return new(mcp.CallToolParams) }, []string{"_meta", "name", "arguments"}},
	"prompts/get":    {"name", func() any { return new(mcp.GetPromptParams) }, []string{"_meta", "name", "arguments"}},
	"resources/read": {"uri", func() any { return new(mcp.ReadResourceParams) }, []string{"_meta", "uri"}},
}

// namedAlike reports whether the SDK's handler would find r's Mcp-Name
// header, and for a tools/call its Mcp-Param headers, right for req, as
// go-sdk v1.8.0's validateMcpHeaders decides, or true for a method that
// names nothing. For a method of [named]: the header is set and equals
// the body's member, a string; every params member is one of the
// method's keys, named once with its exact case (and with no escape
// sequence: see plainRequest), and params decode into the method's
// params type (the SDK extracts the name by decoding them whole, and
// refuses the request when that fails). For a tools/call, the tool must
// have no x-mcp-header argument (Options.HeaderParams): the SDK checks
// those arguments' Mcp-Param headers against the body, which the fast
// path does not.
func (h *Handler) namedAlike(r *http.Request, req *jsonrpc.Request) bool {
	m, ok := named[req.Method]
	if !ok {
		return true
	}
	header := r.Header.Get("Mcp-Name")
	if header == "" {
		return false
	}
	p := map[string]json.RawMessage{}
	dec := json.NewDecoder(bytes.NewReader(req.Params))
	if _, err := dec.Token(); err != nil { // '{': plainRequest checked
		return false
	}
	for dec.More() {
		t, err := dec.Token()
		k, _ := t.(string)
		if err != nil || !slices.Contains(m.keys, k) || p[k] != nil {
			return false
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return false
		}
		p[k] = v
	}
	var name string
	if raw := p[m.member]; len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &name) != nil || name != header {
		return false
	}
	if json.Unmarshal(req.Params, m.params()) != nil {
		return false
	}
	return req.Method != "tools/call" || h.headerParams != nil && !h.headerParams(name)
}

// maxPlainDepth bounds the nesting of a body the fast path decodes; the
// SDK's decoder refuses 1,000 levels and more.
const maxPlainDepth = 64

// plainRequest decodes body if it is one JSON-RPC call of a plain method
// with a params object, its members exactly "jsonrpc" ("2.0"), "id" (a
// string, or an integer of at most 2^53 in size), "method" and "params",
// each once, and no escape sequence in params. Before MCP 2026-07-28
// (newProtocol false), params must not name a protocol version (a
// per-request _meta, which the SDK's handler checks against the
// headers); from it, params must have a _meta object whose protocol
// version is 2026-07-28, named once. Any other body (a batch, a
// notification, malformed JSON, invalid UTF-8) is the SDK handler's to
// answer.
func plainRequest(body []byte, newProtocol bool) (*jsonrpc.Request, bool) {
	if !utf8.Valid(body) || !shallow(body) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var (
		req              jsonrpc.Request
		seen             [4]bool
		version, id, raw json.RawMessage
	)
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		k := 0
		var dst *json.RawMessage
		switch t {
		case "jsonrpc":
			k, dst = 0, &version
		case "id":
			k, dst = 1, &id
		case "method":
			k, dst = 2, &raw
		case "params":
			k, dst = 3, &req.Params
		default:
			return nil, false
		}
		if seen[k] {
			return nil, false
		}
		seen[k] = true
		if err := dec.Decode(dst); err != nil {
			return nil, false
		}
	}
	if _, err := dec.Token(); err != nil { // '}'
		return nil, false
	}
	if rest := body[dec.InputOffset():]; len(bytes.TrimLeft(rest, " \t\r\n")) != 0 {
		return nil, false
	}
	if !seen[0] || !seen[1] || !seen[2] || !seen[3] || string(version) != `"2.0"` {
		return nil, false
	}
	methods := plainMethods
	if newProtocol {
		methods = newPlainMethods
	}
	if err := json.Unmarshal(raw, &req.Method); err != nil || !methods[req.Method] {
		return nil, false
	}
	if len(req.Params) == 0 || req.Params[0] != '{' || bytes.Contains(req.Params, []byte(`\u`)) {
		return nil, false
	}
	switch n := bytes.Count(req.Params, []byte("protocolVersion")); {
	case !newProtocol && n > 0, newProtocol && (n != 1 || !metaVersion(req.Params)):
		return nil, false
	}
	var ok bool
	if req.ID, ok = plainID(id); !ok {
		return nil, false
	}
	return &req, true
}

// metaVersion reports whether params has a _meta object whose protocol
// version is 2026-07-28, each named once, with the SDK's case-sensitive
// matching of names (encoding/json's struct fields would match "_META").
func metaVersion(params json.RawMessage) bool {
	if bytes.Count(params, []byte(`"_meta"`)) != 1 {
		return false
	}
	var p map[string]json.RawMessage
	var meta map[string]json.RawMessage
	return json.Unmarshal(params, &p) == nil && json.Unmarshal(p["_meta"], &meta) == nil &&
		string(meta["io.modelcontextprotocol/protocolVersion"]) == `"`+newVersion+`"`
}

// plainID is a JSON-RPC id: a string, or an integer of at most 2^53 in
// size (which the SDK's float64 holds exactly).
func plainID(raw json.RawMessage) (jsonrpc.ID, bool) {
	var v any
	switch {
	case len(raw) > 0 && raw[0] == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return jsonrpc.ID{}, false
		}
		v = s
	default:
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || n > 1<<53 || n < -(1<<53) {
			return jsonrpc.ID{}, false
		}
		v = float64(n)
	}
	id, err := jsonrpc.MakeID(v)
	return id, err == nil
}

// shallow reports whether body nests at most maxPlainDepth levels,
// counting brackets outside strings.
func shallow(body []byte) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range body {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > maxPlainDepth {
				return false
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return true
}

// defaultVersion is the protocol version of a request without an
// Mcp-Protocol-Version header, as streamable HTTP defines it.
const defaultVersion = "2025-03-26"

// serve answers the plain call req of r in a session of its own, as the
// SDK's handler does: the session's state is that of an initialized
// session of the request's protocol version (from 2026-07-28, none: the
// request carries its own), the answer one server-sent event (after any
// notification the call sends in its course), or from 2026-07-28 a
// protocol error as JSON with its HTTP status. From 2026-07-28 the call
// ends with its request, as the SDK's handler ends it when told to
// (StreamableHTTPOptions.PropagateRequestCancellation, which toolroute
// sets); before, the caller ends it.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, req *jsonrpc.Request, newProtocol bool) {
	version := cmp.Or(r.Header.Get("Mcp-Protocol-Version"), defaultVersion)
	x := &exchange{w: w, id: req.ID, version: version, incoming: make(chan jsonrpc.Message, 1), done: make(chan struct{}), closed: make(chan struct{})}
	if newProtocol {
		x.request = r.Context()
	}
	req.Extra = &mcp.RequestExtra{
		TokenInfo:      auth.TokenInfoFromContext(r.Context()),
		Header:         r.Header,
		CloseSSEStream: x.closeStream,
	}
	state := &mcp.ServerSessionState{}
	if !newProtocol {
		state.InitializeParams = &mcp.InitializeParams{ProtocolVersion: version}
		state.InitializedParams = &mcp.InitializedParams{}
		state.LogLevel = "info"
	}
	ctx := context.WithValue(r.Context(), exchangeKey{}, x)
	ss, err := h.server.Connect(ctx, x, &mcp.ServerSessionOptions{State: state})
	if err != nil {
		http.Error(w, "failed connection", http.StatusInternalServerError)
		return
	}
	defer ss.Close()
	hdr := w.Header()
	hdr.Set("Cache-Control", "no-cache, no-transform")
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Connection", "keep-alive")
	x.incoming <- req
	select {
	case <-x.done:
	case <-r.Context().Done():
	case <-x.closed:
	}
	x.release()
}

// exchangeKey marks the contexts of a session's handlers, which derive
// from the context the session was connected with.
type exchangeKey struct{}

// errRejected is the SDK's code for a message its transport could not
// deliver (the session survives it): errors.Is matches it by code.
var errRejected = &jsonrpc.Error{Code: -32005, Message: "rejected by transport"}

// exchange is the one connection of a session that serves one call: its
// transport and its connection at once (a session connects once).
type exchange struct {
	w       http.ResponseWriter
	id      jsonrpc.ID // of the call
	version string
	// request, if not nil, is the context of the HTTP request whose end
	// ends the call (from 2026-07-28): Read fails then, which makes the
	// session cancel the calls in flight.
	request  context.Context
	incoming chan jsonrpc.Message // the call, then nothing
	closed   chan struct{}        // closed by Close

	mu        sync.Mutex
	done      chan struct{} // closed when the answer is written, or the stream closed
	answered  bool          // done is closed
	released  bool          // the request has returned: w is gone
	closeOnce sync.Once
}

// Connect implements [mcp.Transport].
func (x *exchange) Connect(context.Context) (mcp.Connection, error) { return x, nil }

// SupportsProtocolVersion implements [mcp.ProtocolVersionSupporter]: a
// stateless transport serves every version.
func (x *exchange) SupportsProtocolVersion(string) bool { return true }

// SessionID implements [mcp.Connection]: stateless, none.
func (x *exchange) SessionID() string { return "" }

// Read implements [mcp.Connection].
func (x *exchange) Read(ctx context.Context) (jsonrpc.Message, error) {
	var ended <-chan struct{} // nil: never
	if x.request != nil {
		ended = x.request.Done()
	}
	select {
	case msg := <-x.incoming:
		return msg, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-ended:
		return nil, context.Cause(x.request)
	case <-x.closed:
		return nil, io.EOF
	}
}

// Write implements [mcp.Connection]: the call's answer, and the
// notifications its handler sends before it, are events of the
// request's stream; a request to the client is refused (a stateless
// server cannot get the answer), and so is every message without a
// stream to write it to.
func (x *exchange) Write(ctx context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		return errorf("stateless servers cannot make requests")
	}
	resp, isResponse := msg.(*jsonrpc.Response)
	if isResponse && resp.ID != x.id {
		return errorf("write to closed stream")
	}
	if !isResponse && ctx.Value(exchangeKey{}) != x {
		// Sent outside the call: the SDK's stateless sessions have no
		// stream for it either.
		return errorf("undelivered message: stream not connected or already closed")
	}
	select {
	case <-x.closed:
		return errors.New("session is closed")
	default:
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.answered || x.released {
		return errorf("write to closed stream")
	}
	if isResponse {
		x.answered = true
		defer close(x.done)
	}
	if status := x.errorStatus(resp); status != 0 {
		x.w.Header().Set("Content-Type", "application/json")
		x.w.WriteHeader(status)
		_, err = x.w.Write(data)
	} else {
		err = writeEvent(x.w, "message", "", data)
	}
	if err != nil {
		return errorf("undelivered message: " + err.Error())
	}
	return nil
}

// errorStatus is the HTTP status of resp (nil: not a response) from MCP
// 2026-07-28, if it is a protocol error that has one (404 for an unknown
// method, 400 for invalid params, an unsupported protocol version or
// missing client capabilities); else 0, an event of the stream.
func (x *exchange) errorStatus(resp *jsonrpc.Response) int {
	if x.version < newVersion || resp == nil || resp.Error == nil {
		return 0
	}
	var werr *jsonrpc.Error
	if !errors.As(resp.Error, &werr) {
		return 0
	}
	switch werr.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, mcp.CodeUnsupportedProtocolVersion, mcp.CodeMissingRequiredClientCapabilities:
		return http.StatusBadRequest
	}
	return 0
}

// errorf is a transport's refusal of a message, as the SDK words it.
func errorf(why string) error {
	return &wrapped{msg: errRejected.Message + ": " + why}
}

// wrapped is a refusal that errors.Is reports as the SDK's.
type wrapped struct{ msg string }

func (e *wrapped) Error() string { return e.msg }
func (e *wrapped) Unwrap() error { return errRejected }

// closeStream is the call's [mcp.RequestExtra.CloseSSEStream]: from MCP
// 2025-11-25 it tells the client when to come back; the request ends.
func (x *exchange) closeStream(args mcp.CloseSSEStreamArgs) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.answered || x.released || x.version >= newVersion {
		return // deprecated from 2026-07-28: it does nothing
	}
	if x.version >= "2025-11-25" && args.RetryAfter > 0 {
		writeEvent(x.w, "close", strconv.FormatInt(args.RetryAfter.Milliseconds(), 10), nil)
	}
	x.answered = true
	close(x.done)
}

// release forgets the response writer: the request returns.
func (x *exchange) release() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.released = true
}

// Close implements [mcp.Connection].
func (x *exchange) Close() error {
	x.closeOnce.Do(func() { close(x.closed) })
	return nil
}

// writeEvent writes one server-sent event of the given type, with a
// retry field if retry is not empty, and flushes it. The pieces go to
// the response's own buffer: no copy of data is made.
func writeEvent(w http.ResponseWriter, event, retry string, data []byte) error {
	head := "event: message\ndata: "
	if event != "message" || retry != "" {
		head = "event: " + event + "\n"
		if retry != "" {
			head += "retry: " + retry + "\n"
		}
		head += "data: "
	}
	_, err := io.WriteString(w, head)
	if err == nil {
		_, err = w.Write(data)
	}
	if err == nil {
		_, err = io.WriteString(w, "\n\n")
	}
	_ = http.NewResponseController(w).Flush()
	return err
}
