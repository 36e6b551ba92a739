package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/core/call"
	"github.com/toolroute/toolroute/internal/core/lifecycle"
	"github.com/toolroute/toolroute/internal/core/rules"
	"github.com/toolroute/toolroute/tool"
)

// Registry collects tool declarations for a dependency container C and
// installs them on MCP servers.
//
// A Registry must be created with [New]. Its methods are safe for
// concurrent use. Register is meant for init functions: it panics on any
// misconfiguration, and after the first Install or AddTools.
type Registry[C any] struct {
	mu        sync.RWMutex
	entries   map[string]*entry[C]
	sorted    []*entry[C] // by name; rebuilt on Register
	installed bool
}

type entry[C any] struct {
	tool tool.Tool[C] // Description dedented; routes copied
	site site         // the Register call
	call *tool.Call   // the tool as the server and authz see it; in every call's context
	ann  *mcp.ToolAnnotations
}

// New returns an empty registry.
func New[C any]() *Registry[C] {
	return &Registry[C]{entries: map[string]*entry[C]{}}
}

// Register adds t to the registry. It panics, with a message of the form
//
//	registry: tool "NAME" (registered at FILE:LINE): RULE
//
// if t breaks any rule of [Registry.Check], if a tool of the same name is
// registered already (the message names both sites), or if the registry
// has been installed on a server.
func (r *Registry[C]) Register(t tool.Tool[C]) {
	site := caller(2)
	if err := r.register(t, site); err != nil {
		panic(err.Error())
	}
}

// Check applies Register's rules to t without registering it, and returns
// every problem joined in one error (nil if t is fine), each line in
// Register's form. A name registered already is a problem too, and so
// is any tool once the registry has been installed.
func (r *Registry[C]) Check(t tool.Tool[C]) error {
	site := caller(2)
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.check(t, site)
}

func (r *Registry[C]) register(t tool.Tool[C], site site) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.check(t, site); err != nil {
		return err
	}
	t.Description = dedent(t.Description)
	t.VisibilityRoutes = slices.Clone(t.VisibilityRoutes)
	t.Deprecated, t.Tags, t.Icons = ownLifecycle(t.Deprecated, t.Tags, t.Icons)
	if t.Cache != nil {
		c := *t.Cache
		t.Cache = &c
	}
	e := &entry[C]{
		tool: t,
		site: site,
		call: &tool.Call{Tool: t.Name, ServiceKey: t.ServiceKey, Routes: t.VisibilityRoutes, Local: t.Local, InputSchema: t.Handler.InputSchema(), Task: t.Task, TaskAfter: taskAfter(t), Deprecated: t.Deprecated, Tags: t.Tags, Cache: t.Cache},
		ann:  t.Behaviour.Annotations(t.Title, t.Idempotent, t.OpenWorld),
	}
	r.entries[t.Name] = e
	i, _ := slices.BinarySearchFunc(r.sorted, t.Name, func(e *entry[C], name string) int { return strings.Compare(e.tool.Name, name) })
	r.sorted = slices.Insert(r.sorted, i, e)
	return nil
}

// check returns every rule t breaks; r.mu must be held. The rules are
// internal/core/rules', which registry/vet applies to the source too.
func (r *Registry[C]) check(t tool.Tool[C], site site) error {
	var errs []error
	fail := func(rule string) {
		errs = append(errs, fmt.Errorf("registry: tool %q (registered at %s): %s", t.Name, site, rule))
	}
	if r.installed {
		fail("Register after Install (register tools in init functions)")
	}
	d := rules.Decl{
		Name:        t.Name,
		Description: t.Description,
		ServiceKey:  t.ServiceKey,
		Routes:      t.VisibilityRoutes,
		Local:       t.Local,
		Behaviour:   t.Behaviour,
		Task:        t.Task,
		TaskAfter:   t.TaskAfter,
		Deprecated:  t.Deprecated,
		Version:     t.Version,
		Tags:        t.Tags,
		Icons:       t.Icons,
		Cache:       t.Cache,
	}
	if t.Handler == (tool.Handler[C]{}) {
		d.Handler = rules.ErrMissingHandler
	} else {
		d.Handler = t.Handler.Err()
		d.Sends = t.Handler.Sends()
	}
	if prev, ok := r.entries[t.Name]; ok {
		d.FirstSite = prev.site.String()
	}
	rules.Check(&d, func(p rules.Problem) { fail(p.Text) })
	return errors.Join(errs...)
}

// site is where a tool was registered: the program counter of the
// Register (or Check) call, resolved to FILE:LINE only for a message.
type site uintptr

// caller returns the site of the function skip frames up.
func caller(skip int) site {
	var pc [1]uintptr
	if runtime.Callers(skip+1, pc[:]) < 1 {
		return 0
	}
	return site(pc[0])
}

// String returns FILE:LINE, or "unknown".
func (s site) String() string {
	if s == 0 {
		return "unknown"
	}
	f, _ := runtime.CallersFrames([]uintptr{uintptr(s)}).Next()
	if f.File == "" {
		return "unknown"
	}
	return fmt.Sprintf("%s:%d", f.File, f.Line)
}

// dedent trims s and removes the indentation its lines have in common,
// so descriptions can be written as indented raw strings. Text that
// starts on the opening line (after the backquote) takes no part in
// finding the common indentation: only the lines after it do. Text that
// starts on a line of its own counts like every other line, so that
// relative indentation survives ("\n\t\tA.\n\t\t  B.\n\t" gives
// "A.\n  B.").
func dedent(s string) string {
	if !strings.Contains(s, "\n") {
		if strings.TrimSpace(s) == "" {
			return ""
		}
		return strings.Trim(s, " \t")
	}
	lines := strings.Split(s, "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
		s = "" // the text starts on a line of its own
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return ""
	}
	from := 1 // the first line whose indentation counts
	if s == "" {
		from = 0
	}
	prefix := ""
	first := true
	for _, l := range lines[from:] {
		if strings.TrimSpace(l) == "" {
			continue
		}
		ind := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if first {
			prefix, first = ind, false
			continue
		}
		for !strings.HasPrefix(ind, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
	}
	for i := range lines {
		switch {
		case i < from:
			lines[i] = strings.TrimLeft(lines[i], " \t")
		case strings.TrimSpace(lines[i]) == "":
			lines[i] = ""
		default:
			lines[i] = strings.TrimPrefix(lines[i], prefix)
		}
		lines[i] = strings.TrimRight(lines[i], " \t")
	}
	return strings.Join(lines, "\n")
}

// All returns every registered tool, sorted by name. The tools' route
// slices are copies; Description is dedented.
func (r *Registry[C]) All() []tool.Tool[C] {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]tool.Tool[C], len(r.sorted))
	for i, e := range r.sorted {
		out[i] = e.copyTool()
	}
	return out
}

// Lookup returns the tool named name, and whether there is one. Its
// route slice is a copy; Description is dedented.
func (r *Registry[C]) Lookup(name string) (tool.Tool[C], bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.entries[name]
	if !ok {
		return tool.Tool[C]{}, false
	}
	return e.copyTool(), true
}

// copyTool returns e's tool with copies of its slices and deprecation.
func (e *entry[C]) copyTool() tool.Tool[C] {
	t := e.tool
	t.VisibilityRoutes = slices.Clone(t.VisibilityRoutes)
	t.Deprecated, t.Tags, t.Icons = ownLifecycle(t.Deprecated, t.Tags, t.Icons)
	if t.Cache != nil {
		c := *t.Cache
		t.Cache = &c
	}
	return t
}

// ownLifecycle returns copies of a declaration's lifecycle values, the
// tags sorted and the sunset reduced to its day (see
// [tool.Deprecation.Sunset]).
func ownLifecycle(d *tool.Deprecation, tags []string, icons []mcp.Icon) (*tool.Deprecation, []string, []mcp.Icon) {
	if d != nil {
		c := *d
		c.Reason = strings.TrimSpace(c.Reason)
		c.Sunset = lifecycle.SunsetDay(c.Sunset)
		d = &c
	}
	tags = slices.Clone(tags)
	slices.Sort(tags)
	if icons != nil {
		c := make([]mcp.Icon, len(icons))
		for i, ic := range icons {
			c[i] = ic
			c[i].Sizes = slices.Clone(ic.Sizes)
		}
		icons = c
	}
	return d, tags, icons
}

// AnnotationsFor returns the MCP annotations derived for the tool named
// name, or nil if there is none. The result is a fresh copy.
func (r *Registry[C]) AnnotationsFor(name string) *mcp.ToolAnnotations {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.entries[name]
	if !ok {
		return nil
	}
	return e.annotations()
}

// annotations returns a fresh copy of e's annotations.
func (e *entry[C]) annotations() *mcp.ToolAnnotations {
	a := *e.ann
	a.DestructiveHint = ptr(*e.ann.DestructiveHint)
	a.OpenWorldHint = ptr(*e.ann.OpenWorldHint)
	return &a
}

func ptr[T any](v T) *T { return &v }

// Calls returns every registered tool as the server and authz see it
// (name, service, routes, locality, input schema), sorted by name: the
// values every call's context carries (see [tool.CallFromContext]). They
// are shared: do not modify them.
func (r *Registry[C]) Calls() []*tool.Call {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*tool.Call, len(r.sorted))
	for i, e := range r.sorted {
		out[i] = e.call
	}
	return out
}

// ServiceKeys returns the distinct service keys the registered tools
// need, sorted. Local tools contribute none.
func (r *Registry[C]) ServiceKeys() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var keys []string
	for _, e := range r.entries {
		if e.tool.ServiceKey != "" {
			keys = append(keys, e.tool.ServiceKey)
		}
	}
	sort.Strings(keys)
	return slices.Compact(keys)
}

// Install adds every registered tool to s, served with deps, for a bare
// *mcp.Server: it is [Registry.AddTools] and a receiving middleware that
// begins each call of these tools (the call's context carries the tool's
// [tool.Call] and, when the client sent a progress token, the state
// [tool.Progress] needs, shared by every run of the handler in the call)
// and logs a panicking handler's panic, with its stack, to
// [slog.Default]. The client sees the generic isError result the
// handler's own recovery answers with (see tool.Handle), and one bad
// tool never takes the process down.
//
// Under server.New use server.Install, which calls AddTools: the
// server's chain begins and logs every call, and a call is begun once,
// by the layer that owns it.
//
// A registry may be installed on several servers. Register panics after
// the first Install.
//
// Install panics if a tool is deprecated in favour of a tool the
// registry does not have.
func (r *Registry[C]) Install(s *mcp.Server, deps C) {
	r.mu.RLock()
	for _, e := range r.sorted {
		if d := e.tool.Deprecated; d != nil && d.Successor != "" && r.entries[d.Successor] == nil {
			r.mu.RUnlock()
			panic(fmt.Sprintf("registry: tool %q (registered at %s): Deprecated.Successor %q is no tool of the registry", e.tool.Name, e.site, d.Successor))
		}
	}
	r.mu.RUnlock()
	s.AddReceivingMiddleware(callMiddleware(r.add(s, deps)))
}

// AddTools adds every registered tool to s, served with deps, and
// nothing else: for a server whose own middleware begins each call (see
// [Registry.Install]), as server.New's does. Each tool's MCP definition
// is built here, centrally: name, title, dedented description,
// annotations derived from its behaviour, both schemas reflected from
// its handler's types ([tool.Handler.AddTo]), its icons, and its
// lifecycle: a deprecated tool's description begins with one fixed
// paragraph,
//
//	DEPRECATED: REASON. Use SUCCESSOR instead. Sunset: YYYY-MM-DD.
//
// (each of the last two sentences only when declared), and its _meta
// holds "io.github.toolroute/lifecycle": {"version", "tags",
// "deprecated": {"reason", "successor", "sunset"}}, each only when
// declared. server.New leaves the successor out for a caller who
// cannot see it, and refuses a successor that is not one of its tools;
// Install refuses one that is not one of the registry's.
//
// Register panics after the first AddTools.
func (r *Registry[C]) AddTools(s *mcp.Server, deps C) { r.add(s, deps) }

// add adds the registered tools to s, and returns what every call of
// each shares, by name.
func (r *Registry[C]) add(s *mcp.Server, deps C) map[string]*call.Tool[tool.Call] {
	r.mu.Lock()
	r.installed = true
	entries := slices.Clone(r.sorted)
	r.mu.Unlock()
	tools := make(map[string]*call.Tool[tool.Call], len(entries))
	for _, e := range entries {
		tools[e.tool.Name] = &call.Tool[tool.Call]{Info: e.call}
		_, _, icons := ownLifecycle(nil, nil, e.tool.Icons)
		t := &mcp.Tool{
			Meta:        joinMeta(lifecycle.Meta(e.tool.Version, e.tool.Tags, e.tool.Deprecated, true), taskMeta(e.call)),
			Name:        e.tool.Name,
			Title:       e.tool.Title,
			Description: lifecycle.Describe(e.tool.Description, e.tool.Deprecated, true),
			Annotations: e.annotations(),
			Icons:       icons,
		}
		e.tool.Handler.AddTo(s, t, deps)
	}
	return tools
}

// callMiddleware is Install's receiving middleware for the calls of
// tools (see [Registry.Install]). It recovers nothing: the handler's own
// boundary answers a panic in its work (see tool.Handle), and the
// SDK's work around it is the server's to guard (server.New's chain
// does).
func callMiddleware(tools map[string]*call.Tool[tool.Call]) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			cr, ok := req.(*mcp.CallToolRequest)
			if method != "tools/call" || !ok || cr.Params == nil {
				return next(ctx, method, req)
			}
			t := tools[cr.Params.Name]
			if t == nil {
				return next(ctx, method, req)
			}
			ctx, end := call.Begin(ctx, t, cr)
			defer end()
			res, err := next(ctx, method, cr)
			if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError {
				var pe *PanicError
				if errors.As(r.GetError(), &pe) {
					slog.Default().ErrorContext(ctx, "toolroute: tool handler panicked",
						slog.String("tool", cr.Params.Name),
						slog.Any("panic", pe.Value),
						slog.String("stack", string(pe.Stack)))
				}
			}
			return res, err
		}
	}
}

// PanicError is the error a panicking call ends with: Tool names the tool
// ("" when the server reports a panic outside a tool call), Value is what
// was panicked with, Stack the stack where it panicked. Its message is
// generic: the panic value stays in the server's log.
type PanicError = call.PanicError
