package telemetry_test

import (
	"context"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/toolroute/toolroute/server/tasks"
	"github.com/toolroute/toolroute/server/telemetry"
)

// TestTaskChange: each change of a task is one audit record (the task
// as a digest, never its id), one count by tool and status, and one span
// of its own trace linked to the creating call's.
func TestTaskChange(t *testing.T) {
	e := newEnv(t, envOptions{})
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	ctx, call := tp.Tracer("test").Start(context.Background(), "tools/call slow")
	const id = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	e.tel.TaskChange(ctx, tasks.Change{TaskID: id, Tool: "slow", Subject: "ada", Status: tasks.Working})
	e.tel.TaskChange(ctx, tasks.Change{TaskID: id, Tool: "slow", Subject: "ada", Status: tasks.Failed, Message: "lease ran out"})
	call.End()

	recs := e.records(t)
	if len(recs) != 2 {
		t.Fatalf("%d audit records, want 2: %+v", len(recs), recs)
	}
	for i, want := range []string{"working", "failed"} {
		r := recs[i]
		if r.Event != telemetry.EventTask || r.Tool != "slow" || r.Subject != "ada" || r.Outcome != want || !strings.HasPrefix(r.Task, "sha256:") || len(r.Task) != len("sha256:")+16 {
			t.Errorf("record %d = %+v", i, r)
		}
	}
	if recs[1].ErrorType != "lease ran out" {
		t.Errorf("the failure's record: error_type %q", recs[1].ErrorType)
	}
	if strings.Contains(e.audit.String(), id) {
		t.Error("the audit trail holds the task id")
	}
	got := points(e.collect(t)[telemetry.MetricTasks])
	want := map[string]int64{
		"gen_ai.tool.name=slow,toolroute.task.status=working": 1,
		"gen_ai.tool.name=slow,toolroute.task.status=failed":  1,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s %s = %d, want %d (all: %v)", telemetry.MetricTasks, k, got[k], v, got)
		}
	}
	n := 0
	for _, s := range e.spans.Ended() {
		if !strings.HasPrefix(s.Name(), "task ") {
			continue
		}
		n++
		if s.Parent().IsValid() {
			t.Errorf("span %q has a parent: want a trace of its own", s.Name())
		}
		if len(s.Links()) != 1 || s.Links()[0].SpanContext.SpanID() != call.SpanContext().SpanID() {
			t.Errorf("span %q links %v, want the creating call's span", s.Name(), s.Links())
		}
	}
	if n != 2 {
		t.Errorf("%d task spans, want 2", n)
	}
}
