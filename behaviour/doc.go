// Package behaviour names what a tool does to the state behind it, and
// derives the MCP tool annotations from that one word.
//
// A tool is exactly one of [ReadOnly], [Additive] or [Destructive]. The MCP
// annotations readOnlyHint and destructiveHint form a pair of booleans with
// only three meaningful combinations; one enum makes the fourth (read-only
// and destructive) unrepresentable. The zero value, [Unset], is refused by
// the registry so that a forgotten declaration never defaults to anything.
//
// # Annotations
//
// [Behaviour.Annotations] is the one place the hints are derived:
//
//	Behaviour    readOnlyHint  destructiveHint  idempotentHint   openWorldHint
//	ReadOnly     true          false            true             openWorld
//	Additive     false         false            idempotent       openWorld
//	Destructive  false         true             idempotent       openWorld
//
// DestructiveHint and OpenWorldHint are always set: a nil destructiveHint
// means "destructive" to an MCP client, which is the wrong default for a
// read-only tool and an implicit one for the others.
package behaviour
