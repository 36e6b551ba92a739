package tools

import (
	"context"
	"errors"
	"log/slog"

	"github.com/toolroute/toolroute/authz/permission"
	"github.com/toolroute/toolroute/example-service/catalog"
	"github.com/toolroute/toolroute/registry"
)

// Registry holds every tool of example-service. Each tool file registers
// its tool here in init.
var Registry = registry.New[*Deps]()

// Deps is the dependency container every handler receives.
type Deps struct {
	// Catalog is the catalog API's client. Its HTTP transport is authz's
	// upstream transport for the service key [catalog.ServiceKey].
	Catalog *catalog.Client
	// Confirm, if set, makes delete_item ask the user to confirm each
	// deletion (example-service's -confirm-destructive). nil deletes
	// without asking.
	Confirm *permission.Checker
	// Logger receives the causes of upstream failures that the client
	// only sees as "catalog service unavailable". nil selects
	// [slog.Default].
	Logger *slog.Logger
}

func (d *Deps) logger() *slog.Logger {
	if d.Logger == nil {
		return slog.Default()
	}
	return d.Logger
}

// errUnavailable is what a client sees of an upstream failure that is not
// its own doing; the cause is logged.
var errUnavailable = errors.New("catalog service unavailable")

// unavailable is errUnavailable for a cause that stays in the error's
// chain (an authorization refusal among them), not in its text.
type unavailable struct{ cause error }

func (e *unavailable) Error() string { return errUnavailable.Error() }
func (e *unavailable) Unwrap() error { return e.cause }

// upstreamError turns an error of the catalog client into what the tool's
// caller sees: a missing item, an impossible id, the upstream's
// validation message, the call's own cancellation, or a generic
// unavailability whose cause is logged. A refused upstream request needs
// nothing here: the error wraps authz's refusal, whose fixed text the
// typed handler shows the client.
func (d *Deps) upstreamError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var nf *catalog.NotFoundError
	var bad *catalog.InvalidIDError
	var api *catalog.APIError
	switch {
	case errors.As(err, &nf):
		return nf
	case errors.As(err, &bad):
		return bad
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, &api) && api.Status == 400 && api.Code == catalog.CodeInvalidRequest:
		return errors.New("invalid request: " + api.Message) // the server shortens what it shows and logs
	}
	d.logger().ErrorContext(ctx, "example-service: catalog request failed", slog.Any("error", err))
	return &unavailable{cause: err}
}
