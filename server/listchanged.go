package server

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/tool"
)

// NotifyListChanged tells every client listening to s whose visible
// tools changed: it decides again, with s's [Options.Authorizer] as it
// decides now, which tools each listener's caller sees, and sends
// notifications/tools/list_changed to each whose set differs from the
// one it was last told of (or saw when it began to listen). Listeners
// whose set is the same are not told, and the notification carries no
// tool name: it reveals nothing about tools a caller does not see. The
// set is what the caller's roles show: [Options.Toolsets] hides tools as
// it does from tools/list (a reload that changes only a role's toolsets
// tells its callers too); a client's own narrowing, by request, does
// not count. It returns how many listeners were told.
//
// Listeners are the 2026-07-28 subscriptions/listen streams that asked
// for toolsListChanged, and the 2025 sessions (stdio, in-memory, stateful
// HTTP), which receive list_changed without asking; a stateless HTTP
// client of 2025 has no stream to be told on. s must be built by [New]
// with [Options.ListChanged], else NotifyListChanged does nothing and
// returns 0. Call it after what the authorizer decides changed (a
// policy reload); each replica of a service calls it for its own
// listeners. A listener whose decision fails (an outage) is not told,
// and is compared again at the next call.
func NotifyListChanged(ctx context.Context, s *mcp.Server) int {
	l := reporterOf(s).lists
	if l == nil {
		return 0
	}
	return l.notify(ctx)
}

// listeners are the sessions of a server that are told when their
// callers' visible tools change (Options.ListChanged).
type listeners struct {
	a        authz.Authorizer
	toolsets func(context.Context, authz.Caller) ([]string, bool) // Options.Toolsets; nil for none
	tools    []*tool.Call
	routes   []tool.Route // the distinct routes of tools
	log      *slog.Logger
	send     mcp.MethodHandler // the server's sending handler, below its middleware

	mu sync.Mutex // held while deciding, so that a registration and a notify are ordered
	m  map[*mcp.ServerSession]*listener
}

// listener is one session told of changes.
type listener struct {
	caller authz.Caller
	subID  any  // the subscriptions/listen request's id; nil for a 2025 session
	acked  bool // toolsListChanged was acknowledged (2026), or a 2025 session
	seen   [sha256.Size]byte
	known  bool // seen holds a decided set
}

func newListeners(a authz.Authorizer, toolsets func(context.Context, authz.Caller) ([]string, bool), tools []*tool.Call, log *slog.Logger) *listeners {
	l := &listeners{a: a, toolsets: toolsets, tools: tools, log: log, m: map[*mcp.ServerSession]*listener{}}
	ids := map[tool.Route]bool{}
	for _, t := range tools {
		for _, r := range t.Routes {
			if !ids[r] {
				ids[r] = true
				l.routes = append(l.routes, r)
			}
		}
	}
	return l
}

// visible is the digest of the names of the tools c sees now (in the
// order of tools, sorted by name), as authz.Middleware lists them to a
// client that does not narrow them.
func (l *listeners) visible(c authz.Caller) ([sha256.Size]byte, error) {
	// A context of its own: a pinned request's would decide under the
	// generation the request began with, not the current one.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	allowed := map[tool.Route]bool{}
	if len(l.routes) > 0 {
		got, err := l.a.AllowMany(ctx, c, l.routes)
		if err == nil && len(got) != len(l.routes) {
			err = &authz.OutageError{}
		}
		if err != nil {
			return [sha256.Size]byte{}, err
		}
		for i, r := range l.routes {
			allowed[r] = got[i]
		}
	}
	var limit []string
	limited := false
	if l.toolsets != nil {
		limit, limited = l.toolsets(ctx, c)
	}
	h := sha256.New()
	for _, t := range l.tools {
		if limited && !slices.ContainsFunc(t.Tags, func(tag string) bool { return slices.Contains(limit, tag) }) {
			continue // a toolset hides it, as from tools/list
		}
		seen := t.Local
		for _, r := range t.Routes {
			seen = seen || allowed[r]
		}
		if seen {
			h.Write([]byte(t.Tool))
			h.Write([]byte{0})
		}
	}
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return d, nil
}

// add registers ss, listening as caller; 2025 sessions listen at once,
// 2026 streams once their toolsListChanged is acknowledged.
func (l *listeners) add(ss *mcp.ServerSession, caller authz.Caller, legacy bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.m[ss]; ok {
		return
	}
	li := &listener{caller: caller, acked: legacy}
	li.seen, li.known = l.decide(li)
	l.m[ss] = li
}

func (l *listeners) decide(li *listener) ([sha256.Size]byte, bool) {
	d, err := l.visible(li.caller)
	if err != nil {
		l.log.Warn("toolroute: deciding a listener's tools failed; it is told of changes once they can be decided", slog.Any("caller", li.caller), slog.String("cause", err.Error()))
		return d, false
	}
	return d, true
}

func (l *listeners) remove(ss *mcp.ServerSession) {
	l.mu.Lock()
	delete(l.m, ss)
	l.mu.Unlock()
}

// acked records the acknowledgment of ss's listen stream.
func (l *listeners) acked(ss *mcp.ServerSession, p *mcp.SubscriptionsAcknowledgedParams) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if li := l.m[ss]; li != nil && p != nil && p.Notifications.ToolsListChanged {
		li.acked, li.subID = true, p.Meta[mcp.MetaKeySubscriptionID]
	}
}

// notify tells the listeners whose visible tools changed.
func (l *listeners) notify(ctx context.Context) int {
	type target struct {
		ss    *mcp.ServerSession
		subID any
	}
	var told []target
	l.mu.Lock()
	for ss, li := range l.m {
		if !li.acked {
			continue
		}
		d, ok := l.decide(li)
		if !ok {
			continue
		}
		if li.known && d != li.seen {
			told = append(told, target{ss, li.subID})
		}
		li.seen, li.known = d, true
	}
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	for _, t := range told {
		params := &mcp.ToolListChangedParams{}
		if t.subID != nil {
			params.Meta = mcp.Meta{mcp.MetaKeySubscriptionID: t.subID}
		}
		if _, err := l.send(ctx, "notifications/tools/list_changed", &mcp.ServerRequest[*mcp.ToolListChangedParams]{Session: t.ss, Params: params}); err != nil {
			l.log.Warn("toolroute: sending notifications/tools/list_changed failed", slog.String("cause", err.Error()))
		}
	}
	return len(told)
}

// receiving registers listeners: a 2026 subscriptions/listen stream for
// as long as it lasts, a 2025 session from its initialize to its end.
// It runs after the caller is resolved.
func (l *listeners) receiving(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if ss == nil || (method != "subscriptions/listen" && method != "initialize") {
			return next(ctx, method, req)
		}
		caller, _ := authz.CallerFromContext(ctx)
		if caller.Subject == "" && len(caller.Roles) == 0 {
			return next(ctx, method, req) // no caller: it sees nothing to be told about
		}
		if method == "initialize" {
			res, err := next(ctx, method, req)
			if err == nil {
				l.add(ss, caller, true)
				go func() {
					ss.Wait()
					l.remove(ss)
				}()
			}
			return res, err
		}
		l.add(ss, caller, false)
		defer l.remove(ss)
		return next(ctx, method, req)
	}
}

// sending keeps the server's own sending handler, and records the
// acknowledgments of listen streams.
func (l *listeners) sending(next mcp.MethodHandler) mcp.MethodHandler {
	l.send = next
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "notifications/subscriptions/acknowledged" {
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
				if p, ok := req.GetParams().(*mcp.SubscriptionsAcknowledgedParams); ok {
					l.acked(ss, p)
				}
			}
		}
		return next(ctx, method, req)
	}
}
