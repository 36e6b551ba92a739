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
