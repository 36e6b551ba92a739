package tool

import "time"

// Deprecation says that a tool is on its way out, why, what replaces it
// and when it goes. The registry refuses an empty Reason, a Successor
// that is not a valid tool name or is the tool itself, and the server
// refuses to start when the Successor is not one of its tools.
type Deprecation struct {
	// Reason says why, in one line ("superseded by get_item_v2, which
	// returns prices"). Required.
	Reason string `json:"reason"`
	// Successor names the tool to use instead. Optional. A caller who
	// cannot see it is not told its name.
	Successor string `json:"successor,omitempty"`
	// Sunset is the day after which the tool may be removed (its date in
	// UTC counts; the time of day is ignored). Optional. servertest's
	// CheckSunsets fails a service's tests once it has passed.
	Sunset time.Time `json:"sunset,omitzero"`
}

// ResultCache opts a read-only tool into result caching: a result the
// tool returned is answered again, without running it, to the same
// caller (subject, roles, client and scopes) calling it with the same
// arguments (compared as canonical JSON), for TTL. A failed call, a call
// that asked the user a question or answered one, and a caller without
// a subject are never cached. The cache itself is package resultcache's
// middleware (the kit installs it); the registry refuses a ResultCache on
// a tool that is not ReadOnly, a TTL that is not positive and a negative
// StaleOnError.
type ResultCache struct {
	// TTL is how long a result is answered again. Required.
	TTL time.Duration
	// StaleOnError, if positive, lets a call that fails because its
	// upstream is down or answers 5xx be answered with the caller's
	// expired result, up to StaleOnError past its TTL. 0: an expired
	// result is never answered.
	StaleOnError time.Duration
}
