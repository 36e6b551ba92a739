package tasks_test

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/testing/await"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server/tasks"
	"github.com/toolroute/toolroute/tool"
)

// TestLifecycle: a TaskAlways call answers with a CreateTaskResult once
// the task is stored; tasks/get follows it from working to completed,
// with the tool's result; the terminal state never changes again.
func TestLifecycle(t *testing.T) {
	e := newEnv(t, tasks.Options{})
	res, rerr := e.call(ada, "slow")
	if rerr != nil {
		t.Fatalf("tools/call: %+v", rerr)
	}
	id, _ := res["taskId"].(string)
	if !regexp.MustCompile(`^[A-Z2-7]{26}$`).MatchString(id) {
		t.Errorf("taskId %q is not 26 characters of base32 (130 random bits)", id)
	}
	for _, k := range []string{"createdAt", "lastUpdatedAt"} {
		if _, err := time.Parse(time.RFC3339, res[k].(string)); err != nil {
			t.Errorf("%s %q is not ISO 8601: %v", k, res[k], err)
		}
	}
	delete(res, "createdAt")
	delete(res, "lastUpdatedAt")
	delete(res, "_meta")
	want := map[string]any{"resultType": "task", "taskId": id, "status": "working", "ttlMs": float64(3_600_000), "pollIntervalMs": float64(1000)}
	if d := cmp.Diff(want, res); d != "" {
		t.Errorf("CreateTaskResult (-want +got):\n%s", d)
	}
	await.Recv(t, e.deps.started, "the handler's start")

	got, rerr := e.get(ada, id)
	if rerr != nil {
		t.Fatalf("tasks/get: %+v", rerr)
	}
	if got["resultType"] != "complete" || got["status"] != "working" || got["result"] != nil {
		t.Errorf("tasks/get while working = %v", got)
	}

	close(e.deps.release)
	done := e.until(ada, id, "completed")
	if s := resultText(done["result"]); s != `{"text":"slow done"}` {
		t.Errorf("completed result text = %q", s)
	}
	if done["resultType"] != "complete" {
		t.Errorf("resultType = %v, want complete", done["resultType"])
	}
	// Terminal: a cancellation is acknowledged and changes nothing.
	ack, rerr := e.rpc(ada, "tasks/cancel", map[string]any{"taskId": id})
	if rerr != nil || ack["resultType"] != "complete" {
		t.Fatalf("tasks/cancel of a completed task = %v, %+v", ack, rerr)
	}
	again, _ := e.get(ada, id)
	if again["status"] != "completed" || resultText(again["result"]) != `{"text":"slow done"}` {
		t.Errorf("after tasks/cancel the completed task is %v", again)
	}
}

// TestIDsDistinct: every task gets its own id.
func TestIDsDistinct(t *testing.T) {
	e := newEnv(t, tasks.Options{})
	close(e.deps.release)
	seen := map[string]bool{}
	for range 20 {
		id := e.create(ada, "slow")
		if seen[id] {
			t.Fatalf("id %s given twice", id)
		}
		seen[id] = true
	}
}

// TestNoExtensionNoChange: a client that does not declare the extension
// on its request (or declares it under a 2025 version) gets the
// synchronous answer, and so does every client of a tool without a task
// setting, or of a TaskAllowed tool that answers in time.
func TestNoExtensionNoChange(t *testing.T) {
	e := newEnv(t, tasks.Options{})
	close(e.deps.release)
	tests := []struct {
		name string
		c    client
		tool string
	}{
		{"undeclared", adaPlain, "slow"},
		{"declared under 2025-11-25", client{token: "tok-ada", declares: true, version: "2025-11-25"}, "slow"},
		{"no task setting", ada, "plain"},
		{"allowed and quick", ada, "fast"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, rerr := e.call(tt.c, tt.tool)
			if rerr != nil {
				t.Fatalf("tools/call: %+v", rerr)
			}
			if res["resultType"] == "task" || res["taskId"] != nil {
				t.Fatalf("got a task: %v", res)
			}
			if res["content"] == nil {
				t.Errorf("no CallToolResult: %v", res)
			}
		})
	}
}

// TestAllowedBecomesTask: a TaskAllowed call still running after
// TaskAfter becomes a task, whose handler keeps running.
func TestAllowedBecomesTask(t *testing.T) {
	e := newEnv(t, tasks.Options{})
	id := e.create(ada, "maybe")
	await.Recv(t, e.deps.started, "the handler's start")
	close(e.deps.release)
	if s := resultText(e.until(ada, id, "completed")["result"]); s != `{"text":"maybe done"}` {
		t.Errorf("result %q", s)
	}
}

// TestMissingCapability: a task method from a client that did not
// declare the extension gets the SEP's -32021 naming it.
func TestMissingCapability(t *testing.T) {
	e := newEnv(t, tasks.Options{})
	close(e.deps.release)
	id := e.create(ada, "slow")
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		_, rerr := e.rpc(adaPlain, m, map[string]any{"taskId": id, "inputResponses": map[string]any{}})
		if rerr == nil || rerr.Code != -32021 {
			t.Fatalf("%s without the extension: error %+v, want -32021", m, rerr)
		}
		if want := `{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`; string(rerr.Data) != want {
			t.Errorf("%s: data %s, want %s", m, rerr.Data, want)
		}
	}
}

// TestBoundToCaller: another caller's task id, an unknown one, and one
// whose tool its caller may no longer see answer alike, for every
// method; another caller's cancellation reaches nothing.
func TestBoundToCaller(t *testing.T) {
	e := newEnv(t, tasks.Options{})
	slow := e.create(ada, "slow")
	await.Recv(t, e.deps.started, "the handler's start")
	report := e.create(ada, "report")
	e.until(ada, report, "completed")
	revoked := client{token: "tok-ada-revoked", declares: true}

	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		_, unknown := e.rpc(ada, m, map[string]any{"taskId": "AAAAAAAAAAAAAAAAAAAAAAAAAA", "inputResponses": map[string]any{}})
		if unknown == nil || unknown.Code != -32602 {
			t.Fatalf("%s of an unknown id: %+v, want -32602", m, unknown)
		}
		cases := []struct {
			who string
			c   client
			id  string
		}{
			{"another caller", bob, slow},
			{"another caller, completed", bob, report},
			{"the caller without the tool's rights", revoked, report},
		}
		for _, tc := range cases {
			_, rerr := e.rpc(tc.c, m, map[string]any{"taskId": tc.id, "inputResponses": map[string]any{}})
			if d := cmp.Diff(unknown, rerr); d != "" {
				t.Errorf("%s by %s: answer differs from an unknown id's (-unknown +got):\n%s", m, tc.who, d)
			}
		}
	}
	select {
	case err := <-e.deps.ended:
		t.Fatalf("bob's tasks/cancel ended ada's handler: %v", err)
	default:
	}
	close(e.deps.release)
	e.until(ada, slow, "completed")
}

// TestCancel: tasks/cancel ends the handler's context, and the task ends
// cancelled, for good.
func TestCancel(t *testing.T) {
	e := newEnv(t, tasks.Options{})
	id := e.create(ada, "slow")
	await.Recv(t, e.deps.started, "the handler's start")
	if ack, rerr := e.rpc(ada, "tasks/cancel", map[string]any{"taskId": id}); rerr != nil || ack["resultType"] != "complete" {
		t.Fatalf("tasks/cancel = %v, %+v", ack, rerr)
	}
	if err := await.Recv(t, e.deps.ended, "the handler's context's end"); err == nil {
		t.Fatal("the handler's context ended without a cause")
	}
	got := e.until(ada, id, "cancelled")
	if got["result"] != nil || got["error"] != nil {
		t.Errorf("a cancelled task carries a payload: %v", got)
	}
	close(e.deps.release)
	if again, _ := e.get(ada, id); again["status"] != "cancelled" {
		t.Errorf("the cancelled task became %v", again["status"])
	}
}

// TestInputRequired: authz/permission's question inside a task puts it
// in input_required, with the question under a key unique to the task;
// tasks/update's answer runs the handler again, which completes.
func TestInputRequired(t *testing.T) {
	e := newEnv(t, tasks.Options{})
	id := e.create(ada, "confirm")
	got := e.until(ada, id, "input_required")
	reqs, _ := got["inputRequests"].(map[string]any)
	q, _ := reqs["1.permission"].(map[string]any)
	if q["method"] != "elicitation/create" {
		t.Fatalf("inputRequests = %v, want the permission question under 1.permission", got["inputRequests"])
	}
	if got["statusMessage"] != "Delete item 1?" {
		t.Errorf("statusMessage = %q", got["statusMessage"])
	}
	// A key that is not outstanding is ignored.
	if _, rerr := e.rpc(ada, "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
		"permission": map[string]any{"action": "accept", "content": map[string]any{"decision": "allow once"}},
	}}); rerr != nil {
		t.Fatalf("tasks/update with a stale key: %+v", rerr)
	}
	if again, _ := e.get(ada, id); again["status"] != "input_required" {
		t.Fatalf("a response under a key never issued moved the task to %v", again["status"])
	}
	ack, rerr := e.rpc(ada, "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
		"1.permission": map[string]any{"action": "accept", "content": map[string]any{"decision": "allow once"}},
	}})
	if rerr != nil || ack["resultType"] != "complete" {
		t.Fatalf("tasks/update = %v, %+v", ack, rerr)
	}
	done := e.until(ada, id, "completed")
	if s := resultText(done["result"]); s != `{"text":"deleted"}` {
		t.Errorf("result %q, want the confirmed deletion", s)
	}
	if n := e.deps.runs.Load(); n != 2 {
		t.Errorf("the handler ran %d times, want 2 (the question, the answer)", n)
	}
}

// TestInputRequiredDenied: a "deny" answer completes the task with the
// tool's refusal, an isError result (a tool error is not a failure).
func TestInputRequiredDenied(t *testing.T) {
	e := newEnv(t, tasks.Options{})
	id := e.create(ada, "confirm")
	e.until(ada, id, "input_required")
	e.rpc(ada, "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
		"1.permission": map[string]any{"action": "accept", "content": map[string]any{"decision": "deny"}},
	}})
	done := e.until(ada, id, "completed")
	if r, _ := done["result"].(map[string]any); r["isError"] != true {
		t.Errorf("result %v, want an isError result", done["result"])
	}
}

// TestFailedAndToolError: a JSON-RPC error fails the task with it; a
// tool error completes it with the isError result.
func TestFailedAndToolError(t *testing.T) {
	e := newEnv(t, tasks.Options{})
	failed := e.until(ada, e.create(ada, "boom"), "failed")
	want := map[string]any{"code": float64(-32001), "message": "rate limit of the upstream exceeded"}
	if d := cmp.Diff(want, failed["error"]); d != "" {
		t.Errorf("failed task's error (-want +got):\n%s", d)
	}
	if failed["statusMessage"] != "rate limit of the upstream exceeded" {
		t.Errorf("statusMessage %v", failed["statusMessage"])
	}
	done := e.until(ada, e.create(ada, "oops"), "completed")
	if r, _ := done["result"].(map[string]any); r["isError"] != true || resultText(r) != "invalid input" {
		t.Errorf("tool error's task result = %v", done["result"])
	}
}

// TestMcpName: over HTTP, an Mcp-Name header that is not the taskId is
// refused with -32020.
func TestMcpName(t *testing.T) {
	e := newEnv(t, tasks.Options{})
	close(e.deps.release)
	id := e.create(ada, "slow")
	_, rerr := e.rpcHeader(ada, "tasks/get", map[string]any{"taskId": id}, "ANOTHERTASKID")
	if rerr == nil || rerr.Code != -32020 {
		t.Fatalf("tasks/get with a wrong Mcp-Name: %+v, want -32020", rerr)
	}
	if _, rerr := e.get(ada, id); rerr != nil {
		t.Fatalf("tasks/get with the right Mcp-Name: %+v", rerr)
	}
}

// TestDiscover: server/discover advertises the extension on a server
// with a task-capable tool, and not on one without.
func TestDiscover(t *testing.T) {
	plain := registry.New[*deps]()
	plain.Register(tool.Tool[*deps]{
		Name: "plain", Description: "No task setting.", Local: true, Behaviour: behaviour.ReadOnly,
		Handler: tool.Handle(func(context.Context, *deps, *mcp.CallToolRequest, noArgs) (text, error) {
			return text{Text: "plain"}, nil
		}),
	})
	for _, tt := range []struct {
		name string
		reg  *registry.Registry[*deps]
		want bool
	}{{"task-capable tools", newRegistry(), true}, {"none", plain, false}} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnvWith(t, tasks.Options{}, tt.reg)
			res, rerr := e.rpc(adaPlain, "server/discover", nil)
			if rerr != nil {
				t.Fatalf("server/discover: %+v", rerr)
			}
			caps, _ := res["capabilities"].(map[string]any)
			ext, _ := caps["extensions"].(map[string]any)
			if _, ok := ext[tasks.Extension]; ok != tt.want {
				t.Errorf("capabilities %v: advertise %s = %v, want %v", caps, tasks.Extension, ok, tt.want)
			}
		})
	}
}

// TestCaps: past the per-caller and global caps a TaskAlways call gets
// CodeTooManyTasks with retryAfterMs, and the caps count running tasks
// only.
func TestCaps(t *testing.T) {
	e := newEnv(t, tasks.Options{MaxPerCaller: 1, MaxRunning: 2})
	e.create(ada, "slow")
	await.Recv(t, e.deps.started, "the first handler's start")
	_, rerr := e.call(ada, "slow")
	if rerr == nil || rerr.Code != tasks.CodeTooManyTasks || string(rerr.Data) != `{"retryAfterMs":1000}` {
		t.Fatalf("ada's second task: %+v, want CodeTooManyTasks with retryAfterMs", rerr)
	}
	e.create(bob, "slow") // bob's own cap
	await.Recv(t, e.deps.started, "bob's handler's start")
	carol := client{token: "tok-carol", declares: true}
	if _, rerr := e.call(carol, "slow"); rerr == nil || rerr.Code != tasks.CodeTooManyTasks || !strings.Contains(rerr.Message, "server's limit") {
		t.Fatalf("a third task past the global cap: %+v", rerr)
	}
	// A TaskAllowed call over the cap stays synchronous. Only its own
	// run is let finish: the capped tasks keep their slots.
	go func() {
		<-e.deps.started
		close(e.deps.maybe)
	}()
	res, rerr := e.call(ada, "maybe")
	if rerr != nil || res["resultType"] == "task" {
		t.Fatalf("a TaskAllowed call over the cap = %v, %+v; want its synchronous answer", res, rerr)
	}
}

// TestResultBound: a result larger than MaxResultBytes fails the task.
func TestResultBound(t *testing.T) {
	e := newEnv(t, tasks.Options{MaxResultBytes: 1000})
	e.deps.big = 2000
	got := e.until(ada, e.create(ada, "big"), "failed")
	if m, _ := got["error"].(map[string]any); m["code"] != float64(-32603) || got["result"] != nil {
		t.Errorf("oversized result's task = %v", got)
	}
}

// TestShutdown: Shutdown waits for running tasks; once its context ends
// it cancels the rest and fails them; a call that would become a task
// then is refused.
func TestShutdown(t *testing.T) {
	t.Run("finishes", func(t *testing.T) {
		e := newEnv(t, tasks.Options{})
		id := e.create(ada, "slow")
		await.Recv(t, e.deps.started, "the handler's start")
		stopped := make(chan error, 1)
		go func() { stopped <- e.tasks.Shutdown(context.Background()) }()
		if _, rerr := e.call(ada, "slow"); rerr == nil {
			t.Error("a new task during shutdown was accepted")
		}
		close(e.deps.release)
		if err := await.Recv(t, stopped, "Shutdown's return"); err != nil {
			t.Errorf("Shutdown = %v", err)
		}
		e.until(ada, id, "completed")
	})
	t.Run("fails the rest", func(t *testing.T) {
		e := newEnv(t, tasks.Options{})
		id := e.create(ada, "slow")
		await.Recv(t, e.deps.started, "the handler's start")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := e.tasks.Shutdown(ctx); err == nil {
			t.Error("Shutdown = nil, want its context's error")
		}
		if err := await.Recv(t, e.deps.ended, "the handler's context's end"); err != tasks.ErrShuttingDown {
			t.Errorf("the handler's context ended with %v, want ErrShuttingDown", err)
		}
		got, _ := e.get(ada, id)
		if got["status"] != "failed" {
			t.Errorf("after a shutdown the task is %v", got)
		}
	})
}

// TestTerminalNeverChanges: once the store holds a terminal state (here
// failed by another replica, as when this one's lease ran out), the
// replica running the task never overwrites it, though its handler then
// completes.
func TestTerminalNeverChanges(t *testing.T) {
	mem := &tasks.Memory{}
	e := newEnv(t, tasks.Options{Store: mem})
	id := e.create(ada, "slow")
	await.Recv(t, e.deps.started, "the handler's start")
	if _, err := mem.Update(context.Background(), id, func(r *tasks.Record) error {
		r.Status, r.StatusMessage, r.Error = tasks.Failed, "failed elsewhere", json.RawMessage(`{"code":-32603,"message":"failed elsewhere"}`)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	close(e.deps.release)
	// The handler's end is stored (or refused) before its slot is free:
	// wait for the slot, then look.
	await.Recv(t, e.idle(), "the task's slot's release")
	got, _ := e.get(ada, id)
	if got["status"] != "failed" || got["statusMessage"] != "failed elsewhere" {
		t.Errorf("the failed task became %v (%v)", got["status"], got["statusMessage"])
	}
}

// TestAllowedStaysBoundToRequest: before it becomes a task, a TaskAllowed
// call is the request's: a client that leaves ends the handler's context.
func TestAllowedStaysBoundToRequest(t *testing.T) {
	e := newEnv(t, tasks.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hold","arguments":{},"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer tok-ada")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "hold")
	errs := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errs <- err
	}()
	await.Recv(t, e.deps.started, "the handler's start")
	cancel()
	if err := await.Recv(t, e.deps.ended, "the end of the handler's context"); err == nil {
		t.Error("the handler's context ended without a cause")
	}
	<-errs
	await.Recv(t, e.idle(), "no task")
}

// TestLegacyTasks: the 2025-11-25 experimental tasks are not this
// extension: tasks/result is an unknown method, and a legacy "task"
// parameter on tools/call is ignored, never an opt-in.
func TestLegacyTasks(t *testing.T) {
	e := newEnv(t, tasks.Options{})
	close(e.deps.release)
	if _, rerr := e.rpc(ada, "tasks/result", map[string]any{"taskId": "AAAAAAAAAAAAAAAAAAAAAAAAAA"}); rerr == nil || rerr.Code != -32601 {
		t.Errorf("tasks/result: %+v, want -32601", rerr)
	}
	res, rerr := e.rpc(adaPlain, "tools/call", map[string]any{"name": "slow", "arguments": map[string]any{}, "task": map[string]any{"ttl": 60000}})
	if rerr != nil || res["resultType"] == "task" || resultText(res) != `{"text":"slow done"}` {
		t.Errorf("a legacy task parameter from a client without the extension = %v, %+v; want the synchronous answer", res, rerr)
	}
}

// TestPartialAnswers: an input_required task lists only the requests
// still outstanding (the SEP's inputRequests), and waits for all of
// them.
func TestPartialAnswers(t *testing.T) {
	mem := &tasks.Memory{}
	e := newEnv(t, tasks.Options{Store: mem})
	id := e.create(ada, "confirm")
	e.until(ada, id, "input_required")
	// A second outstanding request, as a handler asking two questions
	// would have (the store is the replicas' common truth).
	if _, err := mem.Update(context.Background(), id, func(r *tasks.Record) error {
		var m map[string]json.RawMessage
		json.Unmarshal(r.InputRequests, &m)
		m["1.other"] = m["1.permission"]
		r.InputRequests, _ = json.Marshal(m)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e.rpc(ada, "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
		"1.other": map[string]any{"action": "accept", "content": map[string]any{"decision": "deny"}},
	}})
	got, _ := e.get(ada, id)
	reqs, _ := got["inputRequests"].(map[string]any)
	if _, ok := reqs["1.other"]; ok || reqs["1.permission"] == nil || got["status"] != "input_required" {
		t.Errorf("after a partial answer: %v, want only 1.permission outstanding", got)
	}
}
