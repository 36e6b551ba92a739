package rules

import (
	"strings"
	"unicode"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/tool"
)

// failFunc reports the rule format (with args) broken by field f, at its
// element i (-1 for the field as a whole).
type failFunc func(f Field, i int, format string, args ...any)

// checkTask applies the rules of d's task setting.
func checkTask(d *Decl, fail failFunc) {
	taskKnown, afterKnown := d.Known(Task), d.Known(TaskAfter)
	if taskKnown {
		switch d.Task {
		case tool.TaskNever, tool.TaskAllowed, tool.TaskAlways:
		default:
			fail(Task, -1, "unknown Task %s (want tool.TaskNever, tool.TaskAllowed or tool.TaskAlways)", d.Task)
		}
	}
	if !afterKnown {
		return
	}
	switch after := d.TaskAfter; {
	case after < 0:
		fail(TaskAfter, -1, "negative TaskAfter %s", after)
	case after > 0 && taskKnown && d.Task != tool.TaskAllowed:
		fail(TaskAfter, -1, "TaskAfter %s with Task %s: only a TaskAllowed tool becomes a task after a while", after, d.Task)
	}
}

// checkLifecycle applies the rules of d's Deprecated, Version, Tags and
// Icons.
func checkLifecycle(d *Decl, fail failFunc) {
	if dep := d.Deprecated; dep != nil && d.Known(Deprecated) {
		if d.Known(DeprecatedReason) {
			switch reason := strings.TrimSpace(dep.Reason); {
			case reason == "":
				fail(DeprecatedReason, -1, "Deprecated without a Reason (say why, and what to use instead)")
			case strings.ContainsFunc(reason, unicode.IsControl):
				fail(DeprecatedReason, -1, "Deprecated.Reason holds a line break or control character (write one line)")
			}
		}
		if d.Known(DeprecatedSuccessor) {
			switch s := dep.Successor; {
			case s == "":
			case s == d.Name:
				if d.Known(Name) {
					fail(DeprecatedSuccessor, -1, "Deprecated.Successor names the tool itself")
				}
			default:
				if err := CheckName(s); err != nil {
					fail(DeprecatedSuccessor, -1, "Deprecated.Successor %q is not a valid tool name: %v", s, err)
				}
			}
		}
	}
	if v := d.Version; d.Known(Version) && (len(v) > 64 || strings.ContainsFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) })) {
		fail(Version, -1, "Version %q: at most 64 characters, no space or control character", v)
	}
	if d.Known(Tags) {
		seen := map[string]bool{}
		for i, tag := range d.Tags {
			if !ValidTag(tag) {
				fail(Tags, i, "tag %q: 1 to 64 of a-z 0-9 _ . -, starting with a letter or digit", tag)
				continue
			}
			if seen[tag] {
				fail(Tags, i, "duplicate tag %q", tag)
			}
			seen[tag] = true
		}
	}
	if d.Known(Icons) {
		for i, ic := range d.Icons {
			if strings.TrimSpace(ic.Source) == "" {
				fail(Icons, i, "Icons[%d] has no Source", i)
			}
		}
	}
}

// checkCache applies the rules of d's result caching.
func checkCache(d *Decl, fail failFunc) {
	c := d.Cache
	if c == nil || !d.Known(Cache) {
		return
	}
	if d.Known(Behaviour) && d.Behaviour != behaviour.ReadOnly {
		fail(Cache, -1, "Cache on a tool of behaviour %s: only ReadOnly tools' results may be cached", d.Behaviour)
	}
	if d.Known(CacheTTL) && c.TTL <= 0 {
		fail(CacheTTL, -1, "Cache.TTL is %v: give a positive duration", c.TTL)
	}
	if d.Known(CacheStaleOnError) && c.StaleOnError < 0 {
		fail(CacheStaleOnError, -1, "Cache.StaleOnError is %v: give 0 (never) or a positive duration", c.StaleOnError)
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
