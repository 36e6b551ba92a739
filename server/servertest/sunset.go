package servertest

import (
	"testing"
	"time"

	"github.com/toolroute/toolroute/internal/core/lifecycle"
	"github.com/toolroute/toolroute/tool"
)

// CheckSunsets fails tb, naming each, for every deprecated tool among
// tools whose sunset (tool.Deprecation.Sunset) has come at now: from
// the sunset day on, in UTC, the tool is due to be removed. Give it a
// registry's tools and the time, so that a service's CI fails the day a
// tool outlives its announced removal:
//
//	func TestSunsets(t *testing.T) { servertest.CheckSunsets(t, time.Now(), tools.Registry.Calls()) }
//
// A deprecated tool without a sunset, and a tool that is not deprecated,
// never fails it.
func CheckSunsets(tb testing.TB, now time.Time, tools []*tool.Call) {
	tb.Helper()
	for _, t := range tools {
		if t != nil && lifecycle.Due(t.Deprecated, now) {
			tb.Errorf("servertest: tool %q is past its sunset (%s, now %s): remove it%s",
				t.Tool, t.Deprecated.Sunset.UTC().Format(lifecycle.DateLayout), now.UTC().Format(lifecycle.DateLayout), successorHint(t.Deprecated))
		}
	}
}

func successorHint(d *tool.Deprecation) string {
	if d.Successor == "" {
		return ""
	}
	return " (its successor is " + d.Successor + ")"
}
