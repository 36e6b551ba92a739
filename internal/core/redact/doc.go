// Package redact is the [slog.Handler] that keeps bearer tokens out of a
// server's log: every record it passes on has the bearer of the caller in
// the record's context (found by the function given to [New]) replaced by
// "[redacted]" wherever it appears, and so has the token of every
// "Bearer TOKEN" (any case), in the message and in every attribute:
// strings, errors' texts, [fmt.Stringer] values, [slog.LogValuer] values,
// groups, the attributes given to WithAttrs, and any other value whose
// %+v text shows a token (such a value is passed on as its redacted
// text). Every string is also cut at [MaxString] bytes (with a
// "…(truncated, N bytes)" marker). Nothing here is API: server's
// RedactingHandler is the handler with the authz caller's bearer.
package redact
