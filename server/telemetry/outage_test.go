package telemetry_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/server/telemetry"
	"github.com/toolroute/toolroute/tool"
)

// downAuthorizer cannot decide anything.
type downAuthorizer struct{}

func (downAuthorizer) Allow(context.Context, authz.Caller, tool.Route) error {
	return &authz.OutageError{Err: errors.New("proxy down")}
}

func (downAuthorizer) AllowMany(context.Context, authz.Caller, []tool.Route) ([]bool, error) {
	return nil, &authz.OutageError{Err: errors.New("proxy down")}
}

// TestUnknownToolDuringOutage: during an outage, authz answers an
// unknown name as it answers a tool's call (an isError result, after
// asking the authorizer); the name still reaches no metric label and no
// span name, and its audit record names no decision.
func TestUnknownToolDuringOutage(t *testing.T) {
	e := newEnv(t, envOptions{inner: downAuthorizer{}})
	cs := servertest.Connect(t, e.server, &viewer, servertest.Options{})
	for _, name := range []string{"get_item", "made_up_tool"} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"id": itemID}})
		if err != nil || !res.IsError {
			t.Fatalf("%s during an outage: %v %+v, want an isError result", name, err, res)
		}
	}
	for name, m := range e.collect(t) {
		for k := range points(m) {
			if strings.Contains(k, "made_up") {
				t.Errorf("%s has a label from a caller's value: %s", name, k)
			}
		}
	}
	for _, s := range e.spans.Ended() {
		if strings.Contains(s.Name(), "made_up") {
			t.Errorf("span named after a caller's value: %q", s.Name())
		}
	}
	spanNamed(t, e.spans.Ended(), "tools/call get_item") // a known tool's span keeps its name
	for _, r := range e.records(t) {
		if r.Tool == "made_up_tool" && (r.Decision != "" || r.Outcome != "outage") {
			t.Errorf("unknown name's record: %+v", r)
		}
	}
}

// readyAuthz is an authorizer with a Ready of its own.
type readyAuthz struct {
	authz.Authorizer
	err error
}

func (r readyAuthz) Ready(context.Context) error { return r.err }

// TestAuthorizerForwardsReady: the decorator is as ready as what it
// decorates, and always ready in front of an authorizer without Ready.
func TestAuthorizerForwardsReady(t *testing.T) {
	tel := benchTelemetry(t)
	down := errors.New("the proxy is unreachable")
	for _, tc := range []struct {
		a    authz.Authorizer
		want error
	}{{readyAuthz{testPolicy(t), down}, down}, {readyAuthz{testPolicy(t), nil}, nil}, {testPolicy(t), nil}} {
		rc, ok := tel.Authorizer(tc.a, "").(authz.ReadyChecker)
		if !ok {
			t.Fatal("the decorator is no ReadyChecker")
		}
		if got := rc.Ready(context.Background()); got != tc.want {
			t.Errorf("Ready of the decorator of %T = %v, want %v", tc.a, got, tc.want)
		}
	}
}

// upstreamDenier lets every caller see every tool, and refuses the
// upstream request for the item "forbidden".
type upstreamDenier struct{}

func (upstreamDenier) Allow(_ context.Context, c authz.Caller, r tool.Route) error {
	if strings.HasSuffix(r.URI, "/forbidden") {
		return &authz.DeniedError{Route: r, Subject: c.Subject, Reason: "the test forbids it"}
	}
	return nil
}

func (upstreamDenier) AllowMany(_ context.Context, _ authz.Caller, rs []tool.Route) ([]bool, error) {
	out := make([]bool, len(rs))
	for i := range out {
		out[i] = true
	}
	return out, nil
}

// TestUpstreamDeniedOutcome: a call whose upstream request authz.Transport
// refuses (the handler returns the *url.Error wrapping the DeniedError,
// the client sees an isError result) is recorded as the server's log
// record classifies it, "denied", in its audit record and its span's
// status, not as "tool_error" like a call whose upstream answers 404.
func TestUpstreamDeniedOutcome(t *testing.T) {
	e := newEnv(t, envOptions{inner: upstreamDenier{}})
	cs := servertest.Connect(t, e.server, &viewer, servertest.Options{})
	for _, id := range []string{"forbidden", "missing"} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_item", Arguments: map[string]any{"id": id}})
		if err != nil || !res.IsError {
			t.Fatalf("get_item %s: %v %+v, want an isError result", id, err, res)
		}
	}
	var outcomes, statuses []string
	for _, r := range e.records(t) {
		if r.Event == telemetry.EventCall {
			outcomes = append(outcomes, r.Outcome)
		}
	}
	for _, s := range e.spans.Ended() {
		if s.Name() == "tools/call get_item" {
			statuses = append(statuses, s.Status().Description)
		}
	}
	want := []string{"denied", "tool_error"}
	if !slices.Equal(outcomes, want) {
		t.Errorf("audit outcomes = %q, want %q", outcomes, want)
	}
	if !slices.Equal(statuses, want) {
		t.Errorf("span statuses = %q, want %q", statuses, want)
	}
}
