package authz

import (
	"context"
	"log/slog"

	"github.com/toolroute/toolroute/tool"
)

// Authorizer decides whether a caller may reach routes.
//
// Allow decides one route: nil means allowed; otherwise the error is a
// *[DeniedError], an *[UnauthenticatedError] or an *[OutageError]. Any
// other error is treated as an outage by this package: it fails closed.
//
// AllowMany decides a batch in one go (one round trip to an authorization
// service): the i-th result is whether rs[i] is allowed. Its error is an
// *UnauthenticatedError or an *OutageError (and then the results are
// nil); a denial is a false result, not an error. rs may hold duplicates.
//
// Routes are either templates ("/catalog/api/v1/items/{id}", for
// visibility) or concrete escaped paths ("/catalog/api/v1/items/42", for
// upstream requests). Implementations must be safe for concurrent use.
type Authorizer interface {
	// Allow decides one route: nil means allowed.
	Allow(ctx context.Context, c Caller, r tool.Route) error
	// AllowMany decides a batch: the i-th result is whether rs[i] is
	// allowed.
	AllowMany(ctx context.Context, c Caller, rs []tool.Route) ([]bool, error)
}

// AllowAll returns an Authorizer that allows every caller every route.
//
// AllowAll TURNS AUTHORIZATION OFF. It is an explicit opt-out for tests
// and local development: with it every caller sees and may call every
// tool, and every upstream request a tool declares is sent (with the
// caller's bearer, if any). Never use it in a deployment that has callers
// with different rights.
func AllowAll() Authorizer { return allowAll{} }

type allowAll struct{}

func (allowAll) Allow(context.Context, Caller, tool.Route) error { return nil }

func (allowAll) AllowMany(_ context.Context, _ Caller, rs []tool.Route) ([]bool, error) {
	out := make([]bool, len(rs))
	for i := range out {
		out[i] = true
	}
	return out, nil
}

// Options configures authz's two enforcement points, [Middleware] and
// [Transport]; the zero value selects the defaults.
type Options struct {
	// Logger receives what they refuse and why: refusals (info), outages
	// (warn) and wiring bugs (error), such as a tool's request outside
	// its declared routes. Bearers are taken out of every record. nil
	// selects [slog.Default].
	Logger *slog.Logger
	// Toolsets, if set, limits a caller to the tools of some tags, as a
	// second visibility filter of [Middleware] that can only hide: it
	// returns the tags and true for a limited caller, false for one that
	// is not (wrap [Policy.Toolsets]). It gets the request's context, so
	// that a policy swapped at run time can answer with the one the
	// request started under.
	Toolsets func(context.Context, Caller) (tags []string, limited bool)
}
