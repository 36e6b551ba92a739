// Package lifecycle derives, in one place, what a tool's lifecycle
// declaration (tool.Tool's Deprecated, Version, Tags, Icons) shows
// clients: the deprecation notice that heads the description and the
// _meta entry. The registry builds definitions with it, the server
// hides a successor its caller cannot see with it, servertest's sunset
// check reads Due. The rules a declaration must keep are
// internal/core/rules', which registry/vet applies too. Nothing here is
// API.
package lifecycle

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/tool"
)

// MetaKey is the _meta key of a tool definition that holds its
// lifecycle: {"version", "tags", "deprecated": {"reason", "successor",
// "sunset"}}, each present only when declared.
const MetaKey = "io.github.toolroute/lifecycle"

// DateLayout is how a sunset date is written, in notices and _meta.
const DateLayout = time.DateOnly

// Notice is the fixed form of a deprecation, the first paragraph of a
// deprecated tool's description:
//
//	DEPRECATED: REASON. Use SUCCESSOR instead. Sunset: YYYY-MM-DD.
//
// the successor's sentence only with successor true (and a Successor
// declared), the sunset's only with a Sunset declared.
func Notice(d *tool.Deprecation, successor bool) string {
	var b strings.Builder
	b.WriteString("DEPRECATED: ")
	b.WriteString(strings.TrimRight(strings.TrimSpace(d.Reason), "."))
	b.WriteString(".")
	if successor && d.Successor != "" {
		fmt.Fprintf(&b, " Use %s instead.", d.Successor)
	}
	if !d.Sunset.IsZero() {
		fmt.Fprintf(&b, " Sunset: %s.", d.Sunset.UTC().Format(DateLayout))
	}
	return b.String()
}

// Describe returns description as clients see it: headed by d's
// [Notice] and a blank line when d is not nil.
func Describe(description string, d *tool.Deprecation, successor bool) string {
	if d == nil {
		return description
	}
	return Notice(d, successor) + "\n\n" + description
}

// Meta returns a definition's _meta for these declarations: nil when
// none is made, else one entry under [MetaKey].
func Meta(version string, tags []string, d *tool.Deprecation, successor bool) mcp.Meta {
	if version == "" && len(tags) == 0 && d == nil {
		return nil
	}
	m := map[string]any{}
	if version != "" {
		m["version"] = version
	}
	if len(tags) > 0 {
		m["tags"] = slices.Clone(tags)
	}
	if d != nil {
		dm := map[string]any{"reason": strings.TrimSpace(d.Reason)}
		if successor && d.Successor != "" {
			dm["successor"] = d.Successor
		}
		if !d.Sunset.IsZero() {
			dm["sunset"] = d.Sunset.UTC().Format(DateLayout)
		}
		m["deprecated"] = dm
	}
	return mcp.Meta{MetaKey: m}
}

// WithoutSuccessor returns a copy of t, the listed definition of a tool
// deprecated by d, that does not name d's successor: for a caller who
// cannot see that tool. The notice is replaced wherever it stands (a
// middleware may have changed the description around it) and the
// successor taken out of the _meta entry; the rest of the definition is
// shared.
func WithoutSuccessor(t *mcp.Tool, d *tool.Deprecation) *mcp.Tool {
	c := *t
	c.Description = strings.ReplaceAll(t.Description, Notice(d, true), Notice(d, false))
	c.Meta = make(mcp.Meta, len(t.Meta))
	for k, v := range t.Meta {
		c.Meta[k] = v
	}
	entry, ok := t.Meta[MetaKey].(map[string]any)
	if !ok {
		c.Meta[MetaKey] = Meta("", nil, d, false)[MetaKey]
		return &c
	}
	e := make(map[string]any, len(entry))
	for k, v := range entry {
		e[k] = v
	}
	e["deprecated"] = Meta("", nil, d, false)[MetaKey].(map[string]any)["deprecated"]
	c.Meta[MetaKey] = e
	return &c
}

// SunsetDay returns d's sunset as the start of its day in UTC (zero for
// none): what the registry keeps.
func SunsetDay(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	y, m, day := t.UTC().Date()
	return time.Date(y, m, day, 0, 0, 0, 0, time.UTC)
}

// Due reports whether d's sunset has come at now: from the sunset day
// on (in UTC), the tool may be removed and must be.
func Due(d *tool.Deprecation, now time.Time) bool {
	return d != nil && !d.Sunset.IsZero() && !now.Before(SunsetDay(d.Sunset))
}
