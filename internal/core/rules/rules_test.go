package rules_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/core/rules"
	"github.com/toolroute/toolroute/tool"
)

func problems(d rules.Decl) []string {
	var out []string
	rules.Check(&d, func(p rules.Problem) { out = append(out, fmt.Sprintf("%d/%d: %s", p.Field, p.Index, p.Text)) })
	return out
}

// blank returns d with the fields of unknown unknown, and zero, as the
// analyzer leaves a value it does not know.
func blank(d rules.Decl, unknown rules.Field) rules.Decl {
	d.Unknown = unknown
	if unknown&rules.Name != 0 {
		d.Name = ""
	}
	if unknown&rules.Description != 0 {
		d.Description = ""
	}
	if unknown&rules.ServiceKey != 0 {
		d.ServiceKey = ""
	}
	if unknown&rules.Routes != 0 {
		d.Routes = nil
	}
	if unknown&rules.Local != 0 {
		d.Local = false
	}
	if unknown&rules.Behaviour != 0 {
		d.Behaviour = behaviour.Unset
	}
	if unknown&rules.Handler != 0 {
		d.Handler = nil
	}
	if unknown&rules.Sends != 0 {
		d.Sends = nil
	}
	if unknown&rules.Task != 0 {
		d.Task = tool.TaskNever
	}
	if unknown&rules.TaskAfter != 0 {
		d.TaskAfter = 0
	}
	if unknown&rules.Deprecated != 0 {
		d.Deprecated = nil
	} else if d.Deprecated != nil && unknown&(rules.DeprecatedReason|rules.DeprecatedSuccessor) != 0 {
		dep := *d.Deprecated
		if unknown&rules.DeprecatedReason != 0 {
			dep.Reason = ""
		}
		if unknown&rules.DeprecatedSuccessor != 0 {
			dep.Successor = ""
		}
		d.Deprecated = &dep
	}
	if unknown&rules.Version != 0 {
		d.Version = ""
	}
	if unknown&rules.Tags != 0 {
		d.Tags = nil
	}
	if unknown&rules.Icons != 0 {
		d.Icons = nil
	}
	if unknown&rules.Cache != 0 {
		d.Cache = nil
	} else if d.Cache != nil && unknown&(rules.CacheTTL|rules.CacheStaleOnError) != 0 {
		c := *d.Cache
		if unknown&rules.CacheTTL != 0 {
			c.TTL = 0
		}
		if unknown&rules.CacheStaleOnError != 0 {
			c.StaleOnError = 0
		}
		d.Cache = &c
	}
	return d
}

// unknownOf returns the fields of fields that mask's bits select.
func unknownOf(fields []rules.Field, mask int) rules.Field {
	var unknown rules.Field
	for j, f := range fields {
		if mask&(1<<j) != 0 {
			unknown |= f
		}
	}
	return unknown
}

// TestUnknownIsSound: whatever a caller does not know, Check reports
// only problems the whole declaration has too, so that the analyzer,
// which knows a part, reports nothing Register would accept.
func TestUnknownIsSound(t *testing.T) {
	get := tool.ServiceRoute("catalog", "GET", "/items/{id}")
	decls := []rules.Decl{
		{Name: "ok", Description: "d", ServiceKey: "catalog", Routes: []tool.Route{get}, Behaviour: behaviour.ReadOnly},
		{Name: "local", Description: "d", Local: true, Behaviour: behaviour.ReadOnly},
		{},
		{Local: true, ServiceKey: "catalog", Routes: []tool.Route{get}},
		{Name: "bad name", ServiceKey: "cat/alog", Routes: []tool.Route{get, {URI: "x", Method: "get"}, get}, Behaviour: 9, Handler: rules.ErrMissingHandler, FirstSite: "a.go:1"},
		{Name: "no_key", Description: "d", Routes: []tool.Route{get, tool.ServiceRoute("catalog", "GET", "/items/{name}")}, Behaviour: behaviour.Additive},
		{Name: "other", Description: " ", ServiceKey: "billing", Routes: []tool.Route{get, {}}, Behaviour: behaviour.Destructive},
		{Name: "sends", Description: "d", ServiceKey: "catalog", Routes: []tool.Route{get}, Behaviour: behaviour.ReadOnly, Sends: []tool.Route{get, tool.ServiceRoute("catalog", "DELETE", "/items/{id}")}},
		{Name: "local_sends", Description: "d", Local: true, Behaviour: behaviour.ReadOnly, Sends: []tool.Route{get}},
	}
	fields := []rules.Field{rules.Name, rules.Description, rules.ServiceKey, rules.Routes, rules.Local, rules.Behaviour, rules.Handler, rules.Sends}
	for i, d := range decls {
		whole := problems(d)
		for mask := range 1 << len(fields) {
			unknown := unknownOf(fields, mask)
			for routeMask := range 1 << len(d.Routes) {
				if unknown&rules.Routes != 0 && routeMask != 0 {
					continue
				}
				p := blank(d, unknown)
				if routeMask != 0 {
					p.Routes = slices.Clone(p.Routes)
					p.RouteUnknown = make([]bool, len(p.Routes))
					for k := range p.Routes {
						if routeMask&(1<<k) != 0 {
							p.RouteUnknown[k], p.Routes[k] = true, tool.Route{}
						}
					}
				}
				for _, got := range problems(p) {
					if !slices.Contains(whole, got) {
						t.Errorf("decl %d, unknown %b, routes unknown %b: %q, which the whole declaration does not have (it has %q)", i, unknown, routeMask, got, whole)
					}
				}
			}
		}
	}
}

// TestUnknownIsSoundLifecycle is TestUnknownIsSound for the rules of
// the task setting, the lifecycle and result caching, with the fields
// those read besides their own (Name, Behaviour).
func TestUnknownIsSoundLifecycle(t *testing.T) {
	get := tool.ServiceRoute("catalog", "GET", "/items/{id}")
	base := rules.Decl{Name: "t", Description: "d", ServiceKey: "catalog", Routes: []tool.Route{get}, Behaviour: behaviour.ReadOnly}
	with := func(edit func(*rules.Decl)) rules.Decl {
		d := base
		edit(&d)
		return d
	}
	decls := []rules.Decl{
		base,
		with(func(d *rules.Decl) {
			d.Task, d.TaskAfter = tool.TaskAllowed, time.Second
			d.Deprecated = &tool.Deprecation{Reason: "old", Successor: "t2"}
			d.Version, d.Tags, d.Icons = "1.0", []string{"a", "b"}, []mcp.Icon{{Source: "x"}}
			d.Cache = &tool.ResultCache{TTL: time.Second, StaleOnError: time.Minute}
		}),
		with(func(d *rules.Decl) {
			d.Task, d.TaskAfter = 9, -time.Second
			d.Deprecated = &tool.Deprecation{Reason: "a\nb", Successor: "t"}
			d.Version, d.Tags, d.Icons = "1 0", []string{"A", "a", "a"}, []mcp.Icon{{}, {Source: "x"}}
			d.Behaviour, d.Cache = behaviour.Additive, &tool.ResultCache{StaleOnError: -1}
		}),
		with(func(d *rules.Decl) {
			d.Task, d.TaskAfter = tool.TaskAlways, time.Second
			d.Deprecated = &tool.Deprecation{Successor: "bad name"}
			d.Cache = &tool.ResultCache{TTL: time.Second}
			d.Behaviour = behaviour.Destructive
		}),
		with(func(d *rules.Decl) { d.TaskAfter, d.Deprecated = time.Second, &tool.Deprecation{Reason: " "} }),
	}
	fields := []rules.Field{rules.Name, rules.Behaviour, rules.Task, rules.TaskAfter, rules.Deprecated, rules.DeprecatedReason, rules.DeprecatedSuccessor,
		rules.Version, rules.Tags, rules.Icons, rules.Cache, rules.CacheTTL, rules.CacheStaleOnError}
	for i, d := range decls {
		whole := problems(d)
		if i > 1 && len(whole) == 0 {
			t.Fatalf("decl %d breaks no rule", i)
		}
		for mask := range 1 << len(fields) {
			unknown := unknownOf(fields, mask)
			for _, got := range problems(blank(d, unknown)) {
				if !slices.Contains(whole, got) {
					t.Errorf("decl %d, unknown %b: %q, which the whole declaration does not have (it has %q)", i, unknown, got, whole)
				}
			}
		}
	}
}

// TestCheckOrder pins the order of a declaration's problems, Register's.
func TestCheckOrder(t *testing.T) {
	d := rules.Decl{
		Name:       "",
		ServiceKey: "catalog",
		Routes:     []tool.Route{{URI: "/catalog/a/../b", Method: "GET"}, {URI: "/billing/x", Method: "GET"}, {URI: "/catalog/ok", Method: "GET"}, {URI: "/catalog/ok", Method: "GET"}},
		Handler:    rules.ErrMissingHandler,
		FirstSite:  "a.go:1",
		Task:       7,
		TaskAfter:  -time.Second,
		Deprecated: &tool.Deprecation{},
		Version:    "a b",
		Tags:       []string{"a", "-b", "a"},
		Icons:      []mcp.Icon{{}},
		Cache:      &tool.ResultCache{},
	}
	want := []string{
		"1/-1: empty Name",
		"1/-1: duplicate tool name, first registered at a.go:1",
		"2/-1: missing Description",
		"32/-1: Behaviour is unset: declare behaviour.ReadOnly, behaviour.Additive or behaviour.Destructive",
		"64/-1: missing Handler (use tool.Handle or tool.HandleResult)",
		`8/0: invalid route GET /catalog/a/../b: URI must not contain a ".." segment`,
		`8/1: route GET /billing/x is outside service "catalog" (its URI must start with "/catalog/")`,
		"8/3: duplicate route GET /catalog/ok",
		"256/-1: unknown Task TaskMode(7) (want tool.TaskNever, tool.TaskAllowed or tool.TaskAlways)",
		"512/-1: negative TaskAfter -1s",
		"2048/-1: Deprecated without a Reason (say why, and what to use instead)",
		"8192/-1: Version \"a b\": at most 64 characters, no space or control character",
		"16384/1: tag \"-b\": 1 to 64 of a-z 0-9 _ . -, starting with a letter or digit",
		"16384/2: duplicate tag \"a\"",
		"32768/0: Icons[0] has no Source",
		"65536/-1: Cache on a tool of behaviour unset: only ReadOnly tools' results may be cached",
		"131072/-1: Cache.TTL is 0s: give a positive duration",
	}
	if got := problems(d); !slices.Equal(got, want) {
		t.Errorf("problems:\n%q\nwant\n%q", got, want)
	}
}

// TestSends: every route the handler sends on must be among the
// declared routes, compared as values; a route of the declaration that
// is not known makes the rule unknown too (it may be that one).
func TestSends(t *testing.T) {
	get := tool.ServiceRoute("catalog", "GET", "/items/{id}")
	del := tool.ServiceRoute("catalog", "DELETE", "/items/{id}")
	renamed := tool.ServiceRoute("catalog", "GET", "/items/{name}")
	base := rules.Decl{Name: "t", Description: "d", ServiceKey: "catalog", Routes: []tool.Route{get, del}, Behaviour: behaviour.ReadOnly}
	tests := []struct {
		name  string
		sends []tool.Route
		edit  func(*rules.Decl)
		want  []string
	}{
		{name: "declared", sends: []tool.Route{get, del}},
		{name: "not declared", sends: []tool.Route{get, tool.ServiceRoute("catalog", "POST", "/items")},
			want: []string{"64/-1: the handler sends requests on POST /catalog/items, which VisibilityRoutes does not declare: add it there (a tool's routes decide who sees it, and its upstream transport refuses every request outside them)"}},
		{name: "placeholder renamed", sends: []tool.Route{renamed},
			want: []string{"64/-1: the handler sends requests on GET /catalog/items/{name}, which VisibilityRoutes does not declare: add it there (a tool's routes decide who sees it, and its upstream transport refuses every request outside them)"}},
		{name: "a route unknown", sends: []tool.Route{renamed}, edit: func(d *rules.Decl) {
			d.Routes, d.RouteUnknown = []tool.Route{get, {}}, []bool{false, true}
		}},
		{name: "sends unknown", sends: []tool.Route{renamed}, edit: func(d *rules.Decl) { d.Unknown |= rules.Sends }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := base
			d.Sends = tt.sends
			if tt.edit != nil {
				tt.edit(&d)
			}
			if got := problems(d); !slices.Equal(got, tt.want) {
				t.Errorf("problems:\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// TestJoinedHandlerErrors: the errors a handler's error joins are a
// problem each (a handler's In and Out, or each mismatch of a typed
// upstream call); an error that wraps two without joining them is one.
func TestJoinedHandlerErrors(t *testing.T) {
	d := rules.Decl{Name: "t", Description: "d", Local: true, Behaviour: behaviour.ReadOnly,
		Handler: errors.Join(errors.New("a"), errors.Join(errors.New("b"), errors.New("c")), fmt.Errorf("d: %w, %w", errors.New("e"), errors.New("f")))}
	want := []string{"64/-1: a", "64/-1: b", "64/-1: c", "64/-1: d: e, f"}
	if got := problems(d); !slices.Equal(got, want) {
		t.Errorf("problems:\n%q\nwant\n%q", got, want)
	}
}
