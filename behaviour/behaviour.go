package behaviour

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Behaviour says what a tool does to the state behind it.
//
// The zero value is [Unset], which is not [Behaviour.Valid].
type Behaviour int

const (
	// Unset is the zero value: no behaviour was declared. The registry
	// refuses it.
	Unset Behaviour = iota
	// ReadOnly tools change nothing. They are idempotent by definition.
	ReadOnly
	// Additive tools create or append, but never overwrite or delete what
	// exists.
	Additive
	// Destructive tools may overwrite or delete existing state.
	Destructive
)

var names = [...]string{
	Unset:       "unset",
	ReadOnly:    "read-only",
	Additive:    "additive",
	Destructive: "destructive",
}

// String returns the behaviour's wire name: "read-only", "additive",
// "destructive", "unset", or "Behaviour(N)" for an unknown value.
func (b Behaviour) String() string {
	if b >= 0 && int(b) < len(names) {
		return names[b]
	}
	return fmt.Sprintf("Behaviour(%d)", int(b))
}

// Valid reports whether b is ReadOnly, Additive or Destructive.
func (b Behaviour) Valid() bool {
	return b == ReadOnly || b == Additive || b == Destructive
}

// Parse returns the behaviour named s ("read-only", "additive",
// "destructive"). It refuses "unset" and every other string.
func Parse(s string) (Behaviour, error) {
	for b, name := range names {
		if name == s && Behaviour(b).Valid() {
			return Behaviour(b), nil
		}
	}
	return Unset, fmt.Errorf("behaviour: unknown behaviour %q (want read-only, additive or destructive)", s)
}

// MarshalText implements [encoding.TextMarshaler]. Only valid behaviours
// marshal.
func (b Behaviour) MarshalText() ([]byte, error) {
	if !b.Valid() {
		return nil, fmt.Errorf("behaviour: cannot marshal invalid behaviour %v", b)
	}
	return []byte(b.String()), nil
}

// UnmarshalText implements [encoding.TextUnmarshaler] with [Parse].
func (b *Behaviour) UnmarshalText(text []byte) error {
	v, err := Parse(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// Annotations derives a tool's MCP annotations from its behaviour, whether
// repeating a call has no further effect (idempotent; ignored for ReadOnly,
// which always is), and whether it reaches outside the service's own
// domain (openWorld). DestructiveHint and OpenWorldHint are never nil.
//
// Annotations panics if b is not [Behaviour.Valid]: the registry refuses such tools
// before they can reach it.
func (b Behaviour) Annotations(title string, idempotent, openWorld bool) *mcp.ToolAnnotations {
	a := &mcp.ToolAnnotations{
		Title:         title,
		OpenWorldHint: ptr(openWorld),
	}
	switch b {
	case ReadOnly:
		a.ReadOnlyHint = true
		a.DestructiveHint = ptr(false)
		a.IdempotentHint = true
	case Additive:
		a.DestructiveHint = ptr(false)
		a.IdempotentHint = idempotent
	case Destructive:
		a.DestructiveHint = ptr(true)
		a.IdempotentHint = idempotent
	default:
		panic(fmt.Sprintf("behaviour: Annotations of invalid behaviour %v", b))
	}
	return a
}

func ptr[T any](v T) *T { return &v }
