package vet

import (
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/core/rules"
	"github.com/toolroute/toolroute/tool"
)

// lifecycle reads a declaration's task setting, lifecycle and result
// caching from the keyed values of its literal.
func (c *checker) lifecycle(r *registration, keyed map[string]ast.Expr) {
	d := &r.decl
	if e, ok := keyed["Task"]; ok {
		if v, ok := c.intConst(e); ok {
			d.Task = tool.TaskMode(v)
		} else {
			d.Unknown |= rules.Task
		}
	}
	if e, ok := keyed["TaskAfter"]; ok {
		if v, ok := c.intConst(e); ok {
			d.TaskAfter = time.Duration(v)
		} else {
			d.Unknown |= rules.TaskAfter
		}
	}
	if e, ok := keyed["Deprecated"]; ok {
		c.deprecated(r, e)
	}
	if e, ok := keyed["Tags"]; ok {
		c.tags(r, e)
	}
	if e, ok := keyed["Icons"]; ok {
		c.icons(r, e)
	}
	if e, ok := keyed["Cache"]; ok {
		c.cache(r, e)
	}
}

// intConst returns the value of the integer constant e, if it is one.
func (c *checker) intConst(e ast.Expr) (int64, bool) {
	tv := c.pass.TypesInfo.Types[e]
	if tv.Value == nil || tv.Value.Kind() != constant.Int {
		return 0, false
	}
	return constant.Int64Val(tv.Value)
}

// isNil reports whether e is the predeclared nil.
func (c *checker) isNil(e ast.Expr) bool {
	id, ok := ast.Unparen(e).(*ast.Ident)
	return ok && c.pass.TypesInfo.Uses[id] == types.Universe.Lookup("nil")
}

// pointed reads the value e of the pointer field f: nil (false:
// nothing more to read), or &T{...}, T the type of package tool named
// name, with keyed fields (true, and its elements by their fields'
// names); any other expression leaves f unknown (false).
func (c *checker) pointed(r *registration, e ast.Expr, f rules.Field, name string) (map[string]*ast.KeyValueExpr, bool) {
	if c.isNil(e) {
		return nil, false
	}
	if u, ok := ast.Unparen(e).(*ast.UnaryExpr); ok && u.Op == token.AND {
		if lit, ok := ast.Unparen(u.X).(*ast.CompositeLit); ok && isToolType(c.pass.TypesInfo.TypeOf(lit), name) {
			if kvs, ok := keyedElts(lit); ok {
				return kvs, true
			}
		}
	}
	r.decl.Unknown |= f
	return nil, false
}

// keyedElts returns the elements of lit by their fields' names; ok is
// false if one is not keyed by a name.
func keyedElts(lit *ast.CompositeLit) (map[string]*ast.KeyValueExpr, bool) {
	kvs := map[string]*ast.KeyValueExpr{}
	for _, elt := range lit.Elts {
		kv, ok := elt.(*ast.KeyValueExpr)
		if !ok {
			return nil, false
		}
		id, ok := kv.Key.(*ast.Ident)
		if !ok {
			return nil, false
		}
		kvs[id.Name] = kv
	}
	return kvs, true
}

// isToolType reports whether t is the type of package tool named name.
func isToolType(t types.Type, name string) bool {
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Name() == name && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == toolPath
}

// sub is a field of a field, read from its key-value element: set
// stores its value and reports whether it is known.
type sub struct {
	name  string
	field rules.Field
	set   func(ast.Expr) bool
}

// subs reads each of subs from kvs, the keyed elements of a literal: a
// field not written keeps its zero value, known; one whose value set
// cannot know is unknown.
func (c *checker) subs(r *registration, kvs map[string]*ast.KeyValueExpr, subs ...sub) {
	for _, s := range subs {
		kv, ok := kvs[s.name]
		if !ok {
			continue
		}
		r.fields[s.field] = kv
		if !s.set(kv.Value) {
			r.decl.Unknown |= s.field
		}
	}
}

// deprecated reads the Deprecated value e: nil, or &tool.Deprecation{...}
// whose Reason and Successor are known each when constant.
func (c *checker) deprecated(r *registration, e ast.Expr) {
	kvs, ok := c.pointed(r, e, rules.Deprecated, "Deprecation")
	if !ok {
		return
	}
	dep := &tool.Deprecation{}
	r.decl.Deprecated = dep
	c.subs(r, kvs,
		sub{"Reason", rules.DeprecatedReason, func(e ast.Expr) (ok bool) { dep.Reason, _, ok = c.evalString(e, nil); return ok }},
		sub{"Successor", rules.DeprecatedSuccessor, func(e ast.Expr) (ok bool) { dep.Successor, _, ok = c.evalString(e, nil); return ok }})
}

// cache reads the Cache value e: nil, or &tool.ResultCache{...} whose
// TTL and StaleOnError are known each when constant.
func (c *checker) cache(r *registration, e ast.Expr) {
	kvs, ok := c.pointed(r, e, rules.Cache, "ResultCache")
	if !ok {
		return
	}
	rc := &tool.ResultCache{}
	r.decl.Cache = rc
	duration := func(dst *time.Duration) func(ast.Expr) bool {
		return func(e ast.Expr) bool {
			v, ok := c.intConst(e)
			*dst = time.Duration(v)
			return ok
		}
	}
	c.subs(r, kvs, sub{"TTL", rules.CacheTTL, duration(&rc.TTL)}, sub{"StaleOnError", rules.CacheStaleOnError, duration(&rc.StaleOnError)})
}

// sliceLit returns the elements of the slice literal e (nil for nil);
// ok is false for any other expression, or a literal with an indexed
// element.
func (c *checker) sliceLit(e ast.Expr) (elts []ast.Expr, ok bool) {
	if c.isNil(e) {
		return nil, true
	}
	lit, ok := ast.Unparen(e).(*ast.CompositeLit)
	if !ok {
		return nil, false
	}
	if _, ok := c.pass.TypesInfo.TypeOf(lit).Underlying().(*types.Slice); !ok {
		return nil, false
	}
	for _, elt := range lit.Elts {
		if _, ok := elt.(*ast.KeyValueExpr); ok {
			return nil, false
		}
	}
	return lit.Elts, true
}

// tags reads the Tags value e, known when it is a literal of constants.
func (c *checker) tags(r *registration, e ast.Expr) {
	d := &r.decl
	elts, ok := c.sliceLit(e)
	if !ok {
		d.Unknown |= rules.Tags
		return
	}
	tags := make([]string, 0, len(elts))
	for _, elt := range elts {
		s, _, ok := c.evalString(elt, nil)
		if !ok {
			d.Unknown |= rules.Tags
			return
		}
		tags = append(tags, s)
	}
	d.Tags, r.elems[rules.Tags] = tags, elts
}

// icons reads the Icons value e, known when it is a literal whose every
// icon is a literal with a constant Source, or none.
func (c *checker) icons(r *registration, e ast.Expr) {
	d := &r.decl
	elts, ok := c.sliceLit(e)
	if !ok {
		d.Unknown |= rules.Icons
		return
	}
	icons := make([]mcp.Icon, 0, len(elts))
	for _, elt := range elts {
		lit, ok := ast.Unparen(elt).(*ast.CompositeLit)
		if !ok {
			d.Unknown |= rules.Icons
			return
		}
		kvs, ok := keyedElts(lit)
		if !ok {
			d.Unknown |= rules.Icons
			return
		}
		var ic mcp.Icon
		if kv, ok := kvs["Source"]; ok {
			if ic.Source, _, ok = c.evalString(kv.Value, nil); !ok {
				d.Unknown |= rules.Icons
				return
			}
		}
		icons = append(icons, ic)
	}
	d.Icons, r.elems[rules.Icons] = icons, elts
}
