package authz_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/tool"
)

// slowAuthorizer delays every decision of a by d and counts them.
type slowAuthorizer struct {
	a     authz.Authorizer
	d     time.Duration
	asked atomic.Int64
}

func (s *slowAuthorizer) Allow(ctx context.Context, c authz.Caller, r tool.Route) error {
	s.asked.Add(1)
	time.Sleep(s.d)
	return s.a.Allow(ctx, c, r)
}

func (s *slowAuthorizer) AllowMany(ctx context.Context, c authz.Caller, rs []tool.Route) ([]bool, error) {
	s.asked.Add(1)
	time.Sleep(s.d)
	return s.a.AllowMany(ctx, c, rs)
}

// answer is what a client sees of a call, with the tool's name replaced
// by NAME.
type answer struct {
	Code    int64
	Message string
	IsError bool
	Text    string
}

func answerOf(h *harness, t *testing.T, name string) answer {
	t.Helper()
	text, isErr, err := h.call(t, name, map[string]any{"id": "1"})
	a := answer{IsError: isErr, Text: strings.ReplaceAll(text, name, "NAME")}
	if err != nil {
		we := asWireError(t, err)
		a.Code, a.Message = we.Code, strings.ReplaceAll(we.Message, name, "NAME")
	}
	return a
}

// TestHiddenAnswersLikeUnknownInEveryState: whatever the authorizer
// answers (a denial, an unknown bearer, an outage), a hidden tool's call
// and an unknown name's get the same answer, and during an outage both
// fail closed saying so.
func TestHiddenAnswersLikeUnknownInEveryState(t *testing.T) {
	unknown := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams}
	for _, tt := range []struct {
		name   string
		bearer string
		status int32 // the proxy's answer to everything; 0: decide
		want   answer
	}{
		{"denied", secretBearer, 0, answer{Code: unknown.Code, Message: `unknown tool "NAME"`}},
		{"unauthenticated", "unknown-bearer", 0, answer{Code: unknown.Code, Message: `unknown tool "NAME"`}},
		{"outage", secretBearer, 500, answer{IsError: true, Text: "authorization service unavailable"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			proxy := newRBACProxy(t, testPolicy(t), testRoles)
			proxy.status.Store(tt.status)
			h := newHarness(t, harnessOptions{authorizer: proxy.auth(),
				caller: &authz.Caller{Subject: "alice", Roles: []string{"viewer"}, Bearer: tt.bearer}})
			// delete_item is hidden from a viewer (and from everyone while
			// the proxy is down); no_such_tool does not exist.
			for _, name := range []string{"delete_item", "no_such_tool"} {
				if diff := cmp.Diff(tt.want, answerOf(h, t, name)); diff != "" {
					t.Errorf("%s (-want +got):\n%s", name, diff)
				}
			}
			if got := h.upstream.sends(); len(got) != 0 {
				t.Errorf("the upstream received %q", got)
			}
		})
	}
}

// TestUnknownNameAsksTheAuthorizer: an unknown name is not answered
// before the authorizer is asked, once, as a hidden tool's call is: a
// slow authorizer delays both alike.
func TestUnknownNameAsksTheAuthorizer(t *testing.T) {
	const delay = 50 * time.Millisecond
	slow := &slowAuthorizer{a: testPolicy(t), d: delay}
	h := newHarness(t, harnessOptions{authorizer: slow,
		caller: &authz.Caller{Subject: "alice", Roles: []string{"viewer"}, Bearer: secretBearer}})
	for _, name := range []string{"delete_item", "no_such_tool"} {
		before := slow.asked.Load()
		start := time.Now()
		answerOf(h, t, name)
		if took, asked := time.Since(start), slow.asked.Load()-before; took < delay || asked != 1 {
			t.Errorf("%s: answered in %v after %d decisions, want ≥ %v after 1", name, took, asked, delay)
		}
	}
}
