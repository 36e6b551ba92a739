package permission_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/permission"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/testing/mcptest"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
)

const (
	v2026 = "2026-07-28"
	v2025 = "2025-11-25"
)

var versions = []string{v2026, v2025}

// env is the dependency container of the test tools: the checker under
// test and a count of side effects (a handler's work after Require).
type env struct {
	perms   *permission.Checker
	effects atomic.Int32
}

type actArgs struct {
	Subjects   []string `json:"subjects,omitempty"`
	Caps       []string `json:"caps"`
	Partial    bool     `json:"partial,omitempty"`
	NoRemember bool     `json:"no_remember,omitempty"`
}

func (a actArgs) request() permission.Request {
	return permission.Request{Subjects: a.Subjects, Capabilities: a.Caps, Reason: "Act?", Partial: a.Partial, NoRemember: a.NoRemember}
}

// act is a tool.HandleResult handler: it requires what its arguments say,
// then "acts" (counts a side effect) and answers with the granted
// capabilities.
func act(ctx context.Context, e *env, req *mcp.CallToolRequest, in actArgs) (*mcp.CallToolResult, error) {
	granted, ask, err := e.perms.Require(ctx, req, in.request())
	if ask != nil || err != nil {
		return ask, err
	}
	e.effects.Add(1)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "granted " + strings.Join(granted.Capabilities(), ",")}}}, nil
}

type actOut struct {
	Granted []string `json:"granted"`
}

// actTyped is act as a tool.Handle handler.
func actTyped(ctx context.Context, e *env, req *mcp.CallToolRequest, in actArgs) (actOut, error) {
	granted, err := e.perms.Check(ctx, req, in.request())
	if err != nil {
		return actOut{}, err
	}
	e.effects.Add(1)
	return actOut{Granted: granted.Capabilities()}, nil
}

// principal reads the test's principal from the call's _meta (in-memory
// transports carry no headers).
func principal(_ context.Context, req *mcp.CallToolRequest) string {
	p, _ := req.Params.GetMeta()["test/principal"].(string)
	return p
}

func newServer(t *testing.T, opts permission.Options) (*mcp.Server, *env) {
	t.Helper()
	if opts.Principal == nil {
		opts.Principal = principal
	}
	e := &env{perms: permission.New(opts)}
	reg := registry.New[*env]()
	for _, name := range []string{"act", "other"} {
		reg.Register(tool.Tool[*env]{
			Name:        name,
			Description: "Act on subjects.",
			Local:       true,
			Behaviour:   behaviour.Destructive,
			Handler:     tool.HandleResult(act),
		})
	}
	reg.Register(tool.Tool[*env]{
		Name:        "act_typed",
		Description: "Act on subjects, typed.",
		Local:       true,
		Behaviour:   behaviour.Destructive,
		Handler:     tool.Handle(actTyped),
	})
	s := mcp.NewServer(&mcp.Implementation{Name: "permission-test", Version: "v0"}, nil)
	reg.Install(s, e)
	return s, e
}

// asker is a client's elicitation handler answering from a script.
type asker struct {
	mu       sync.Mutex
	answers  []*mcp.ElicitResult // one per question; the last repeats
	messages []string
}

func (a *asker) handle(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.messages = append(a.messages, req.Params.Message)
	ans := a.answers[0]
	if len(a.answers) > 1 {
		a.answers = a.answers[1:]
	}
	return ans, nil
}

func (a *asker) asked() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.messages)
}

func decision(d string) *mcp.ElicitResult {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": d}}
}

// connect connects a client speaking version to s over in-memory
// transports. A nil a makes a client without elicitation.
func connect(t *testing.T, s *mcp.Server, version string, a *asker, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	if copts == nil {
		copts = &mcp.ClientOptions{}
	}
	if a != nil {
		copts.ElicitationHandler = a.handle
	}
	return mcptest.Connect(t, s, &mcptest.Options{
		Client:  mcp.NewClient(&mcp.Implementation{Name: "permission-test-client", Version: "v0"}, copts),
		Session: &mcp.ClientSessionOptions{ProtocolVersion: version},
	})
}

func callAs(t *testing.T, cs *mcp.ClientSession, who, name string, args actArgs) (*mcp.CallToolResult, error) {
	t.Helper()
	return cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args, Meta: mcp.Meta{"test/principal": who}})
}

func call(t *testing.T, cs *mcp.ClientSession, args actArgs) (*mcp.CallToolResult, error) {
	t.Helper()
	return callAs(t, cs, "alice", "act", args)
}

// text returns a function giving a call's outcome as one string: "error:
// TEXT" for an isError result, else its text. (A function, so that it can
// take a call's two results.)
func text(t *testing.T) func(res *mcp.CallToolResult, err error) string {
	t.Helper()
	return func(res *mcp.CallToolResult, err error) string { return outcome(t, res, err) }
}

func outcome(t *testing.T, res *mcp.CallToolResult, err error) string {
	t.Helper()
	if err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	if res.NeedsInput() {
		t.Fatalf("CallTool: unexpected input_required result")
	}
	var b strings.Builder
	if res.IsError {
		b.WriteString("error: ")
	}
	for _, c := range res.Content {
		b.WriteString(c.(*mcp.TextContent).Text)
	}
	return b.String()
}

func TestRulesDecide(t *testing.T) {
	implies := map[string][]string{
		"admin":  {"write", "delete"},
		"write":  {"read"},
		"delete": {"read"},
		"read":   {"list", "read"}, // a cycle onto itself is fine
		"list":   {"read"},         // and so is a longer one
	}
	tests := []struct {
		name  string
		rules []permission.Rule
		args  actArgs
		want  string
	}{
		{
			name:  "allow implies its closure",
			rules: []permission.Rule{{Effect: authz.Allow, Capability: "admin"}},
			args:  actArgs{Subjects: []string{"item:1"}, Caps: []string{"admin"}},
			want:  "granted admin,delete,list,read,write",
		},
		{
			name:  "allow of a stronger capability allows a weaker one",
			rules: []permission.Rule{{Effect: authz.Allow, Capability: "write"}},
			args:  actArgs{Subjects: []string{"item:1"}, Caps: []string{"list"}},
			want:  "granted list,read",
		},
		{
			name:  "allow of a weaker capability does not allow a stronger one",
			rules: []permission.Rule{{Effect: authz.Allow, Capability: "read"}},
			args:  actArgs{Subjects: []string{"item:1"}, Caps: []string{"write"}},
			want:  "error: " + permission.ErrCannotAsk.Error(),
		},
		{
			name: "deny of a weaker capability denies a stronger one",
			rules: []permission.Rule{
				{Effect: authz.Deny, Capability: "read"},
				{Effect: authz.Allow},
			},
			args: actArgs{Subjects: []string{"item:1"}, Caps: []string{"write"}},
			want: "error: permission denied: write on item:1",
		},
		{
			name: "first match wins: allow before deny",
			rules: []permission.Rule{
				{Effect: authz.Allow, Subject: "item:*", Capability: "write"},
				{Effect: authz.Deny, Subject: "item:*"},
			},
			args: actArgs{Subjects: []string{"item:1"}, Caps: []string{"write"}},
			want: "granted list,read,write",
		},
		{
			name: "first match wins: deny before allow",
			rules: []permission.Rule{
				{Effect: authz.Deny, Subject: "item:*"},
				{Effect: authz.Allow, Subject: "item:*", Capability: "write"},
			},
			args: actArgs{Subjects: []string{"item:1"}, Caps: []string{"write"}},
			want: "error: permission denied: write on item:1",
		},
		{
			name: "rules match principal and tool patterns",
			rules: []permission.Rule{
				{Effect: authz.Deny, Principal: "bob"},
				{Effect: authz.Deny, Tool: "oth*"},
				{Effect: authz.Allow, Principal: "ali*", Tool: "act"},
			},
			args: actArgs{Subjects: []string{"item:1"}, Caps: []string{"delete"}},
			want: "granted delete,list,read",
		},
		{
			name: "intersection across subjects",
			rules: []permission.Rule{
				{Effect: authz.Allow, Subject: "item:1", Capability: "admin"},
				{Effect: authz.Allow, Subject: "item:2", Capability: "write"},
				{Effect: authz.Deny},
			},
			args: actArgs{Subjects: []string{"item:1", "item:2"}, Caps: []string{"write", "delete"}, Partial: true},
			want: "granted list,read,write",
		},
		{
			name: "intersection across subjects, all required",
			rules: []permission.Rule{
				{Effect: authz.Allow, Subject: "item:1", Capability: "admin"},
				{Effect: authz.Allow, Subject: "item:2", Capability: "write"},
				{Effect: authz.Deny},
			},
			args: actArgs{Subjects: []string{"item:1", "item:2"}, Caps: []string{"write", "delete"}},
			want: "error: permission denied: delete on item:1, item:2",
		},
		{
			name: "grants on one subject do not leak to another",
			rules: []permission.Rule{
				{Effect: authz.Allow, Subject: "item:1"},
				{Effect: authz.Deny},
			},
			args: actArgs{Subjects: []string{"item:1", "item:2"}, Caps: []string{"read"}, Partial: true},
			want: "error: permission denied: read on item:1, item:2",
		},
		{
			name:  "no subjects is one anonymous subject",
			rules: []permission.Rule{{Effect: authz.Allow, Subject: "", Capability: "read"}},
			args:  actArgs{Caps: []string{"read"}},
			want:  "granted list,read",
		},
		{
			name:  "a denied capability is not asked about when all are required",
			rules: []permission.Rule{{Effect: authz.Deny, Capability: "delete"}},
			args:  actArgs{Subjects: []string{"item:1"}, Caps: []string{"delete", "write"}},
			want:  "error: permission denied: delete, write on item:1",
		},
		{
			name:  "no rule decides and the client cannot ask",
			rules: nil,
			args:  actArgs{Subjects: []string{"item:1"}, Caps: []string{"read"}},
			want:  "error: " + permission.ErrCannotAsk.Error(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, e := newServer(t, permission.Options{Implies: implies, Rules: tt.rules})
			cs := connect(t, s, v2026, nil, nil)
			got := text(t)(call(t, cs, tt.args))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			wantEffects := int32(0)
			if strings.HasPrefix(tt.want, "granted") {
				wantEffects = 1
			}
			if got := e.effects.Load(); got != wantEffects {
				t.Errorf("side effects = %d, want %d", got, wantEffects)
			}
		})
	}
}

func TestAsk(t *testing.T) {
	one := actArgs{Subjects: []string{"item:42"}, Caps: []string{"delete"}}
	tests := []struct {
		name    string
		tool    string
		answers []*mcp.ElicitResult
		calls   int      // calls made in a row
		want    []string // outcome of each call
		asked   int      // questions the user saw
	}{
		{
			name:    "allow once asks every time",
			answers: []*mcp.ElicitResult{decision(permission.AllowOnce)},
			calls:   2,
			want:    []string{"granted delete", "granted delete"},
			asked:   2,
		},
		{
			name:    "allow always asks once",
			answers: []*mcp.ElicitResult{decision(permission.AllowAlways)},
			calls:   3,
			want:    []string{"granted delete", "granted delete", "granted delete"},
			asked:   1,
		},
		{
			name:    "deny",
			answers: []*mcp.ElicitResult{decision(permission.DenyOnce), decision(permission.AllowOnce)},
			calls:   2,
			want:    []string{"error: permission denied by the user: delete on item:42", "granted delete"},
			asked:   2,
		},
		{
			name:    "deny always asks once",
			answers: []*mcp.ElicitResult{decision(permission.DenyAlways), decision(permission.AllowOnce)},
			calls:   2,
			want:    []string{"error: permission denied by the user: delete on item:42", "error: permission denied: delete on item:42"},
			asked:   1,
		},
		{
			name:    "decline",
			answers: []*mcp.ElicitResult{{Action: "decline"}},
			calls:   1,
			want:    []string{"error: permission denied by the user: delete on item:42"},
			asked:   1,
		},
		{
			name:    "cancel",
			answers: []*mcp.ElicitResult{{Action: "cancel"}},
			calls:   1,
			want:    []string{"error: permission denied by the user: delete on item:42"},
			asked:   1,
		},
		{
			name:    "typed handler, allow once",
			tool:    "act_typed",
			answers: []*mcp.ElicitResult{decision(permission.AllowOnce)},
			calls:   2,
			want:    []string{`{"granted":["delete"]}`, `{"granted":["delete"]}`},
			asked:   2,
		},
		{
			name:    "typed handler, decline",
			tool:    "act_typed",
			answers: []*mcp.ElicitResult{{Action: "decline"}},
			calls:   1,
			want:    []string{"error: permission denied by the user: delete on item:42"},
			asked:   1,
		},
	}
	for _, version := range versions {
		for _, tt := range tests {
			t.Run(version+"/"+tt.name, func(t *testing.T) {
				s, e := newServer(t, permission.Options{})
				a := &asker{answers: tt.answers}
				cs := connect(t, s, version, a, nil)
				name := tt.tool
				if name == "" {
					name = "act"
				}
				var got []string
				for range tt.calls {
					got = append(got, text(t)(callAs(t, cs, "alice", name, one)))
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("outcomes (-want +got):\n%s", diff)
				}
				if a.asked() != tt.asked {
					t.Errorf("questions asked = %d, want %d", a.asked(), tt.asked)
				}
				var wantEffects int32
				for _, w := range tt.want {
					if !strings.HasPrefix(w, "error") {
						wantEffects++
					}
				}
				if got := e.effects.Load(); got != wantEffects {
					t.Errorf("side effects = %d, want %d", got, wantEffects)
				}
			})
		}
	}
}

func TestAskQuestion(t *testing.T) {
	for _, version := range versions {
		t.Run(version, func(t *testing.T) {
			s, _ := newServer(t, permission.Options{
				Rules: []permission.Rule{{Effect: authz.Allow, Subject: "item:1"}},
			})
			var got *mcp.ElicitParams
			c := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				got = req.Params
				return decision(permission.AllowOnce), nil
			}}
			cs := connect(t, s, version, nil, c)
			res, err := call(t, cs, actArgs{Subjects: []string{"item:1", "item:2", "item:3"}, Caps: []string{"read", "write"}, NoRemember: true})
			if got := outcome(t, res, err); got != "granted read,write" {
				t.Errorf("outcome = %q, want %q", got, "granted read,write")
			}
			if got == nil {
				t.Fatal("no question asked")
			}
			// Only what no rule decided is asked about.
			wantMsg := "Act?\n\nTool \"act\" asks for permission to read, write on item:2, item:3."
			if diff := cmp.Diff(wantMsg, got.Message); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
			wantSchema := map[string]any{
				"type":     "object",
				"required": []any{"decision"},
				"properties": map[string]any{
					"decision": map[string]any{"type": "string", "title": "Decision", "enum": []any{"allow once", "deny"}},
				},
			}
			if diff := cmp.Diff(wantSchema, got.RequestedSchema); diff != "" {
				t.Errorf("schema (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNoElicitation(t *testing.T) {
	for _, version := range versions {
		for _, name := range []string{"act", "act_typed"} {
			t.Run(version+"/"+name, func(t *testing.T) {
				s, e := newServer(t, permission.Options{})
				cs := connect(t, s, version, nil, nil)
				got := text(t)(callAs(t, cs, "alice", name, actArgs{Subjects: []string{"item:1"}, Caps: []string{"delete"}}))
				if want := "error: " + permission.ErrCannotAsk.Error(); got != want {
					t.Errorf("outcome = %q, want %q", got, want)
				}
				if n := e.effects.Load(); n != 0 {
					t.Errorf("side effects = %d, want 0", n)
				}
			})
		}
	}
}

// clock is a settable clock for Options.Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestRetryRefused drives the multi-round trip by hand (a 2026 client
// without the SDK's automatic retry) and sends retries that must be
// refused with -32602, never with a new question, and without the side
// effect.
func TestRetryRefused(t *testing.T) {
	args := actArgs{Subjects: []string{"item:42"}, Caps: []string{"delete"}}
	accept := mcp.InputResponseMap{permission.InputKey: decision(permission.AllowOnce)}
	tests := []struct {
		name string
		// retry returns the retried call's params, given the question's
		// request state and the test's clock.
		retry   func(state string, clk *clock) *mcp.CallToolParams
		wantMsg string
	}{
		{
			name: "tampered state",
			retry: func(state string, _ *clock) *mcp.CallToolParams {
				b := []byte(state)
				i := strings.IndexByte(state, '.') + 3
				b[i] ^= 1
				return &mcp.CallToolParams{Name: "act", Arguments: args, InputResponses: accept, RequestState: string(b)}
			},
			wantMsg: "invalid requestState",
		},
		{
			name: "forged state",
			retry: func(string, *clock) *mcp.CallToolParams {
				return &mcp.CallToolParams{Name: "act", Arguments: args, InputResponses: accept, RequestState: "v1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.AAAA"}
			},
			wantMsg: "invalid requestState: not issued for this call",
		},
		{
			name: "garbage state",
			retry: func(string, *clock) *mcp.CallToolParams {
				return &mcp.CallToolParams{Name: "act", Arguments: args, InputResponses: accept, RequestState: "hello"}
			},
			wantMsg: "invalid requestState: malformed",
		},
		{
			name: "expired state",
			retry: func(state string, clk *clock) *mcp.CallToolParams {
				clk.Add(5 * time.Minute) // the default TTL
				return &mcp.CallToolParams{Name: "act", Arguments: args, InputResponses: accept, RequestState: state}
			},
			wantMsg: "invalid requestState: expired",
		},
		{
			name: "state for another tool",
			retry: func(state string, _ *clock) *mcp.CallToolParams {
				return &mcp.CallToolParams{Name: "other", Arguments: args, InputResponses: accept, RequestState: state}
			},
			wantMsg: "invalid requestState: not issued for this call",
		},
		{
			name: "state for other arguments",
			retry: func(state string, _ *clock) *mcp.CallToolParams {
				return &mcp.CallToolParams{Name: "act", Arguments: actArgs{Subjects: []string{"item:43"}, Caps: []string{"delete"}}, InputResponses: accept, RequestState: state}
			},
			wantMsg: "invalid requestState: not issued for this call",
		},
		{
			name: "state for other arguments asking the same",
			retry: func(state string, _ *clock) *mcp.CallToolParams {
				a := args
				a.Partial = true
				return &mcp.CallToolParams{Name: "act", Arguments: a, InputResponses: accept, RequestState: state}
			},
			wantMsg: "invalid requestState: not issued for this call",
		},
		{
			name: "state for another principal",
			retry: func(state string, _ *clock) *mcp.CallToolParams {
				return &mcp.CallToolParams{Name: "act", Arguments: args, InputResponses: accept, RequestState: state, Meta: mcp.Meta{"test/principal": "mallory"}}
			},
			wantMsg: "invalid requestState: not issued for this call",
		},
		{
			name: "answer without state",
			retry: func(string, *clock) *mcp.CallToolParams {
				return &mcp.CallToolParams{Name: "act", Arguments: args, InputResponses: accept}
			},
			wantMsg: "invalid requestState: missing",
		},
		{
			name: "state without answer",
			retry: func(state string, _ *clock) *mcp.CallToolParams {
				return &mcp.CallToolParams{Name: "act", Arguments: args, RequestState: state}
			},
			wantMsg: "invalid input response: no response",
		},
		{
			name: "answer under another key",
			retry: func(state string, _ *clock) *mcp.CallToolParams {
				return &mcp.CallToolParams{Name: "act", Arguments: args, RequestState: state, InputResponses: mcp.InputResponseMap{"other": decision(permission.AllowOnce)}}
			},
			wantMsg: "invalid input response: no response",
		},
		{
			name: "answer outside the schema",
			retry: func(state string, _ *clock) *mcp.CallToolParams {
				return &mcp.CallToolParams{Name: "act", Arguments: args, RequestState: state, InputResponses: mcp.InputResponseMap{permission.InputKey: decision("yes, all of them")}}
			},
			wantMsg: `invalid input response: "decision" must be one of`,
		},
		{
			name: "answer with extra fields",
			retry: func(state string, _ *clock) *mcp.CallToolParams {
				r := &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": permission.AllowOnce, "scope": "all"}}
				return &mcp.CallToolParams{Name: "act", Arguments: args, RequestState: state, InputResponses: mcp.InputResponseMap{permission.InputKey: r}}
			},
			wantMsg: "invalid input response: content must hold exactly one field",
		},
		{
			name: "accept without content",
			retry: func(state string, _ *clock) *mcp.CallToolParams {
				r := &mcp.ElicitResult{Action: "accept"}
				return &mcp.CallToolParams{Name: "act", Arguments: args, RequestState: state, InputResponses: mcp.InputResponseMap{permission.InputKey: r}}
			},
			wantMsg: "invalid input response: content must hold exactly one field",
		},
		{
			name: "unknown action",
			retry: func(state string, _ *clock) *mcp.CallToolParams {
				r := &mcp.ElicitResult{Action: "sure"}
				return &mcp.CallToolParams{Name: "act", Arguments: args, RequestState: state, InputResponses: mcp.InputResponseMap{permission.InputKey: r}}
			},
			wantMsg: `invalid input response: unknown action "sure"`,
		},
		{
			name: "answer of another kind",
			retry: func(state string, _ *clock) *mcp.CallToolParams {
				r := &mcp.ListRootsResult{Roots: []*mcp.Root{}}
				return &mcp.CallToolParams{Name: "act", Arguments: args, RequestState: state, InputResponses: mcp.InputResponseMap{permission.InputKey: r}}
			},
			wantMsg: "invalid input response: the response under",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := &clock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
			s, e := newServer(t, permission.Options{Now: clk.Now})
			cs := connect(t, s, v2026, &asker{answers: []*mcp.ElicitResult{decision(permission.AllowOnce)}},
				&mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}})
			q, err := call(t, cs, args)
			if err != nil {
				t.Fatal(err)
			}
			if !q.NeedsInput() || q.RequestState == "" || q.InputRequests[permission.InputKey] == nil || len(q.Content) != 0 {
				t.Fatalf("first round = %+v, want an input_required result with a question, a state and no content", q)
			}
			p := tt.retry(q.RequestState, clk)
			if p.Meta == nil {
				p.Meta = mcp.Meta{"test/principal": "alice"}
			}
			res, err := cs.CallTool(t.Context(), p)
			wantProtocolError(t, res, err, tt.wantMsg)
			if n := e.effects.Load(); n != 0 {
				t.Errorf("side effects = %d, want 0", n)
			}
		})
	}
}

// allowOnceRetry is alice's retry of "act" with args, answering the
// question q with "allow once".
func allowOnceRetry(args actArgs, q *mcp.CallToolResult) *mcp.CallToolParams {
	return &mcp.CallToolParams{
		Name:           "act",
		Arguments:      args,
		Meta:           mcp.Meta{"test/principal": "alice"},
		InputResponses: mcp.InputResponseMap{permission.InputKey: decision(permission.AllowOnce)},
		RequestState:   q.RequestState,
	}
}

func wantProtocolError(t *testing.T, res *mcp.CallToolResult, err error, wantMsg string) {
	t.Helper()
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		t.Fatalf("CallTool = %+v, %v; want a -32602 protocol error", res, err)
	}
	if werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, wantMsg) {
		t.Errorf("error = %d %q, want %d containing %q", werr.Code, werr.Message, jsonrpc.CodeInvalidParams, wantMsg)
	}
}

func TestRetryReplayed(t *testing.T) {
	args := actArgs{Subjects: []string{"item:42"}, Caps: []string{"delete"}}
	s, e := newServer(t, permission.Options{})
	cs := connect(t, s, v2026, &asker{answers: []*mcp.ElicitResult{decision(permission.AllowOnce)}},
		&mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}})
	q, err := call(t, cs, args)
	if err != nil || !q.NeedsInput() {
		t.Fatalf("first round = %+v, %v; want input_required", q, err)
	}
	retry := allowOnceRetry(args, q)
	if got := text(t)(cs.CallTool(t.Context(), retry)); got != "granted delete" {
		t.Fatalf("retry = %q, want %q", got, "granted delete")
	}
	for range 2 {
		res, err := cs.CallTool(t.Context(), retry)
		wantProtocolError(t, res, err, "invalid requestState: already used")
	}
	if n := e.effects.Load(); n != 1 {
		t.Errorf("side effects = %d, want 1", n)
	}
}

// TestStateFromAnotherChecker checks that states are bound to the key:
// a checker with another key (another process) refuses them.
func TestStateFromAnotherChecker(t *testing.T) {
	args := actArgs{Subjects: []string{"item:42"}, Caps: []string{"delete"}}
	key := []byte(strings.Repeat("k", 32))
	noAuto := &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}
	ask := &asker{answers: []*mcp.ElicitResult{decision(permission.AllowOnce)}}

	s1, _ := newServer(t, permission.Options{Key: key})
	q, err := call(t, connect(t, s1, v2026, ask, noAuto), args)
	if err != nil || !q.NeedsInput() {
		t.Fatalf("first round = %+v, %v; want input_required", q, err)
	}
	retry := allowOnceRetry(args, q)
	// Another checker, random key: refused.
	s2, e2 := newServer(t, permission.Options{})
	res, err := connect(t, s2, v2026, ask, noAuto).CallTool(t.Context(), retry)
	wantProtocolError(t, res, err, "not issued for this call")
	// A replica sharing the key: accepted.
	s3, e3 := newServer(t, permission.Options{Key: key})
	if got := text(t)(connect(t, s3, v2026, ask, noAuto).CallTool(t.Context(), retry)); got != "granted delete" {
		t.Errorf("replica retry = %q, want %q", got, "granted delete")
	}
	if e2.effects.Load() != 0 || e3.effects.Load() != 1 {
		t.Errorf("side effects = %d and %d, want 0 and 1", e2.effects.Load(), e3.effects.Load())
	}
}

// TestReplicasShareNonces: replicas sharing a key and a NonceStore
// accept an answer once, wherever it lands; a replay on another replica
// is refused like a replay on the same one.
func TestReplicasShareNonces(t *testing.T) {
	args := actArgs{Subjects: []string{"item:42"}, Caps: []string{"delete"}}
	key := []byte(strings.Repeat("k", 32))
	nonces := permission.NewNonceStore(0)
	noAuto := &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}
	ask := &asker{answers: []*mcp.ElicitResult{decision(permission.AllowOnce)}}

	s1, e1 := newServer(t, permission.Options{Key: key, Nonces: nonces})
	s2, e2 := newServer(t, permission.Options{Key: key, Nonces: nonces})
	cs1, cs2 := connect(t, s1, v2026, ask, noAuto), connect(t, s2, v2026, ask, noAuto)
	q, err := call(t, cs1, args)
	if err != nil || !q.NeedsInput() {
		t.Fatalf("first round = %+v, %v; want input_required", q, err)
	}
	retry := allowOnceRetry(args, q)
	if got := text(t)(cs2.CallTool(t.Context(), retry)); got != "granted delete" {
		t.Fatalf("answer on the other replica = %q, want %q", got, "granted delete")
	}
	for _, cs := range []*mcp.ClientSession{cs1, cs2} {
		res, err := cs.CallTool(t.Context(), retry)
		wantProtocolError(t, res, err, "invalid requestState: already used")
	}
	if n := e1.effects.Load() + e2.effects.Load(); n != 1 {
		t.Errorf("side effects = %d, want 1", n)
	}
}

// nonceOutage is a NonceStore whose backend is down.
type nonceOutage struct{}

func (nonceOutage) Spend(context.Context, string, time.Time) error {
	return errors.New("dial tcp 10.0.0.7:6379: connection refused")
}

// TestNonceStoreOutage: when the replay guard cannot answer, the answer
// is refused with a fixed tool error (the cause stays on the server) and
// nothing is granted.
func TestNonceStoreOutage(t *testing.T) {
	args := actArgs{Subjects: []string{"item:42"}, Caps: []string{"delete"}}
	for _, tt := range []struct {
		name string
		h    string
	}{{"Require", "act"}, {"Check", "act_typed"}} {
		t.Run(tt.name, func(t *testing.T) {
			s, e := newServer(t, permission.Options{Nonces: nonceOutage{}})
			cs := connect(t, s, v2026, &asker{answers: []*mcp.ElicitResult{decision(permission.AllowOnce)}}, nil)
			res, err := callAs(t, cs, "alice", tt.h, args)
			got := outcome(t, res, err)
			if want := "error: permission: cannot check permissions now; nothing was granted; try again later"; got != want {
				t.Errorf("outcome = %q, want %q", got, want)
			}
			if e.effects.Load() != 0 {
				t.Errorf("side effects = %d, want 0", e.effects.Load())
			}
		})
	}
	var se *permission.StoreError
	if err := error(&permission.StoreError{Err: errors.ErrUnsupported}); !errors.As(err, &se) || !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("StoreError does not unwrap to its cause")
	}
}

// TestAlwaysIsPerPrincipal checks that a remembered answer is one
// principal's: another principal is asked.
func TestAlwaysIsPerPrincipal(t *testing.T) {
	for _, version := range versions {
		t.Run(version, func(t *testing.T) {
			s, e := newServer(t, permission.Options{})
			a := &asker{answers: []*mcp.ElicitResult{decision(permission.AllowAlways), decision(permission.DenyOnce)}}
			cs := connect(t, s, version, a, nil)
			args := actArgs{Subjects: []string{"item:42"}, Caps: []string{"delete"}}
			got := []string{
				text(t)(callAs(t, cs, "alice", "act", args)),
				text(t)(callAs(t, cs, "alice", "act", args)),
				text(t)(callAs(t, cs, "bob", "act", args)),
				text(t)(callAs(t, cs, "alice", "other", args)),
			}
			want := []string{
				"granted delete",
				"granted delete",
				"error: permission denied by the user: delete on item:42",
				"error: permission denied by the user: delete on item:42",
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
			if a.asked() != 3 || e.effects.Load() != 2 {
				t.Errorf("asked %d times with %d side effects, want 3 and 2", a.asked(), e.effects.Load())
			}
		})
	}
}

// TestStatelessHTTP runs the tool behind a stateless streamable HTTP
// handler: a 2026 client is asked through input_required; a 2025 client
// cannot be asked (the server cannot send it a request) and is refused
// cleanly, with no side effect.
func TestStatelessHTTP(t *testing.T) {
	tests := []struct {
		version string
		want    string
		asked   int
		effects int32
	}{
		{v2026, "granted delete", 1, 1},
		{v2025, "error: " + permission.ErrCannotAsk.Error(), 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			s, e := newServer(t, permission.Options{})
			h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
			srv := httptest.NewServer(h)
			t.Cleanup(srv.Close)
			a := &asker{answers: []*mcp.ElicitResult{decision(permission.AllowOnce)}}
			c := mcp.NewClient(&mcp.Implementation{Name: "http-client", Version: "v0"}, &mcp.ClientOptions{ElicitationHandler: a.handle})
			cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: tt.version})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })
			got := text(t)(call(t, cs, actArgs{Subjects: []string{"item:42"}, Caps: []string{"delete"}}))
			if got != tt.want {
				t.Errorf("outcome = %q, want %q", got, tt.want)
			}
			if a.asked() != tt.asked || e.effects.Load() != tt.effects {
				t.Errorf("asked %d times with %d side effects, want %d and %d", a.asked(), e.effects.Load(), tt.asked, tt.effects)
			}
		})
	}
}

// TestAnswerCoversOnlyWhatWasAsked checks that an answer applies only to
// what its question listed: a pair that a remembered rule decided when
// asked, but that is undecided on retry (the rule was forgotten since),
// is denied, not silently covered by the answer.
func TestAnswerCoversOnlyWhatWasAsked(t *testing.T) {
	s, e := newServer(t, permission.Options{MaxRemembered: 1})
	a := &asker{answers: []*mcp.ElicitResult{decision(permission.AllowAlways)}}
	noAuto := connect(t, s, v2026, a, &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}})
	auto := connect(t, s, v2026, a, nil)

	// alice always allows read on item:1.
	if got := text(t)(call(t, auto, actArgs{Subjects: []string{"item:1"}, Caps: []string{"read"}})); got != "granted read" {
		t.Fatalf("first call = %q", got)
	}
	// A call on item:1 and item:2 asks about item:2 only.
	args := actArgs{Subjects: []string{"item:1", "item:2"}, Caps: []string{"read"}}
	q, err := call(t, noAuto, args)
	if err != nil || !q.NeedsInput() {
		t.Fatalf("question = %+v, %v; want input_required", q, err)
	}
	if msg := q.InputRequests[permission.InputKey].(*mcp.ElicitParams).Message; !strings.HasSuffix(msg, "read on item:2.") {
		t.Errorf("question = %q, want it about item:2 only", msg)
	}
	// Meanwhile alice's rule for item:1 is forgotten (MaxRemembered 1).
	if got := text(t)(call(t, auto, actArgs{Subjects: []string{"item:3"}, Caps: []string{"read"}})); got != "granted read" {
		t.Fatalf("third call = %q", got)
	}
	res, err := noAuto.CallTool(t.Context(), allowOnceRetry(args, q))
	if got, want := outcome(t, res, err), "error: permission denied: read on item:1, item:2"; got != want {
		t.Errorf("retry = %q, want %q", got, want)
	}
	if n := e.effects.Load(); n != 2 {
		t.Errorf("side effects = %d, want 2", n)
	}
}

// TestStateless2025ClaimingCapabilities: a 2025 client over stateless
// HTTP cannot be asked (the SDK has no session to send elicitation/create
// on), even when its request's _meta claims elicitation as a 2026 client's
// would: it gets the clean ErrCannotAsk tool error, not a protocol error
// from the SDK's failed attempt, and nothing happens.
func TestStateless2025ClaimingCapabilities(t *testing.T) {
	s, e := newServer(t, permission.Options{})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)
	a := &asker{answers: []*mcp.ElicitResult{decision(permission.AllowOnce)}}
	c := mcp.NewClient(&mcp.Implementation{Name: "http-client", Version: "v0"}, &mcp.ClientOptions{ElicitationHandler: a.handle})
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: v2025})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "act", Arguments: actArgs{Subjects: []string{"item:42"}, Caps: []string{"delete"}},
		Meta: mcp.Meta{"test/principal": "alice", mcp.MetaKeyClientCapabilities: map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}}})
	if got, want := outcome(t, res, err), "error: "+permission.ErrCannotAsk.Error(); got != want {
		t.Errorf("outcome = %q, want %q", got, want)
	}
	if e.effects.Load() != 0 || a.asked() != 0 {
		t.Errorf("side effects %d, questions %d; want none", e.effects.Load(), a.asked())
	}
}

// TestQuestionSizeBound: a question's request state holds a bit per
// (subject, capability) pair and must fit the bound on states. A
// question of 24,000 pairs (the most one call may ask about) is asked and answered; a larger one is
// refused with a tool error before the user is asked (it used to be
// asked, and its answer refused as malformed).
func TestQuestionSizeBound(t *testing.T) {
	subjects := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("i:%d", i))
		}
		return out
	}
	caps := []string{"read", "delete"}
	s, e := newServer(t, permission.Options{})
	a := &asker{answers: []*mcp.ElicitResult{decision(permission.AllowOnce)}}
	cs := connect(t, s, v2026, a, nil)
	if got := text(t)(call(t, cs, actArgs{Subjects: subjects(24_000 / 2), Caps: caps})); got != "granted delete,read" {
		t.Errorf("a question of 24,000 pairs (the most one call may ask about): %q, want both granted", got)
	}
	if a.asked() != 1 || e.effects.Load() != 1 {
		t.Fatalf("questions %d, side effects %d; want 1 and 1", a.asked(), e.effects.Load())
	}
	// 25,000 pairs: a state of more than 4,096 characters.
	got := text(t)(call(t, cs, actArgs{Subjects: subjects(12_500), Caps: caps}))
	if want := "error: permission: a question about 25000 (subject, capability) pairs is too large"; !strings.HasPrefix(got, want) {
		t.Errorf("a larger question: %q, want %q...", got, want)
	}
	if a.asked() != 1 || e.effects.Load() != 1 {
		t.Errorf("questions %d, side effects %d; want no new ones", a.asked(), e.effects.Load())
	}
}

// TestParallelRetriesOneWins: eight retries of one answered state, sent at
// once from eight sessions, for both kinds of handler: exactly one is
// granted, the others are refused as replays, and the side effect
// happens once.
func TestParallelRetriesOneWins(t *testing.T) {
	args := actArgs{Subjects: []string{"item:42"}, Caps: []string{"delete"}}
	noAuto := &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}
	for _, name := range []string{"act", "act_typed"} {
		t.Run(name, func(t *testing.T) {
			s, e := newServer(t, permission.Options{})
			ask := &asker{answers: []*mcp.ElicitResult{decision(permission.AllowOnce)}}
			q, err := callAs(t, connect(t, s, v2026, ask, noAuto), "alice", name, args)
			if err != nil || !q.NeedsInput() {
				t.Fatalf("first round = %+v, %v; want input_required", q, err)
			}
			var sessions []*mcp.ClientSession
			for range 8 {
				sessions = append(sessions, connect(t, s, v2026, ask, noAuto))
			}
			var (
				wg            sync.WaitGroup
				mu            sync.Mutex
				oks, replayed int
			)
			for _, cs := range sessions {
				wg.Go(func() {
					r := allowOnceRetry(args, q)
					r.Name = name
					res, err := cs.CallTool(t.Context(), r)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil && !res.IsError:
						oks++
					case err != nil && strings.Contains(err.Error(), "already used"):
						replayed++
					}
				})
			}
			wg.Wait()
			if oks != 1 || replayed != 7 || e.effects.Load() != 1 {
				t.Errorf("granted %d, refused as replays %d, side effects %d; want 1, 7, 1", oks, replayed, e.effects.Load())
			}
		})
	}
}

// TestReplicasShareAnswers: replicas sharing an AnswerStore honour an
// "always" answer given on either one; with a store each, the other
// replica asks again.
func TestReplicasShareAnswers(t *testing.T) {
	args := actArgs{Subjects: []string{"item:42"}, Caps: []string{"delete"}}
	for _, shared := range []bool{true, false} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			store := permission.NewAnswerStore(0)
			other := store
			if !shared {
				other = nil // the default: one in memory per Checker
			}
			a := &asker{answers: []*mcp.ElicitResult{decision(permission.AllowAlways), decision(permission.DenyOnce)}}
			s1, _ := newServer(t, permission.Options{Answers: store})
			s2, _ := newServer(t, permission.Options{Answers: other})
			if got := text(t)(call(t, connect(t, s1, v2026, a, nil), args)); got != "granted delete" {
				t.Fatalf("first replica = %q", got)
			}
			want := "granted delete"
			if !shared {
				want = "error: permission denied by the user: delete on item:42"
			}
			if got := text(t)(call(t, connect(t, s2, v2026, a, nil), args)); got != want {
				t.Errorf("second replica = %q, want %q", got, want)
			}
			if n, want := a.asked(), map[bool]int{true: 1, false: 2}[shared]; n != want {
				t.Errorf("asked %d times, want %d", n, want)
			}
		})
	}
}

// brokenAnswers is an AnswerStore whose Recall or Remember fails, over
// a working in-memory store.
type brokenAnswers struct {
	permission.AnswerStore
	recall, remember atomic.Bool
}

var errStoreDown = errors.New("dial tcp 10.0.0.7:6379: connection refused")

func (b *brokenAnswers) Recall(ctx context.Context, principal, tool string, subjects []string) ([]map[string]authz.Effect, error) {
	if b.recall.Load() {
		return nil, errStoreDown
	}
	return b.AnswerStore.Recall(ctx, principal, tool, subjects)
}

func (b *brokenAnswers) Remember(ctx context.Context, answers []permission.Answer) error {
	if b.remember.Load() {
		return errStoreDown
	}
	return b.AnswerStore.Remember(ctx, answers)
}

// TestAnswerStoreOutage: an AnswerStore that cannot answer fails the call
// closed with the fixed StoreError text — before asking, and when an
// "always" answer cannot be remembered — and rules still decide without
// it.
func TestAnswerStoreOutage(t *testing.T) {
	args := actArgs{Subjects: []string{"item:42"}, Caps: []string{"delete"}}
	const storeDown = "error: permission: cannot check permissions now; nothing was granted; try again later"
	store := &brokenAnswers{AnswerStore: permission.NewAnswerStore(0)}
	a := &asker{answers: []*mcp.ElicitResult{decision(permission.AllowAlways)}}
	s, e := newServer(t, permission.Options{
		Answers: store,
		Rules:   []permission.Rule{{Effect: authz.Allow, Subject: "item:ruled"}},
	})
	cs := connect(t, s, v2026, a, nil)

	store.remember.Store(true)
	if got := text(t)(call(t, cs, args)); got != storeDown {
		t.Errorf("allow always, not remembered = %q, want %q", got, storeDown)
	}
	store.remember.Store(false)
	store.recall.Store(true)
	if got := text(t)(call(t, cs, args)); got != storeDown {
		t.Errorf("recall failing = %q, want %q", got, storeDown)
	}
	if got := text(t)(call(t, cs, actArgs{Subjects: []string{"item:ruled"}, Caps: []string{"delete"}})); got != "granted delete" {
		t.Errorf("decided by a rule while the store is down = %q", got)
	}
	if n := a.asked(); n != 1 {
		t.Errorf("asked %d times, want 1 (never while the store is down)", n)
	}
	if n := e.effects.Load(); n != 1 {
		t.Errorf("side effects = %d, want 1 (the ruled call)", n)
	}
	store.recall.Store(false)
	if got := text(t)(call(t, cs, args)); got != "granted delete" || a.asked() != 2 {
		t.Errorf("store back: %q after %d questions; want granted after asking again", got, a.asked())
	}
}

func TestReadKeyFile(t *testing.T) {
	dir := t.TempDir()
	key := strings.Repeat("k", 32)
	for _, tt := range []struct {
		name, content, want, err string
	}{
		{"exact", key, key, ""},
		{"trailing newline", key + "\n", key, ""},
		{"trailing CRLF", key + "\r\n", key, ""},
		{"inner newlines kept", "\n" + key[:31] + "\n", "\n" + key[:31], ""},
		{"short", key[:31] + "\n", "", "31 bytes long, at least 32 are needed"},
		{"empty", "", "", "0 bytes long"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_"))
			os.WriteFile(path, []byte(tt.content), 0o600)
			got, err := permission.ReadKeyFile(path)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("ReadKeyFile = %q, %v; want an error containing %q", got, err, tt.err)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Errorf("ReadKeyFile = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if _, err := permission.ReadKeyFile(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "permission: state key: ") {
		t.Errorf("missing file: %v", err)
	}
}

// TestDeniedIsAuthzDenied: a refusal of capabilities is toolroute's one
// DeniedError (so that the server and telemetry classify it "denied",
// as an authorizer's), with the text the client has always been shown.
func TestDeniedIsAuthzDenied(t *testing.T) {
	perms := permission.New(permission.Options{Principal: principal, Rules: []permission.Rule{{Effect: authz.Deny, Capability: "write"}}})
	errs := make(chan error, 1)
	reg := registry.New[*permission.Checker]()
	reg.Register(tool.Tool[*permission.Checker]{
		Name: "act", Description: "Act.", Local: true, Behaviour: behaviour.Destructive,
		Handler: tool.HandleResult(func(ctx context.Context, p *permission.Checker, req *mcp.CallToolRequest, in actArgs) (*mcp.CallToolResult, error) {
			_, err := p.Check(ctx, req, in.request())
			errs <- err
			return nil, err
		}),
	})
	s := mcp.NewServer(&mcp.Implementation{Name: "permission-test", Version: "v0"}, nil)
	reg.Install(s, perms)
	cs := connect(t, s, "2025-11-25", &asker{answers: []*mcp.ElicitResult{decision(permission.DenyOnce)}}, nil)
	if got := text(t)(call(t, cs, actArgs{Subjects: []string{"item:1"}, Caps: []string{"write"}})); got != "error: permission denied: write on item:1" {
		t.Errorf("client saw %q", got)
	}
	var de *authz.DeniedError
	if err := <-errs; !errors.As(err, &de) || de.Route != (tool.Route{}) || de.ClientText() != "permission denied: write on item:1" || !strings.Contains(de.Reason, `tool "act"`) {
		t.Errorf("Check's error = %#v, want an *authz.DeniedError without a route, its text the client's, its reason naming the tool", err)
	}
}
