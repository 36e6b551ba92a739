package reload

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/tool"
)

// Authorizer is an authz.Authorizer that decides with the current one of
// a sequence of authorizers (see the package documentation). It is safe
// for concurrent use, and must be created with [New].
type Authorizer struct {
	cur atomic.Pointer[generation]
}

// generation is one authorizer of the sequence and its number.
type generation struct {
	n uint64
	a authz.Authorizer
}

// pinKey is the context key under which a request's generation of r is
// recorded: each Authorizer its own.
type pinKey struct{ r *Authorizer }

// New returns an Authorizer deciding with a, generation 1. It panics if
// a is nil.
func New(a authz.Authorizer) *Authorizer {
	if a == nil {
		panic("reload: New: nil Authorizer")
	}
	r := &Authorizer{}
	r.cur.Store(&generation{n: 1, a: a})
	return r
}

// Swap makes a the current authorizer, atomically, and returns its
// generation: requests pinned before keep theirs, every later request
// and every decision made without a pinned context asks a. It panics if
// a is nil (fail closed: a reload that built nothing must not install
// it).
func (r *Authorizer) Swap(a authz.Authorizer) uint64 {
	if a == nil {
		panic("reload: Swap: nil Authorizer")
	}
	for {
		old := r.cur.Load()
		g := &generation{n: old.n + 1, a: a}
		if r.cur.CompareAndSwap(old, g) {
			return g.n
		}
	}
}

// Current returns the current authorizer and its generation.
func (r *Authorizer) Current() (authz.Authorizer, uint64) {
	g := r.cur.Load()
	return g.a, g.n
}

// Pin returns ctx recording the current generation, unless ctx records
// one of r already (a request is pinned once, at its start). Every
// decision of r made with the returned context, or one derived from it,
// asks that generation's authorizer.
func (r *Authorizer) Pin(ctx context.Context) context.Context {
	if _, ok := ctx.Value(pinKey{r}).(*generation); ok {
		return ctx
	}
	return context.WithValue(ctx, pinKey{r}, r.cur.Load())
}

// Middleware returns the receiving middleware that pins every request
// (see [Authorizer.Pin]). It must run before anything that decides:
// server.Options.Observers (which run before authorization) is the
// place.
func (r *Authorizer) Middleware() mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			return next(r.Pin(ctx), method, req)
		}
	}
}

// at returns the generation ctx is pinned to, else the current one.
func (r *Authorizer) at(ctx context.Context) *generation {
	if g, ok := ctx.Value(pinKey{r}).(*generation); ok {
		return g
	}
	return r.cur.Load()
}

// Generation returns the generation a decision made with ctx asks: the
// one ctx is pinned to, else the current one. authz.Cached keys its
// decisions by it.
func (r *Authorizer) Generation(ctx context.Context) uint64 { return r.at(ctx).n }

// At returns the authorizer of the generation of ctx (see
// [Authorizer.Generation]): what a request pinned before a swap reads
// besides its decisions, such as the policy's toolsets.
func (r *Authorizer) At(ctx context.Context) authz.Authorizer { return r.at(ctx).a }

// Allow decides with the generation of ctx (see [Authorizer.Generation]).
func (r *Authorizer) Allow(ctx context.Context, c authz.Caller, rt tool.Route) error {
	return r.at(ctx).a.Allow(ctx, c, rt)
}

// AllowMany decides with the generation of ctx, like Allow.
func (r *Authorizer) AllowMany(ctx context.Context, c authz.Caller, rs []tool.Route) ([]bool, error) {
	return r.at(ctx).a.AllowMany(ctx, c, rs)
}

// Ready asks the current authorizer's Ready, if it has one (see
// authz.ReadyChecker); one without is ready.
func (r *Authorizer) Ready(ctx context.Context) error {
	if rc, ok := r.cur.Load().a.(authz.ReadyChecker); ok {
		if err := rc.Ready(ctx); err != nil {
			return fmt.Errorf("reload: %w", err)
		}
	}
	return nil
}
