package server

import (
	"context"
	"log/slog"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/internal/core/redact"
)

// RedactingHandler returns a [slog.Handler] that passes each record to h
// without any bearer token in it: the bearer of the caller in the
// record's context (authz.CallerFromContext) is replaced by "[redacted]"
// wherever it appears, and so is the token of every "Bearer TOKEN" (any
// case), in the message and in every attribute: strings, errors' texts,
// [fmt.Stringer] values, [slog.LogValuer] values, groups, the
// attributes given to WithAttrs, and any other value whose %+v text
// shows a token (such a value is passed on as its redacted text). An
// upstream or an authorization service that echoes the Authorization
// header in an error therefore never puts the caller's token in the log,
// provided the record is logged with the call's context (the
// slog.Logger methods ending in Context, or LogAttrs). Every string is
// also cut at 16 KiB (with a "…(truncated, N bytes)" marker).
//
// [New] installs it around [Options.Logger] (wrapping it once: a
// handler RedactingHandler made is passed through). Give the tools'
// own logger the same wrapping, as example-service does:
//
//	logger := slog.New(server.RedactingHandler(slog.NewTextHandler(os.Stderr, nil)))
func RedactingHandler(h slog.Handler) slog.Handler {
	if r, ok := h.(*redact.Handler); ok {
		return r
	}
	return redact.New(h, callerBearer)
}

// callerBearer is the bearer of the caller in ctx (see
// [authz.CallerFromContext]), or "".
func callerBearer(ctx context.Context) string {
	c, _ := authz.CallerFromContext(ctx)
	return c.Bearer
}

// redacting returns l with its handler wrapped by [RedactingHandler], or
// l itself if it is wrapped already.
func redacting(l *slog.Logger) *slog.Logger {
	if _, ok := l.Handler().(*redact.Handler); ok {
		return l
	}
	return slog.New(RedactingHandler(l.Handler()))
}
