package servertest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/tool"
)

// messages records what a check reports instead of failing the test.
type messages struct {
	testing.TB
	got []string
}

func (m *messages) Errorf(format string, args ...any) {
	m.got = append(m.got, fmt.Sprintf(format, args...))
}
func (m *messages) Helper() {}

// TestCheckSunsets, with fixed clocks: the day before a sunset passes,
// the sunset day itself (in UTC, whatever the clock's zone) fails, and
// so does every later day; a deprecation without a sunset never fails.
func TestCheckSunsets(t *testing.T) {
	reg := registry.New[none]()
	h := tool.Handle(func(context.Context, none, *mcp.CallToolRequest, none) (none, error) { return none{}, nil })
	sunset := time.Date(2027, 3, 1, 15, 30, 0, 0, time.UTC) // the day counts, not the hour
	reg.Register(tool.Tool[none]{Name: "old", Description: "d", Behaviour: behaviour.ReadOnly, Local: true, Handler: h,
		Deprecated: &tool.Deprecation{Reason: "use new", Successor: "new", Sunset: sunset}})
	reg.Register(tool.Tool[none]{Name: "forever", Description: "d", Behaviour: behaviour.ReadOnly, Local: true, Handler: h,
		Deprecated: &tool.Deprecation{Reason: "no date"}})
	reg.Register(tool.Tool[none]{Name: "new", Description: "d", Behaviour: behaviour.ReadOnly, Local: true, Handler: h})

	tokyo := time.FixedZone("JST", 9*3600)
	for _, c := range []struct {
		name string
		now  time.Time
		fail bool
	}{
		{"the day before", time.Date(2027, 2, 28, 23, 59, 59, 0, time.UTC), false},
		{"the day before, in UTC, already the day in Tokyo", time.Date(2027, 3, 1, 8, 0, 0, 0, tokyo), false},
		{"the day itself", time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC), true},
		{"a year later", time.Date(2028, 3, 1, 0, 0, 0, 0, time.UTC), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := &messages{TB: t}
			servertest.CheckSunsets(m, c.now, reg.Calls())
			if !c.fail {
				if len(m.got) != 0 {
					t.Errorf("CheckSunsets at %v failed: %q", c.now, m.got)
				}
				return
			}
			if len(m.got) != 1 || !strings.Contains(m.got[0], `tool "old" is past its sunset (2027-03-01`) || !strings.Contains(m.got[0], "its successor is new") {
				t.Errorf("CheckSunsets at %v = %q, want one failure naming old, its sunset and successor", c.now, m.got)
			}
		})
	}
}
