package vet

import (
	"errors"
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/inspector"
	"golang.org/x/tools/go/types/typeutil"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/core/rules"
	"github.com/toolroute/toolroute/internal/core/schema"
	"github.com/toolroute/toolroute/tool"
)

const (
	registryPath = "github.com/toolroute/toolroute/registry"
	toolPath     = "github.com/toolroute/toolroute/tool"
	upstreamPath = "github.com/toolroute/toolroute/upstream"
)

// Analyzer reports the tool declarations registry.Registry.Register would
// refuse, from what the source shows of them. See the package doc.
var Analyzer = &analysis.Analyzer{
	Name:      "toolroutevet",
	Doc:       "check toolroute tool declarations against the registry's rules\n\nEvery Register(tool.Tool[C]{...}) call on a *registry.Registry[C] is held to the rules Registry.Check applies at run time, as far as its values are constants.",
	URL:       "https://pkg.go.dev/github.com/toolroute/toolroute/registry/vet",
	Requires:  []*analysis.Analyzer{inspect.Analyzer},
	FactTypes: []analysis.Fact{new(routeFact), new(routeFuncFact)},
	Run:       run,
}

// routeFact is the value of a package-level tool.Route variable whose
// initializer is known.
type routeFact struct{ URI, Method string }

func (*routeFact) AFact() {}

func (f *routeFact) String() string { return "route " + f.Method + " " + f.URI }

// routeFuncFact is what a package-level function of string parameters
// returns as a tool.Route, when its body is one return of a route the
// analyzer knows but for the parameters: URI and Method hold
// [paramMark]s where a parameter's value goes.
type routeFuncFact struct{ URI, Method string }

func (*routeFuncFact) AFact() {}

func (f *routeFuncFact) String() string {
	show := func(s string) string { return paramMarks.ReplaceAllString(s, "$$$1") }
	return "route func " + show(f.Method) + " " + show(f.URI)
}

// paramMark is the placeholder of parameter i in a [routeFuncFact].
func paramMark(i int) string { return fmt.Sprintf("\x00param%d\x00", i) }

var paramMarks = regexp.MustCompile("\x00param([0-9]+)\x00")

// checker holds one pass's state.
type checker struct {
	pass  *analysis.Pass
	funcs map[*types.Func]*ast.FuncDecl // of this package
	vars  map[*types.Var]ast.Expr       // package-level, with an initializer of their own
	memo  map[*types.Var]*routeVal      // nil value: not known
	busy  map[*types.Var]bool           // being evaluated (a cycle is not known)
	// written holds the objects the package assigns or takes the
	// address of; nil until [checker.assigned] needs it.
	written map[types.Object]bool
}

// routeVal is a route the source shows, and where its method was
// written as a literal (for a suggested fix), if it was.
type routeVal struct {
	route     tool.Route
	methodLit *ast.BasicLit
}

func run(pass *analysis.Pass) (any, error) {
	c := &checker{
		pass:  pass,
		funcs: map[*types.Func]*ast.FuncDecl{},
		vars:  map[*types.Var]ast.Expr{},
		memo:  map[*types.Var]*routeVal{},
		busy:  map[*types.Var]bool{},
	}
	for _, f := range pass.Files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if fn, ok := pass.TypesInfo.Defs[d.Name].(*types.Func); ok && d.Body != nil {
					c.funcs[fn] = d
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					vs, ok := spec.(*ast.ValueSpec)
					if !ok || len(vs.Values) != len(vs.Names) {
						continue
					}
					for i, name := range vs.Names {
						if v, ok := pass.TypesInfo.Defs[name].(*types.Var); ok {
							c.vars[v] = vs.Values[i]
						}
					}
				}
			}
		}
	}
	// Export the known routes of the package's variables, for the
	// packages that import it.
	for v := range c.vars {
		if !isRoute(v.Type()) {
			continue
		}
		if rv := c.varRoute(v); rv != nil {
			pass.ExportObjectFact(v, &routeFact{URI: rv.route.URI, Method: rv.route.Method})
		}
	}

	// Export what the package's route constructors return, for the
	// packages that call them.
	for fn, decl := range c.funcs {
		if f := c.routeFunc(fn, decl); f != nil {
			pass.ExportObjectFact(fn, f)
		}
	}

	var regs []*registration
	ins := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	ins.WithStack([]ast.Node{(*ast.CallExpr)(nil)}, func(n ast.Node, push bool, stack []ast.Node) bool {
		if !push {
			return true
		}
		call := n.(*ast.CallExpr)
		if !isRegister(pass.TypesInfo, call) || len(call.Args) != 1 {
			return true
		}
		lit, ok := ast.Unparen(call.Args[0]).(*ast.CompositeLit)
		if !ok {
			return true
		}
		regs = append(regs, c.registration(call, lit, inInit(stack)))
		return true
	})

	// A name registered twice on one package-level registry by
	// statements of init functions: both calls run, and the second
	// panics.
	type nameKey struct {
		reg  types.Object
		name string
	}
	first := map[nameKey]*registration{}
	for _, r := range regs {
		if r.registry == nil || !r.inInit || !r.decl.Known(rules.Name) {
			continue
		}
		k := nameKey{r.registry, r.decl.Name}
		if f, ok := first[k]; ok {
			r.decl.FirstSite, r.first = c.site(f.call.Pos()), f.call
			n := f.node(rules.Name, -1)
			pass.Report(analysis.Diagnostic{
				Pos:     n.Pos(),
				End:     n.End(),
				Message: fmt.Sprintf("duplicate tool name, registered again at %s", c.site(r.call.Pos())),
				Related: []analysis.RelatedInformation{{Pos: r.call.Pos(), End: r.call.End(), Message: "registered again here"}},
			})
			continue
		}
		first[k] = r
	}
	for _, r := range regs {
		rules.Check(&r.decl, func(p rules.Problem) { c.report(r, p) })
	}
	return nil, nil
}

// site is pos as FILE:LINE, the file's base name (a package's files
// share their directory).
func (c *checker) site(pos token.Pos) string {
	p := c.pass.Fset.Position(pos)
	return fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)
}

// registration is one Register call and what it declares.
type registration struct {
	call     *ast.CallExpr
	lit      *ast.CompositeLit
	registry types.Object // the package-level variable Register is called on; nil if another expression
	inInit   bool         // the call is a statement of an init function's body
	decl     rules.Decl
	fields   map[rules.Field]ast.Node
	elems    map[rules.Field][]ast.Expr // the elements of a list's literal: VisibilityRoutes, Tags, Icons
	methods  []*ast.BasicLit            // the literal method of each route, or nil
	first    *ast.CallExpr              // the first registration of the same name, if this is another
}

// node returns the node to report a problem of field f at: its element
// i if i >= 0, else the field's key-value element (for a field of a
// field, such as Deprecated.Reason, the outer field's when the inner one
// is not written), or the literal when the field is missing.
func (r *registration) node(f rules.Field, i int) ast.Node {
	if es := r.elems[f]; i >= 0 && i < len(es) {
		return es[i]
	}
	for ; f != 0; f = outer[f] {
		if n, ok := r.fields[f]; ok {
			return n
		}
	}
	return r.lit
}

// outer is the field a field of a field is written in.
var outer = map[rules.Field]rules.Field{
	rules.DeprecatedReason:    rules.Deprecated,
	rules.DeprecatedSuccessor: rules.Deprecated,
	rules.CacheTTL:            rules.Cache,
	rules.CacheStaleOnError:   rules.Cache,
}

// report reports p at its field of r, with the fix of a method written
// in lower case where the method is a literal.
func (c *checker) report(r *registration, p rules.Problem) {
	n := r.node(p.Field, p.Index)
	d := analysis.Diagnostic{Pos: n.Pos(), End: n.End(), Message: p.Text}
	if r.first != nil && p.Text == rules.DuplicateName(r.decl.FirstSite) {
		d.Related = []analysis.RelatedInformation{{Pos: r.first.Pos(), End: r.first.End(), Message: "first registered here"}}
	}
	if p.Field == rules.Routes && p.Index >= 0 && p.Index < len(r.methods) {
		if lit := r.methods[p.Index]; lit != nil {
			m := r.decl.Routes[p.Index].Method
			if up := strings.ToUpper(m); up != m && isMethod(up) && strings.Contains(p.Text, "upper-case HTTP method") {
				d.SuggestedFixes = []analysis.SuggestedFix{{
					Message:   fmt.Sprintf("write the method as %q", up),
					TextEdits: []analysis.TextEdit{{Pos: lit.Pos(), End: lit.End(), NewText: []byte(fmt.Sprintf("%q", up))}},
				}}
			}
		}
	}
	c.pass.Report(d)
}

// isMethod reports whether m is an HTTP method a route may name.
func isMethod(m string) bool {
	return tool.Route{URI: "/x/y", Method: m}.Validate() == nil
}

// registration reads the declaration lit of a Register call.
func (c *checker) registration(call *ast.CallExpr, lit *ast.CompositeLit, inInit bool) *registration {
	info := c.pass.TypesInfo
	r := &registration{call: call, lit: lit, inInit: inInit, fields: map[rules.Field]ast.Node{}, elems: map[rules.Field][]ast.Expr{}}
	if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok {
		var id *ast.Ident
		switch x := ast.Unparen(sel.X).(type) {
		case *ast.Ident:
			id = x
		case *ast.SelectorExpr:
			id = x.Sel
		}
		if id != nil {
			if v, ok := info.Uses[id].(*types.Var); ok && v.Pkg() != nil && v.Parent() == v.Pkg().Scope() {
				r.registry = v
			}
		}
	}
	d := &r.decl
	d.Handler = rules.ErrMissingHandler // a missing field is the zero value
	keyed := map[string]ast.Expr{}
	for _, elt := range lit.Elts {
		kv, ok := elt.(*ast.KeyValueExpr)
		if !ok {
			// An unkeyed Tool literal: know nothing.
			d.Unknown = rules.All
			return r
		}
		if id, ok := kv.Key.(*ast.Ident); ok {
			keyed[id.Name] = kv.Value
			if f, ok := fieldOf[id.Name]; ok {
				r.fields[f] = kv
			}
		}
	}
	str := func(name string, f rules.Field, dst *string) {
		e, ok := keyed[name]
		if !ok {
			return
		}
		if s, _, ok := c.evalString(e, nil); ok {
			*dst = s
		} else {
			d.Unknown |= f
		}
	}
	str("Name", rules.Name, &d.Name)
	str("Description", rules.Description, &d.Description)
	str("ServiceKey", rules.ServiceKey, &d.ServiceKey)
	str("Version", rules.Version, &d.Version)
	if e, ok := keyed["Local"]; ok {
		if tv := info.Types[e]; tv.Value != nil && tv.Value.Kind() == constant.Bool {
			d.Local = constant.BoolVal(tv.Value)
		} else {
			d.Unknown |= rules.Local
		}
	}
	if e, ok := keyed["Behaviour"]; ok {
		if tv := info.Types[e]; tv.Value != nil && tv.Value.Kind() == constant.Int {
			if b, exact := constant.Int64Val(tv.Value); exact {
				d.Behaviour = behaviour.Behaviour(b)
			} else {
				d.Unknown |= rules.Behaviour
			}
		} else {
			d.Unknown |= rules.Behaviour
		}
	}
	if e, ok := keyed["VisibilityRoutes"]; ok {
		c.routes(r, e)
	}
	if e, ok := keyed["Handler"]; ok {
		known, err := c.handler(e)
		if !known {
			d.Unknown |= rules.Handler
		}
		d.Handler = err
		sends, known := c.sends(e)
		if !known {
			d.Unknown |= rules.Sends
		}
		d.Sends = sends
	}
	c.lifecycle(r, keyed)
	return r
}

var fieldOf = map[string]rules.Field{
	"Name":             rules.Name,
	"Description":      rules.Description,
	"ServiceKey":       rules.ServiceKey,
	"VisibilityRoutes": rules.Routes,
	"Local":            rules.Local,
	"Behaviour":        rules.Behaviour,
	"Handler":          rules.Handler,
	"Task":             rules.Task,
	"TaskAfter":        rules.TaskAfter,
	"Deprecated":       rules.Deprecated,
	"Version":          rules.Version,
	"Tags":             rules.Tags,
	"Icons":            rules.Icons,
	"Cache":            rules.Cache,
}

// routes reads the VisibilityRoutes value e.
func (c *checker) routes(r *registration, e ast.Expr) {
	d := &r.decl
	e = ast.Unparen(e)
	if id, ok := e.(*ast.Ident); ok && c.pass.TypesInfo.Uses[id] == types.Universe.Lookup("nil") {
		return
	}
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		d.Unknown |= rules.Routes
		return
	}
	if _, ok := c.pass.TypesInfo.TypeOf(lit).Underlying().(*types.Slice); !ok {
		d.Unknown |= rules.Routes
		return
	}
	for _, elt := range lit.Elts {
		if _, ok := elt.(*ast.KeyValueExpr); ok { // an indexed element: know nothing
			d.Unknown |= rules.Routes
			d.Routes, d.RouteUnknown, r.methods = nil, nil, nil
			delete(r.elems, rules.Routes)
			return
		}
		rv := c.evalRoute(elt, nil, 0)
		r.elems[rules.Routes] = append(r.elems[rules.Routes], elt)
		if rv == nil {
			d.Routes = append(d.Routes, tool.Route{})
			d.RouteUnknown = append(d.RouteUnknown, true)
			r.methods = append(r.methods, nil)
			continue
		}
		d.Routes = append(d.Routes, rv.route)
		d.RouteUnknown = append(d.RouteUnknown, false)
		r.methods = append(r.methods, rv.methodLit)
	}
	if !slices.Contains(d.RouteUnknown, true) {
		d.RouteUnknown = nil
	}
}

// env binds a function's parameters to the values of a call's
// arguments, while a function's body is evaluated.
type env map[*types.Var]strVal

type strVal struct {
	s   string
	lit *ast.BasicLit // the literal the value was written as, if it was
}

// evalString returns the value of the string expression e, if known.
func (c *checker) evalString(e ast.Expr, en env) (string, *ast.BasicLit, bool) {
	e = ast.Unparen(e)
	if tv, ok := c.pass.TypesInfo.Types[e]; ok && tv.Value != nil {
		if tv.Value.Kind() != constant.String {
			return "", nil, false
		}
		lit, _ := e.(*ast.BasicLit)
		return constant.StringVal(tv.Value), lit, true
	}
	switch e := e.(type) {
	case *ast.Ident:
		if v, ok := c.pass.TypesInfo.Uses[e].(*types.Var); ok {
			if sv, ok := en[v]; ok {
				return sv.s, sv.lit, true
			}
		}
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			x, _, okx := c.evalString(e.X, en)
			y, _, oky := c.evalString(e.Y, en)
			if okx && oky {
				return x + y, nil, true
			}
		}
	}
	return "", nil, false
}

// maxDepth bounds the calls evalRoute follows.
const maxDepth = 4

// evalRoute returns the route e evaluates to, if known.
func (c *checker) evalRoute(e ast.Expr, en env, depth int) *routeVal {
	info := c.pass.TypesInfo
	e = ast.Unparen(e)
	if !isRoute(info.TypeOf(e)) {
		return nil
	}
	switch e := e.(type) {
	case *ast.CompositeLit:
		var rv routeVal
		for i, elt := range e.Elts {
			var key string
			val := elt
			if kv, ok := elt.(*ast.KeyValueExpr); ok {
				id, ok := kv.Key.(*ast.Ident)
				if !ok {
					return nil
				}
				key, val = id.Name, kv.Value
			} else if len(e.Elts) == 2 {
				key = [...]string{"URI", "Method"}[i]
			} else {
				return nil
			}
			s, lit, ok := c.evalString(val, en)
			if !ok {
				return nil
			}
			switch key {
			case "URI":
				rv.route.URI = s
			case "Method":
				rv.route.Method, rv.methodLit = s, lit
			}
		}
		return &rv
	case *ast.CallExpr:
		fn, ok := typeutil.Callee(info, e).(*types.Func)
		if !ok || depth >= maxDepth {
			return nil
		}
		if fn.Pkg() != nil && fn.Pkg().Path() == toolPath && fn.Name() == "ServiceRoute" && len(e.Args) == 3 {
			var v [3]strVal
			for i, a := range e.Args {
				s, lit, ok := c.evalString(a, en)
				if !ok {
					return nil
				}
				v[i] = strVal{s, lit}
			}
			return &routeVal{route: tool.ServiceRoute(v[0].s, v[1].s, v[2].s), methodLit: v[1].lit}
		}
		decl := c.funcs[fn]
		if decl == nil {
			var f routeFuncFact
			if fn.Pkg() == c.pass.Pkg || !c.pass.ImportObjectFact(fn, &f) {
				return nil
			}
			return c.applyRouteFunc(&f, e.Args, en)
		}
		if decl.Recv != nil || decl.Type.TypeParams != nil || len(decl.Body.List) != 1 {
			return nil
		}
		ret, ok := decl.Body.List[0].(*ast.ReturnStmt)
		if !ok || len(ret.Results) != 1 {
			return nil
		}
		sig := fn.Signature()
		if sig.Variadic() || sig.Params().Len() != len(e.Args) {
			return nil
		}
		inner := env{}
		for i := range sig.Params().Len() {
			s, lit, ok := c.evalString(e.Args[i], en)
			if !ok {
				continue // a parameter the body may not read
			}
			inner[sig.Params().At(i)] = strVal{s, lit}
		}
		return c.evalRoute(ret.Results[0], inner, depth+1)
	case *ast.Ident:
		if v, ok := info.Uses[e].(*types.Var); ok {
			return c.globalRoute(v)
		}
	case *ast.SelectorExpr:
		if v, ok := info.Uses[e.Sel].(*types.Var); ok {
			return c.globalRoute(v)
		}
	}
	return nil
}

// routeFunc returns what fn, exported, of string parameters only,
// returns as a route, if its body shows it.
func (c *checker) routeFunc(fn *types.Func, decl *ast.FuncDecl) *routeFuncFact {
	sig := fn.Signature()
	if !fn.Exported() || decl.Recv != nil || decl.Type.TypeParams != nil || sig.Variadic() ||
		sig.Results().Len() != 1 || !isRoute(sig.Results().At(0).Type()) || len(decl.Body.List) != 1 {
		return nil
	}
	ret, ok := decl.Body.List[0].(*ast.ReturnStmt)
	if !ok || len(ret.Results) != 1 {
		return nil
	}
	en := env{}
	for i := range sig.Params().Len() {
		p := sig.Params().At(i)
		if b, ok := p.Type().Underlying().(*types.Basic); !ok || b.Kind() != types.String {
			return nil
		}
		en[p] = strVal{s: paramMark(i)}
	}
	rv := c.evalRoute(ret.Results[0], en, 1)
	if rv == nil {
		return nil
	}
	return &routeFuncFact{URI: rv.route.URI, Method: rv.route.Method}
}

// applyRouteFunc returns the route a call of a function of fact f with
// args returns, if the arguments it reads are known.
func (c *checker) applyRouteFunc(f *routeFuncFact, args []ast.Expr, en env) *routeVal {
	known := true
	var lits []*ast.BasicLit
	fill := func(s string) string {
		return paramMarks.ReplaceAllStringFunc(s, func(m string) string {
			i, _ := strconv.Atoi(paramMarks.FindStringSubmatch(m)[1])
			if i >= len(args) {
				known = false
				return ""
			}
			v, lit, ok := c.evalString(args[i], en)
			if !ok {
				known = false
			}
			lits = append(lits, lit)
			return v
		})
	}
	rv := &routeVal{route: tool.Route{URI: fill(f.URI)}}
	lits = nil
	rv.route.Method = fill(f.Method)
	if len(lits) == 1 && paramMarks.MatchString(f.Method) && paramMarks.FindString(f.Method) == f.Method {
		rv.methodLit = lits[0]
	}
	if !known {
		return nil
	}
	return rv
}

// globalRoute returns the route of the package-level variable v, if known.
func (c *checker) globalRoute(v *types.Var) *routeVal {
	if v.Pkg() == nil || v.Parent() != v.Pkg().Scope() {
		return nil
	}
	if v.Pkg() == c.pass.Pkg {
		return c.varRoute(v)
	}
	var f routeFact
	if c.pass.ImportObjectFact(v, &f) {
		return &routeVal{route: tool.Route{URI: f.URI, Method: f.Method}}
	}
	return nil
}

// varRoute returns the route of the package-level variable v of this
// package, if its initializer shows it and nothing in the package
// assigns it otherwise.
func (c *checker) varRoute(v *types.Var) *routeVal {
	if rv, ok := c.memo[v]; ok {
		return rv
	}
	e, ok := c.vars[v]
	if !ok || c.busy[v] {
		return nil
	}
	c.busy[v] = true
	rv := c.evalRoute(e, nil, 0)
	delete(c.busy, v)
	if rv != nil && c.assigned(v) {
		rv = nil
	}
	c.memo[v] = rv
	return rv
}

// assigned reports whether the package assigns v or takes its address
// anywhere (so its value may not be its initializer's).
func (c *checker) assigned(v *types.Var) bool {
	if c.written == nil {
		c.written = map[types.Object]bool{}
		for _, f := range c.pass.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.AssignStmt:
					for _, l := range n.Lhs {
						if v := c.writtenVar(l); v != nil {
							c.written[v] = true
						}
					}
				case *ast.UnaryExpr:
					if v := c.writtenVar(n.X); v != nil && n.Op == token.AND {
						c.written[v] = true
					}
				}
				return true
			})
		}
	}
	return c.written[v]
}

// writtenVar returns the variable an assignment to e writes (to it or to
// a part of it), if e is one or a part of one: X for X, X.URI, X.f[i],
// pkg.X.
func (c *checker) writtenVar(e ast.Expr) types.Object {
	for {
		switch x := ast.Unparen(e).(type) {
		case *ast.Ident:
			return c.pass.TypesInfo.Uses[x]
		case *ast.SelectorExpr:
			if v, ok := c.pass.TypesInfo.Uses[x.Sel].(*types.Var); ok && !v.IsField() {
				return v // pkg.X
			}
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		default:
			return nil
		}
	}
}

// handler reads the Handler value e: whether it is known, and what is
// wrong with it (nil if nothing).
func (c *checker) handler(e ast.Expr) (known bool, err error) {
	info := c.pass.TypesInfo
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		if lit, ok := ast.Unparen(e).(*ast.CompositeLit); ok && len(lit.Elts) == 0 {
			return true, rules.ErrMissingHandler // tool.Handler[C]{}
		}
		return false, nil
	}
	fn, ok := typeutil.Callee(info, call).(*types.Func)
	forward := ok && isForward(fn)
	if !ok || !forward && (fn.Pkg() == nil || fn.Pkg().Path() != toolPath || (fn.Name() != "Handle" && fn.Name() != "HandleResult")) || len(call.Args) != 1 {
		return false, nil
	}
	if id, ok := ast.Unparen(call.Args[0]).(*ast.Ident); ok && !forward && info.Uses[id] == types.Universe.Lookup("nil") {
		return true, rules.ErrMissingHandler
	}
	var fid *ast.Ident
	switch f := ast.Unparen(call.Fun).(type) {
	case *ast.SelectorExpr:
		fid = f.Sel
	case *ast.IndexExpr:
		fid = selIdent(f.X)
	case *ast.IndexListExpr:
		fid = selIdent(f.X)
	case *ast.Ident:
		fid = f
	}
	if fid == nil {
		return false, nil
	}
	inst, ok := info.Instances[fid]
	if !ok || inst.TypeArgs.Len() < 2 {
		return false, nil
	}
	var errs []error
	allKnown := true
	check := func(what string, t types.Type) {
		ok, err := objectType(what, t)
		if !ok {
			allKnown = false
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	check("input", inst.TypeArgs.At(1))
	if (fn.Name() == "Handle" || forward) && inst.TypeArgs.Len() >= 3 {
		check("output", inst.TypeArgs.At(2))
	}
	if len(errs) == 0 {
		// Forward's checks of its route and In are its own, at run time.
		return allKnown && !forward, nil
	}
	// What is found is wrong, whatever the rest is; the registry joins
	// the input's and the output's problems as errors.Join does.
	return true, errors.Join(errs...)
}

// sends reads the routes the Handler value e declares it sends on
// (tool.Handler.Sends): none for tool.Handle and tool.HandleResult, the
// route argument of upstream.Forward if known. known is false for any
// other handler, made elsewhere.
func (c *checker) sends(e ast.Expr) (routes []tool.Route, known bool) {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		lit, ok := ast.Unparen(e).(*ast.CompositeLit)
		return nil, ok && len(lit.Elts) == 0 // tool.Handler[C]{}
	}
	fn, ok := typeutil.Callee(c.pass.TypesInfo, call).(*types.Func)
	switch {
	case !ok || len(call.Args) != 1:
		return nil, false
	case fn.Pkg() != nil && fn.Pkg().Path() == toolPath && (fn.Name() == "Handle" || fn.Name() == "HandleResult"):
		return nil, true
	case isForward(fn):
		if rv := c.evalRoute(call.Args[0], nil, 0); rv != nil {
			return []tool.Route{rv.route}, true
		}
	}
	return nil, false
}

// isForward reports whether fn is upstream.Forward.
func isForward(fn *types.Func) bool {
	return fn.Pkg() != nil && fn.Pkg().Path() == upstreamPath && fn.Name() == "Forward"
}

func selIdent(e ast.Expr) *ast.Ident {
	switch e := ast.Unparen(e).(type) {
	case *ast.SelectorExpr:
		return e.Sel
	case *ast.Ident:
		return e
	}
	return nil
}

// objectType reports whether the schema kind of t, as tool.Handle's In
// or Out (what "input" or "output"), is known, and if it is known not
// to be an object, the error tool.Handle gives for it. Structs and maps
// and pointers to them are objects; a basic type, a slice or array, an
// interface is not, unless it has methods (a marshaler may give it any
// schema: not known).
func objectType(what string, t types.Type) (known bool, err error) {
	name := func(t types.Type) string {
		return types.TypeString(t, func(p *types.Package) string { return p.Name() })
	}
	spelled := t
	t = types.Unalias(t)
	for {
		p, ok := t.Underlying().(*types.Pointer)
		if !ok {
			break
		}
		if hasMethods(t) {
			return false, nil
		}
		t = types.Unalias(p.Elem())
	}
	if n, ok := t.(*types.Named); ok && n.TypeArgs().Len() > 0 {
		return false, nil // reflect spells instances with package paths
	}
	if _, ok := t.(*types.TypeParam); ok {
		return false, nil
	}
	switch u := t.Underlying().(type) {
	case *types.Struct, *types.Map:
		return true, nil
	case *types.Interface:
		switch {
		case u.Empty() && !isNamed(t):
			return true, schema.Interface(what, "interface {}")
		case isNamed(t):
			return true, schema.Interface(what, name(t))
		}
		return false, nil // reflect spells an interface literal its own way
	}
	if hasMethods(t) {
		return false, nil
	}
	var kind string
	switch u := t.Underlying().(type) {
	case *types.Basic:
		switch {
		case u.Info()&types.IsBoolean != 0:
			kind = "boolean"
		case u.Info()&types.IsInteger != 0 && u.Kind() != types.Uintptr:
			kind = "integer"
		case u.Info()&types.IsFloat != 0:
			kind = "number"
		case u.Info()&types.IsString != 0:
			kind = "string"
		default:
			return false, nil
		}
	case *types.Slice:
		kind = "array"
		if b, ok := u.Elem().Underlying().(*types.Basic); ok && b.Kind() == types.Uint8 {
			kind = "string"
		}
	case *types.Array:
		if b, ok := u.Elem().Underlying().(*types.Basic); ok && b.Kind() == types.Uint8 {
			return false, nil
		}
		kind = "array"
	default:
		return false, nil
	}
	if strings.Contains(name(spelled), "[") && !isListSpelling(spelled) {
		return false, nil
	}
	return true, schema.NotObject(what, name(types.Unalias(spelled)), kind)
}

// isListSpelling reports whether t's spelling has brackets only as a
// slice's or array's, not a type argument list's.
func isListSpelling(t types.Type) bool {
	for {
		switch u := types.Unalias(t).(type) {
		case *types.Slice:
			t = u.Elem()
		case *types.Array:
			t = u.Elem()
		case *types.Pointer:
			t = u.Elem()
		case *types.Named:
			return u.TypeArgs().Len() == 0
		default:
			return true
		}
	}
}

func isNamed(t types.Type) bool {
	_, ok := types.Unalias(t).(*types.Named)
	return ok
}

// hasMethods reports whether t or *t has methods.
func hasMethods(t types.Type) bool {
	if _, ok := t.Underlying().(*types.Interface); ok {
		return false
	}
	return types.NewMethodSet(t).Len() > 0 || types.NewMethodSet(types.NewPointer(t)).Len() > 0
}

// isRegister reports whether call calls the Register method of a
// registry.Registry.
func isRegister(info *types.Info, call *ast.CallExpr) bool {
	fn, ok := typeutil.Callee(info, call).(*types.Func)
	if !ok || fn.Name() != "Register" || fn.Pkg() == nil || fn.Pkg().Path() != registryPath {
		return false
	}
	recv := fn.Origin().Signature().Recv()
	if recv == nil {
		return false
	}
	t := recv.Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := t.(*types.Named)
	return ok && n.Obj().Name() == "Registry"
}

// isRoute reports whether t is tool.Route.
func isRoute(t types.Type) bool {
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Name() == "Route" && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == toolPath
}

// inInit reports whether the call at the top of stack is a statement of
// its own in the body of a package's init function (not in a branch, a
// loop or a function literal): a call that runs, once, whenever the
// package is initialized.
func inInit(stack []ast.Node) bool {
	n := len(stack)
	if n < 4 {
		return false
	}
	_, stmt := stack[n-2].(*ast.ExprStmt)
	fn, ok := stack[n-4].(*ast.FuncDecl)
	return stmt && ok && stack[n-3] == fn.Body && fn.Recv == nil && fn.Name.Name == "init"
}
