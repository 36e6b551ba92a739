package authz

import (
	"context"
	"fmt"
	"net/http"
)

// ReadyChecker is an optional interface of an [Authorizer] that depends
// on a service (an authorization API): Ready reports whether the
// authorizer can decide now (nil), or why not. A server's readiness
// probe asks it (see server.HTTPServerOptions.ReadyCheck), so that a replica
// whose authorizer is unreachable is taken out of rotation instead of
// failing every request. Ready must be cheap, respect ctx, and not
// depend on a caller.
type ReadyChecker interface {
	// Ready reports whether the authorizer can decide now.
	Ready(ctx context.Context) error
}

var _ ReadyChecker = (*ProxyAuth)(nil)

// Ready probes the proxy's single-decision endpoint with a request
// without a credential: a proxy that works answers 401 (or 403), and is
// ready. Anything else is not: a transport error or a timeout (the proxy
// is unreachable), another status (a 5xx of the proxy or of a gateway in
// front of it, a 404 of a wrong AuthPath), and an allowance, which would
// mean the proxy lets anyone in. The error names the proxy (its URL,
// without credentials) and the cause. It is bounded by
// [ProxyAuth.Timeout] like any decision.
func (p *ProxyAuth) Ready(ctx context.Context) error {
	ctx, cancel := p.withTimeout(ctx)
	defer cancel()
	req, err := p.newRequest(ctx, p.AuthPath, defaultAuthPath, Caller{}, nil)
	if err != nil {
		return fmt.Errorf("authz: the RBAC proxy (ProxyAuth) is not usable: %w", err)
	}
	req.Header.Del("Authorization")
	req.Header.Set("X-Forwarded-Uri", "/")
	req.Header.Set("X-Forwarded-Method", http.MethodGet)
	resp, err := p.do(req)
	if err != nil {
		return fmt.Errorf("authz: the RBAC proxy at %s is unreachable: %w", req.URL.Redacted(), err)
	}
	defer drain(resp)
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		return nil
	case http.StatusOK, http.StatusNoContent:
		return fmt.Errorf("authz: the RBAC proxy at %s allows a request without a credential (answered %s): it is not judging tokens", req.URL.Redacted(), resp.Status)
	}
	return fmt.Errorf("authz: the RBAC proxy at %s answered %s to a request without a credential, want 401", req.URL.Redacted(), resp.Status)
}
