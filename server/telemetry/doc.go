// Package telemetry reports what a toolroute server does as OpenTelemetry
// traces and metrics, following the semantic conventions for MCP, and
// writes an audit trail. It is apart from the core (tool, registry,
// authz, server), which imports no OpenTelemetry: a service that does not
// import this package links none of it.
//
// # Wiring
//
// A [Telemetry] ([New]) makes decorators for what the core already
// accepts, plus one observer:
//
//	tel, _ := telemetry.New(telemetry.Options{TracerProvider: tp, MeterProvider: mp, Audit: telemetry.NewJSONAudit(f, nil)})
//	a := tel.Authorizer(policy, telemetry.SourcePolicy)          // decision events and metrics
//	s, _ := server.New(server.Options{
//		Authorizer: a,
//		Observers:  []mcp.Middleware{tel.Middleware()},      // the server span, MCP metrics, audit
//	}, server.Install(reg, deps))
//	s.AddSendingMiddleware(tel.SendingMiddleware())              // elicitation questions
//	client := &http.Client{Transport: tel.Transport(authz.Transport(base, "catalog", "http://catalog:8080", a, authz.Options{}), "catalog")}
//
// Under fx, [Module] does the server's part from the application's
// providers. A decision cache is observed by decorating both its faces
// (see [Telemetry.Authorizer]); an RBAC proxy's HTTP calls by giving
// authz.ProxyAuth a client over [Telemetry.ProxyTransport].
//
// [Telemetry.Middleware] must be an observer (server.Options.Observers):
// there it runs right after the caller is resolved and before
// authorization, so its server span is the parent of the authorization's
// spans, and refused calls (a hidden tool, an unauthenticated caller, an
// authorization outage) are measured and audited like the others. In
// server.Options.Middleware it would run after authorization and see
// only the calls that passed.
//
// # Traces
//
//   - One server span per MCP request: "{mcp.method.name}
//     {gen_ai.tool.name}" for a tools/call of a tool the server has (or
//     hides from the caller), else "{mcp.method.name}". Attributes:
//     mcp.method.name, mcp.protocol.version, mcp.session.id (stateful
//     sessions), gen_ai.operation.name ("execute_tool") and
//     gen_ai.tool.name (tools/call), enduser.id (the caller's subject),
//     error.type and rpc.response.status_code (failures). A failed
//     request's span has the status Error, described by its outcome,
//     for a tools/call the server's log record's ("denied",
//     "rate_limited", "tool_error", …). Its parent is
//     the trace context in params._meta ("traceparent", "tracestate": the
//     MCP convention), else the HTTP request's traceparent header, else
//     the context's span. What is known when the request arrives (its
//     method, version, session, tool and caller) is on the span when it
//     starts, where a sampler sees it; so is the tool in its name, from
//     the tool's second call on (the first tells that the server has
//     it: a name the server does not have is never a span's name).
//   - A "toolroute.authorize" event per authorization decision, on the
//     span that asked (the server span for the visibility check of a
//     tools/list or tools/call, the upstream span for an upstream
//     request): toolroute.authz.source, toolroute.authz.routes,
//     toolroute.authz.outcome, toolroute.authz.cache.result (at a
//     decorated cache: "hit" if it answered every route, else "miss"),
//     error.type. An RBAC proxy's HTTP calls are client spans under the
//     span that asked ([Telemetry.ProxyTransport], otelhttp).
//   - "{METHOD} {route template}" (client) per upstream request, with
//     http.request.method, url.template, server.address, server.port,
//     http.response.status_code, error.type, toolroute.service (all but
//     the status and error.type from its start). The request carries the
//     span's W3C trace context to the upstream, sampled or not.
//
// No span or event holds a bearer token, an argument value or a
// concrete upstream path (it holds argument values): upstream spans have
// url.template, not url.full.
//
// # Metrics
//
// Every attribute value comes from a bounded set: method names outside
// MCP's and tool names the server does not have are never recorded (the
// method as "_OTHER", the tool left out), upstream requests are recorded
// by their route template, never their path; so no caller can add series.
//
//	| instrument                          | kind, unit                | attributes                                                                             | what
//	|-------------------------------------|---------------------------|----------------------------------------------------------------------------------------|-----------------------------------------------
//	| mcp.server.operation.duration       | histogram, s              | mcp.method.name, gen_ai.tool.name, mcp.protocol.version, error.type, rpc.response.status_code | every MCP request, from its arrival to its answer (semantic conventions)
//	| mcp.server.session.duration         | histogram, s              | mcp.protocol.version                                                                   | a stateful session (stdio, in-memory, stateful HTTP) opened by initialize, when it ends (semantic conventions)
//	| toolroute.authz.decisions           | counter*, {decision}      | toolroute.authz.outcome (allow, deny, unauthenticated, outage), toolroute.authz.source (policy, proxy, cache, other) | one per route decided
//	| toolroute.authz.cache.lookups       | counter*, {lookup}        | toolroute.authz.cache.result (hit, miss)                                               | one per route looked up in a decorated decision cache
//	| toolroute.upstream.request.duration | histogram, s              | toolroute.service, url.template, http.request.method, http.response.status_code, error.type | one per upstream request a tool sends or authz refuses (error.type denied, unauthenticated, outage); its count is the request count
//	| toolroute.calls.active              | up-down counter*, {call}  | none                                                                                   | tools/call requests in flight
//	| toolroute.questions                 | counter, {question}       | toolroute.question.state (asked, answered), toolroute.question.channel (input_required, elicitation) | questions to the user, permission questions among them
//	| toolroute.calls.deprecated          | counter*, {call}          | gen_ai.tool.name                                                                       | tools/call requests of a deprecated tool (tool.Tool.Deprecated), under server.New
//
// The instruments marked * are asynchronous: every request counts in
// them, so they count in memory (an atomic add) and are reported when
// the meter provider collects. They export the same sums a synchronous
// counter would, with no exemplars.
//
// error.type is, per the conventions, the JSON-RPC error code of a
// protocol error ("-32602"; "-32010" for a call over its caller's rate
// limit), "tool_error" for an isError result, "cancelled" for a
// cancelled request, and "_OTHER" otherwise; for an
// upstream request, its HTTP status from 400 up or the class of its
// error. mcp.server.operation.duration uses the conventions' bucket
// boundaries.
//
// # Audit trail
//
// With [Options.Audit], every security-relevant event becomes one
// [Record] (schema version [AuditVersion], field "v"): each tools/call
// (subject, tool, the authorization's decision, the outcome, the upstream
// requests as route templates with their status, the duration, a digest
// of the arguments), each tools/list (subject, how many tools were
// visible), and each question to the user and its answer. Refusals and
// outages are tools/call or tools/list records with their outcome.
// [NewJSONAudit] writes them as JSON lines:
//
//	{"v":1,"time":"2026-12-01T15:28:16.287Z","event":"tools/call","subject":"viewer@demo",
//	 "trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","tool":"get_item","decision":"allow",
//	 "outcome":"ok","duration_ms":2.038,"args_digest":"sha256:5811…",
//	 "upstream":[{"method":"GET","route":"/catalog/api/v1/items/{id}","status":200}]}
//
// A record never holds a bearer token or an argument value. The digest
// lets records of the same arguments be matched; it does not hide
// low-entropy arguments from someone who guesses them, unless keyed
// ([Options.AuditKey]).
//
// # Cost
//
// Nothing is installed unless the application installs it. Installed, a
// tools/call of a mapped tool costs two spans: the server span and one
// per upstream request; each authorization decision is an event on one
// of them. Metric attribute sets, upstream span names and start
// attributes, and tools' span names are made once and kept, so that
// recording allocates nothing for them, and are read without a lock.
// The counters every request counts in are atomic adds, reported at
// collection; a call records two histograms (its own duration and each
// upstream request's). A span that is not sampled gets
// no attribute or event beyond its start options. The work around a call
// is kept out of the frames that stay on the stack while the call runs,
// so that the request's goroutine needs no bigger stack for it.
package telemetry
