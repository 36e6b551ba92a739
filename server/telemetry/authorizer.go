package telemetry

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/tool"
)

// The outcomes of an authorization decision (toolroute.authz.outcome).
const (
	outcomeAllow           = "allow"
	outcomeDeny            = "deny"
	outcomeUnauthenticated = "unauthenticated"
	outcomeOutage          = "outage"
)

// Authorizer decorates a for telemetry: each decision (a call of Allow
// or AllowMany) becomes an event, "toolroute.authorize", on the span of
// the request that asked (the server span for the visibility check of a
// tools/list or tools/call, the upstream span for an upstream request),
// and every route decided counts once in toolroute.authz.decisions, by
// outcome and by source. A decision is an event rather than a span of
// its own: in process it takes microseconds, and the RBAC proxy's HTTP
// calls have spans of their own ([Telemetry.ProxyTransport]). It panics
// if a is nil.
//
// source names what a is ([SourcePolicy], [SourceProxy], [SourceCache]
// or [SourceOther]). Decorators may be nested, and a decision counts once,
// at the outermost one, with the source of the innermost decorator that
// was asked about the route: so a decision cache is observed by
// decorating both its faces,
//
//	t.Authorizer(authz.Cached(t.Authorizer(proxy, telemetry.SourceProxy), ttl, max), telemetry.SourceCache)
//
// where a route the inner decorator is not asked about was answered by
// the cache (source "cache", and a hit in toolroute.authz.cache.lookups),
// and one it is asked about is a miss, decided by the proxy. The event of
// a decision at a cache says "hit" (toolroute.authz.cache.result) when
// the cache answered every route, "miss" when it asked the inner source.
func (t *Telemetry) Authorizer(a authz.Authorizer, source string) authz.Authorizer {
	if a == nil {
		panic("telemetry: Authorizer of a nil authz.Authorizer")
	}
	if source == "" {
		source = SourceOther
	}
	return &authorizer{t: t, a: a, source: source}
}

// Ready asks the decorated Authorizer's Ready, if it has one.
func (a *authorizer) Ready(ctx context.Context) error {
	if rc, ok := a.a.(authz.ReadyChecker); ok {
		return rc.Ready(ctx)
	}
	return nil
}

type authorizer struct {
	t      *Telemetry
	a      authz.Authorizer
	source string
}

// decisionScope collects, during one outermost decision, the routes the
// inner decorators were asked about, with their sources.
type decisionScope struct {
	mu    sync.Mutex
	inner map[tool.Route]string
}

type scopeKey struct{}

// scopeCtx is the context of an outermost decision: its parent, and the
// decision's scope under scopeKey{}. One allocation, where
// context.WithValue and the scope would be two.
type scopeCtx struct {
	context.Context
	scope decisionScope
}

func (c *scopeCtx) Value(key any) any {
	if key == (scopeKey{}) {
		return &c.scope
	}
	return c.Context.Value(key)
}

func (s *decisionScope) note(rs []tool.Route, source string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inner == nil {
		s.inner = make(map[tool.Route]string, len(rs))
	}
	for _, r := range rs {
		s.inner[r] = source // the innermost decorator notes last
	}
}

func (z *authorizer) Allow(ctx context.Context, c authz.Caller, r tool.Route) error {
	if sc, ok := ctx.Value(scopeKey{}).(*decisionScope); ok {
		sc.note([]tool.Route{r}, z.source)
		return z.a.Allow(ctx, c, r)
	}
	sc := &scopeCtx{Context: ctx}
	err := z.a.Allow(sc, c, r)
	z.finish(ctx, &sc.scope, c, []tool.Route{r}, []bool{err == nil}, err)
	return err
}

func (z *authorizer) AllowMany(ctx context.Context, c authz.Caller, rs []tool.Route) ([]bool, error) {
	if sc, ok := ctx.Value(scopeKey{}).(*decisionScope); ok {
		sc.note(rs, z.source)
		return z.a.AllowMany(ctx, c, rs)
	}
	sc := &scopeCtx{Context: ctx}
	allowed, err := z.a.AllowMany(sc, c, rs)
	if err == nil && len(allowed) != len(rs) {
		err = &authz.OutageError{Err: fmt.Errorf("authz: AllowMany answered %d decisions for %d routes", len(allowed), len(rs))}
		allowed = nil
	}
	z.finish(ctx, &sc.scope, c, rs, allowed, err)
	return allowed, err
}

// eventAuthorize is the name of a decision's event.
const eventAuthorize = "toolroute.authorize"

// errorOutcome is the outcome of a decision that failed.
func errorOutcome(err error) string {
	var (
		denied *authz.DeniedError
		unauth *authz.UnauthenticatedError
	)
	switch {
	case errors.As(err, &denied):
		return outcomeDeny
	case errors.As(err, &unauth):
		return outcomeUnauthenticated
	}
	return outcomeOutage
}

// finish records the decision: its event on the asking span, a count
// per route, cache hits and misses, and the request's decision.
func (z *authorizer) finish(ctx context.Context, sc *decisionScope, c authz.Caller, rs []tool.Route, allowed []bool, err error) {
	failed := ""
	if err != nil {
		failed = errorOutcome(err)
	}
	anyAllowed := false
	sc.mu.Lock()
	asked := len(sc.inner) > 0 // an inner decorator was asked: a cache missed
	for i, r := range rs {
		o := failed
		if err == nil {
			o = outcomeDeny
			if allowed[i] {
				o, anyAllowed = outcomeAllow, true
			}
		}
		src, inner := sc.inner[r]
		if !inner {
			src = z.source
		}
		if z.source == SourceCache {
			res := "hit"
			if inner {
				res = "miss"
			}
			z.t.cacheSums.cell(res, cacheAttrs).n.Add(1)
		}
		z.t.decisionSums.cell([2]string{o, src}, decisionAttrs).n.Add(1)
	}
	sc.mu.Unlock()
	outcome := failed
	if err == nil {
		outcome = outcomeDeny
		if anyAllowed {
			outcome = outcomeAllow
		}
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		k := eventKey{source: z.source, routes: len(rs), outcome: outcome}
		if z.source == SourceCache {
			k.cache = "hit"
			if asked {
				k.cache = "miss"
			}
		}
		span.AddEvent(eventAuthorize, z.t.events.get(k, eventOptions)...)
	}
	if st := requestFrom(ctx); st != nil {
		st.noteDecision(c.Subject, outcome)
	}
}

// eventKey is the attributes of a decision's event.
type eventKey struct {
	source, outcome, cache string
	routes                 int
}

func eventOptions(k eventKey) []trace.EventOption {
	attrs := []attribute.KeyValue{AttrAuthzSource.String(k.source), AttrAuthzRoutes.Int(k.routes), AttrAuthzOutcome.String(k.outcome)}
	if k.cache != "" {
		attrs = append(attrs, AttrCacheResult.String(k.cache))
	}
	if k.outcome == outcomeOutage || k.outcome == outcomeUnauthenticated {
		attrs = append(attrs, semconv.ErrorTypeKey.String(k.outcome))
	}
	return []trace.EventOption{trace.WithAttributes(attrs...)}
}

func cacheAttrs(res string) []attribute.KeyValue {
	return []attribute.KeyValue{AttrCacheResult.String(res)}
}

func decisionAttrs(k [2]string) []attribute.KeyValue {
	return []attribute.KeyValue{AttrAuthzOutcome.String(k[0]), AttrAuthzSource.String(k[1])}
}
