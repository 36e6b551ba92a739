// Package lifecycle derives, in one place, what a tool's lifecycle
// declaration (tool.Tool's Deprecated, Version, Tags, Icons) shows
// clients: the deprecation notice that heads the description, the
// _meta entry, and the rules a declaration must keep. The registry
// builds definitions with it, the server hides a successor its caller
// cannot see with it, servertest's sunset check reads Due. Nothing here
// is API.
package lifecycle

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/core/rules"
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

// Check reports, through fail, every rule the lifecycle declarations of
// the tool named name break.
func Check(name string, d *tool.Deprecation, version string, tags []string, icons []mcp.Icon, fail func(rule string)) {
	if d != nil {
		switch reason := strings.TrimSpace(d.Reason); {
		case reason == "":
			fail("Deprecated without a Reason (say why, and what to use instead)")
		case strings.ContainsFunc(reason, unicode.IsControl):
			fail("Deprecated.Reason holds a line break or control character (write one line)")
		}
		switch s := d.Successor; {
		case s == "":
		case s == name:
			fail("Deprecated.Successor names the tool itself")
		default:
			if err := rules.CheckName(s); err != nil {
				fail(fmt.Sprintf("Deprecated.Successor %q is not a valid tool name: %v", s, err))
			}
		}
	}
	if len(version) > 64 || strings.ContainsFunc(version, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		fail(fmt.Sprintf("Version %q: at most 64 characters, no space or control character", version))
	}
	seen := map[string]bool{}
	for _, tag := range tags {
		if !ValidTag(tag) {
			fail(fmt.Sprintf("tag %q: 1 to 64 of a-z 0-9 _ . -, starting with a letter or digit", tag))
			continue
		}
		if seen[tag] {
			fail(fmt.Sprintf("duplicate tag %q", tag))
		}
		seen[tag] = true
	}
	for i, ic := range icons {
		if strings.TrimSpace(ic.Source) == "" {
			fail(fmt.Sprintf("Icons[%d] has no Source", i))
		}
	}
}

// CheckCache reports, through fail, every rule a tool's result caching
// c breaks for a tool of behaviour b.
func CheckCache(c *tool.ResultCache, b behaviour.Behaviour, fail func(rule string)) {
	if c == nil {
		return
	}
	if b != behaviour.ReadOnly {
		fail(fmt.Sprintf("Cache on a tool of behaviour %s: only ReadOnly tools' results may be cached", b))
	}
	if c.TTL <= 0 {
		fail(fmt.Sprintf("Cache.TTL is %v: give a positive duration", c.TTL))
	}
	if c.StaleOnError < 0 {
		fail(fmt.Sprintf("Cache.StaleOnError is %v: give 0 (never) or a positive duration", c.StaleOnError))
	}
}

// ValidTag reports whether tag is a valid toolset tag: 1 to 64 of
// a-z 0-9 _ . -, starting with a letter or digit.
func ValidTag(tag string) bool {
	if tag == "" || len(tag) > 64 {
		return false
	}
	for i, r := range tag {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		case i > 0 && (r == '_' || r == '.' || r == '-'):
		default:
			return false
		}
	}
	return true
}
