package telemetry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolroute/toolroute/server/tasks"
)

// EventTask is the event of an audit record of a task's status change
// (server/tasks), one per change stored.
const EventTask = "task"

// MetricTasks counts the stored status changes of tasks, by tool and
// status: toolroute.tasks.changes{gen_ai.tool.name, toolroute.task.status}.
const MetricTasks = "toolroute.tasks.changes"

// taskAttr is the status attribute of task spans and metrics.
const taskAttr = "toolroute.task.status"

// TaskChange reports a task's status change, for tasks.Options.OnChange:
// one audit record ([EventTask]: the tool, the subject, the status as
// its outcome, the status message as its error_type when it failed, and
// the task as a digest of its id, never the id, which is a handle), one
// count in [MetricTasks], and one span "task STATUS" of its own trace,
// linked to the span of ctx: for changes the task's own work makes, the
// call that created it.
func (t *Telemetry) TaskChange(ctx context.Context, c tasks.Change) {
	attrs := []attribute.KeyValue{attribute.String("gen_ai.tool.name", c.Tool), attribute.String(taskAttr, string(c.Status))}
	t.tasks.Add(ctx, 1, metric.WithAttributes(attrs...))
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithAttributes(attrs...)}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	_, span := t.tracer.Start(ctx, "task "+string(c.Status), opts...)
	span.End()
	if t.audit == nil {
		return
	}
	r := t.newRecord(ctx, EventTask, nil, time.Now())
	sum := sha256.Sum256([]byte(c.TaskID))
	r.Task = "sha256:" + hex.EncodeToString(sum[:8])
	r.Tool, r.Subject, r.Outcome = c.Tool, c.Subject, string(c.Status)
	if c.Status == tasks.Failed {
		r.ErrorType = c.Message
	}
	t.audit.Audit(ctx, r)
}
