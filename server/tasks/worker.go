package tasks

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/tool"
)

// The causes of a task handler's context ending.
var (
	errCancelled  = errors.New("tasks: cancelled by the client (tasks/cancel)")
	errRunTimeout = errors.New("tasks: the task ran longer than its limit (Options.RunTimeout)")
	// ErrShuttingDown is the cause of a task's context ending because
	// the server shut down before it finished; the task fails.
	ErrShuttingDown = errors.New("tasks: the server shut down before the task finished")
)

// answer is one run of the handler's outcome.
type answer struct {
	res mcp.Result
	err error
}

// worker runs one call's handler, before and after it became a task. Its
// fields are its supervisor's, except those noted.
type worker struct {
	t      *Tasks
	caller string
	call   *tool.Call
	next   mcp.MethodHandler
	req    *mcp.CallToolRequest

	ctx    context.Context // the handler's: detached from the request
	cancel context.CancelCauseFunc
	stop   context.CancelFunc // of the run timeout
	done   chan answer        // the current run's outcome
	poke   chan struct{}      // a local tasks/update or tasks/cancel; buffered 1

	id      string    // once a task
	expires time.Time // its ExpiresAt

	// While input_required: the keys the client sees, to the handler's,
	// and the handler's request state.
	keys  map[string]string
	state string
	round int
}

// call serves a tools/call of a task-capable tool c by the caller subject,
// for a client that declares the extension: a TaskAlways call becomes a
// task at once, a TaskAllowed one once it ran c.TaskAfter without
// finishing.
func (t *Tasks) call(ctx context.Context, req *mcp.CallToolRequest, c *tool.Call, caller authz.Caller, next mcp.MethodHandler) (mcp.Result, error) {
	w := &worker{t: t, caller: caller.Subject, call: c, next: next, req: req, done: make(chan answer, 1), poke: make(chan struct{}, 1)}
	w.ctx, w.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	w.ctx, w.stop = context.WithTimeoutCause(w.ctx, t.opts.RunTimeout, errRunTimeout)
	if c.Task == tool.TaskAlways {
		if err := t.admit(w); err != nil {
			w.end()
			return nil, err
		}
		res, err := t.become(ctx, w)
		if err != nil {
			// Fail closed: no task, and the call was not run.
			t.release(w)
			w.end()
			return nil, err
		}
		w.launch(req)
		go w.supervise()
		return res, nil
	}
	// TaskAllowed: synchronous until c.TaskAfter, so the request's end
	// (the client leaving, the call's deadline) ends the handler too.
	unbind := context.AfterFunc(ctx, func() { w.cancel(context.Cause(ctx)) })
	w.launch(req)
	timer := time.NewTimer(c.TaskAfter)
	defer timer.Stop()
	select {
	case a := <-w.done:
		unbind()
		w.end()
		return a.res, a.err
	case <-timer.C:
	}
	if !unbind() {
		// The request ended as the timer fired: its handler is being
		// cancelled; answer as a synchronous call would.
		return w.sync(ctx)
	}
	if err := t.admit(w); err != nil {
		// No room for another task: the call stays synchronous.
		return w.sync(ctx)
	}
	res, err := t.become(ctx, w)
	if err != nil {
		// No task without the store: the call stays synchronous.
		t.release(w)
		return w.sync(ctx)
	}
	go w.supervise()
	return res, nil
}

// sync waits for the run of a call that stays synchronous, whose
// request's end cancels it.
func (w *worker) sync(ctx context.Context) (mcp.Result, error) {
	defer context.AfterFunc(ctx, func() { w.cancel(context.Cause(ctx)) })()
	a := <-w.done
	w.end()
	return a.res, a.err
}

// end releases w's contexts.
func (w *worker) end() {
	w.stop()
	w.cancel(nil)
}

// launch runs the handler for req in a goroutine of its own.
func (w *worker) launch(req *mcp.CallToolRequest) {
	go func() {
		res, err := w.next(w.ctx, "tools/call", req)
		w.done <- answer{res, err}
	}()
}

// admit reserves a running slot for w, or refuses with the caps' error.
func (t *Tasks) admit(w *worker) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.closing:
		return internal(ErrShuttingDown.Error())
	case len(t.running) >= t.opts.MaxRunning:
		return tooMany("the server's limit", t.opts.PollInterval)
	case t.perCaller[w.caller] >= t.opts.MaxPerCaller:
		return tooMany("the caller's limit", t.opts.PollInterval)
	}
	w.id = rand.Text()
	t.running[w.id] = w
	t.perCaller[w.caller]++
	return nil
}

// Running returns how many tasks run on this replica (working or
// waiting for input): those the caps count.
func (t *Tasks) Running() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.running)
}

// release frees w's slot.
func (t *Tasks) release(w *worker) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.running, w.id)
	if t.perCaller[w.caller]--; t.perCaller[w.caller] <= 0 {
		delete(t.perCaller, w.caller)
	}
	if t.closing && len(t.running) == 0 && t.idle != nil {
		close(t.idle)
		t.idle = nil
	}
}

// poke tells the local worker of task id, if any, to read its record.
func (t *Tasks) poke(id string) {
	t.mu.Lock()
	w := t.running[id]
	t.mu.Unlock()
	if w != nil {
		select {
		case w.poke <- struct{}{}:
		default:
		}
	}
}

// become stores w's task durably and returns its CreateTaskResult; the
// caller then starts w's supervisor.
func (t *Tasks) become(ctx context.Context, w *worker) (mcp.Result, error) {
	now := time.Now()
	w.expires = now.Add(t.opts.TTL)
	rec := &Record{
		ID: w.id, Subject: w.caller, Tool: w.call.Tool, Routes: w.call.Routes, Local: w.call.Local,
		Status: Working, CreatedAt: now, UpdatedAt: now, ExpiresAt: w.expires, PollInterval: t.opts.PollInterval,
		Replica: t.opts.Replica, LeaseUntil: now.Add(t.opts.Lease),
	}
	if err := t.store.Create(ctx, rec); err != nil {
		t.log.ErrorContext(ctx, "toolroute: tasks: the store failed to create a task", slog.String("tool", w.call.Tool), slog.Any("error", err))
		return nil, internal("the task store is unavailable; the call was not run")
	}
	t.changed(ctx, rec)
	return &result{ResultType: resultTask, wireTask: rec.wire(false)}, nil
}

// supervise runs w's task to its end: it waits for the handler, renews
// the lease, and honours cancellations and input responses.
func (w *worker) supervise() {
	t := w.t
	defer t.release(w)
	defer w.end()
	tick := time.NewTicker(max(t.opts.Lease/3, time.Millisecond))
	defer tick.Stop()
	running := true
	var pending func(*Record) error // a change the store has not taken yet
	for {
		var ended <-chan struct{} // while waiting for input: the run timeout, a shutdown
		if !running && pending == nil {
			ended = w.ctx.Done()
		}
		select {
		case a := <-w.done:
			running = false
			pending = w.outcome(a)
		case <-ended:
			pending = w.outcome(answer{err: context.Cause(w.ctx)})
		case <-tick.C:
		case <-w.poke:
		}
		if pending != nil {
			if !w.flush(&pending) {
				return
			}
			if pending != nil {
				continue // the store is down: retry at the next tick
			}
		}
		rec, err := w.renew()
		switch {
		case errors.Is(err, ErrNotFound), errors.Is(err, errTerminal):
			// Expired, or failed by another replica (the lease ran out
			// while the store was unreachable): stop the work.
			w.cancel(errReplicaLost)
			if running {
				<-w.done
			}
			return
		case err != nil:
			continue
		}
		switch {
		case rec.CancelRequested:
			w.cancel(errCancelled)
			if !running {
				// Waiting for input: nothing runs, so the task ends now.
				pending = w.outcome(answer{})
				if !w.flush(&pending) {
					return
				}
			}
		case !running && w.keys != nil && answered(rec, w.keys):
			req, err := w.retry(rec)
			if err != nil {
				pending = w.outcome(answer{err: err})
				if !w.flush(&pending) {
					return
				}
				continue
			}
			if w.write(func(r *Record) error {
				r.Status, r.StatusMessage, r.InputRequests, r.Answers, r.UpdatedAt = Working, "", nil, nil, time.Now()
				return nil
			}) != nil {
				continue
			}
			w.keys = nil
			running = true
			w.launch(req)
		}
	}
}

// flush writes *pending. It reports false when the task is done here:
// its terminal change is stored, or the store no longer holds it (or it
// expired while the store was down); it leaves *pending set while the
// store cannot take it.
func (w *worker) flush(pending *func(*Record) error) bool {
	switch err := w.write(*pending); {
	case err == nil:
		*pending = nil
		return w.keys != nil // input_required: wait for the answers
	case errors.Is(err, ErrNotFound), errors.Is(err, errTerminal):
		return false
	default:
		return !time.Now().After(w.expires)
	}
}

// errTerminal: the stored task is terminal already.
var errTerminal = errors.New("tasks: the task is terminal")

// errReplicaLost ends the work of a task this replica no longer holds.
var errReplicaLost = errors.New("tasks: this replica no longer holds the task")

// write stores change on w's task, unless it is terminal, and reports
// the status change.
func (w *worker) write(change func(*Record) error) error {
	ctx := context.WithoutCancel(w.ctx)
	rec, err := w.t.store.Update(ctx, w.id, func(r *Record) error {
		if r.Status.Terminal() {
			return errTerminal
		}
		r.LeaseUntil = time.Now().Add(w.t.opts.Lease)
		return change(r)
	})
	if err != nil {
		if !errors.Is(err, errTerminal) && !errors.Is(err, ErrNotFound) {
			w.t.log.Error("toolroute: tasks: the store failed to record a task's change; retrying", slog.String("tool", w.call.Tool), slog.Any("error", err))
		}
		return err
	}
	w.t.changed(ctx, rec)
	return nil
}

// renew extends w's lease and returns the stored task.
func (w *worker) renew() (*Record, error) {
	return w.t.store.Update(context.WithoutCancel(w.ctx), w.id, func(r *Record) error {
		if r.Status.Terminal() {
			return errTerminal
		}
		r.LeaseUntil, r.Replica = time.Now().Add(w.t.opts.Lease), w.t.opts.Replica
		return nil
	})
}

// outcome is the change a run's answer makes to the task.
func (w *worker) outcome(a answer) func(*Record) error {
	now := time.Now()
	w.keys = nil
	switch cause := context.Cause(w.ctx); {
	case errors.Is(cause, errCancelled):
		return func(r *Record) error {
			r.Status, r.StatusMessage, r.UpdatedAt, r.InputRequests, r.Answers = Cancelled, "cancelled by the client", now, nil, nil
			return nil
		}
	case errors.Is(cause, ErrShuttingDown), errors.Is(cause, errRunTimeout):
		return func(r *Record) error { fail(r, now, internal(cause.Error()), cause.Error()); return nil }
	}
	if a.err != nil {
		msg := a.err.Error()
		var rpc *jsonrpc.Error
		if errors.As(a.err, &rpc) {
			msg = rpc.Message
		}
		return func(r *Record) error { fail(r, now, a.err, msg); return nil }
	}
	res, _ := a.res.(*mcp.CallToolResult)
	if res == nil {
		return func(r *Record) error { fail(r, now, internal("the tool returned no result"), "no result"); return nil }
	}
	if res.InputRequests != nil {
		return w.ask(res, now)
	}
	b, err := json.Marshal(res)
	switch {
	case err != nil:
		return func(r *Record) error {
			fail(r, now, internal("the result could not be encoded"), "unencodable result")
			return nil
		}
	case len(b) > w.t.opts.MaxResultBytes:
		msg := fmt.Sprintf("the result (%d bytes) is larger than a task's limit of %d bytes", len(b), w.t.opts.MaxResultBytes)
		return func(r *Record) error { fail(r, now, internal(msg), msg); return nil }
	}
	return func(r *Record) error {
		r.Status, r.StatusMessage, r.Result, r.UpdatedAt = Completed, "", b, now
		return nil
	}
}

// ask is the change of a run that needs input: input_required, with the
// handler's input requests under keys unique over the task's life.
func (w *worker) ask(res *mcp.CallToolResult, now time.Time) func(*Record) error {
	w.round++
	w.state = res.RequestState
	w.keys = make(map[string]string, len(res.InputRequests))
	reqs := make(mcp.InputRequestMap, len(res.InputRequests))
	for k, v := range res.InputRequests {
		ck := fmt.Sprintf("%d.%s", w.round, k)
		w.keys[ck] = k
		reqs[ck] = v
	}
	b, err := json.Marshal(reqs)
	if err != nil {
		w.keys = nil
		return func(r *Record) error {
			fail(r, now, internal("the input requests could not be encoded"), "unencodable input requests")
			return nil
		}
	}
	msg := ""
	for _, v := range res.InputRequests {
		if e, ok := v.(*mcp.ElicitParams); ok && msg == "" {
			msg = e.Message
		}
	}
	return func(r *Record) error {
		r.Status, r.StatusMessage, r.InputRequests, r.Answers, r.UpdatedAt = InputRequired, firstLine(msg), b, nil, now
		return nil
	}
}

// firstLine is s's first line.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// answered reports whether rec holds an answer for every key.
func answered(rec *Record, keys map[string]string) bool {
	for k := range keys {
		if rec.Answers[k] == nil {
			return false
		}
	}
	return true
}

// retry is the call again with rec's answers, as a multi round-trip
// retry would carry them.
func (w *worker) retry(rec *Record) (*mcp.CallToolRequest, error) {
	raw := make(map[string]json.RawMessage, len(w.keys))
	for ck, k := range w.keys {
		raw[k] = rec.Answers[ck]
	}
	b, _ := json.Marshal(raw)
	var responses mcp.InputResponseMap
	if err := json.Unmarshal(b, &responses); err != nil {
		return nil, invalidParams("inputResponses: " + err.Error())
	}
	p := *w.req.Params
	p.InputResponses, p.RequestState = responses, w.state
	return &mcp.CallToolRequest{Session: w.req.Session, Params: &p, Extra: w.req.Extra}, nil
}

// Shutdown stops new tasks (a call that would become one stays
// synchronous, or is refused if its tool is TaskAlways) and waits for
// the running ones until ctx ends; then it cancels them, with cause
// ErrShuttingDown, and fails each in the store, so that none is left
// working. It returns ctx's error if it had to cancel any.
func (t *Tasks) Shutdown(ctx context.Context) error {
	t.mu.Lock()
	t.closing = true
	var idle chan struct{}
	if len(t.running) > 0 {
		if t.idle == nil {
			t.idle = make(chan struct{})
		}
		idle = t.idle
	}
	t.mu.Unlock()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
	}
	t.mu.Lock()
	left := make([]*worker, 0, len(t.running))
	for _, w := range t.running {
		left = append(left, w)
	}
	t.mu.Unlock()
	for _, w := range left {
		w.cancel(ErrShuttingDown)
		// Fail it here too: its supervisor may be waiting for a handler
		// that ignores its context, or for a store that is down.
		now := time.Now()
		if _, err := t.store.Update(context.WithoutCancel(ctx), w.id, func(r *Record) error {
			if r.Status.Terminal() {
				return errTerminal
			}
			fail(r, now, internal(ErrShuttingDown.Error()), ErrShuttingDown.Error())
			return nil
		}); err != nil && !errors.Is(err, errTerminal) && !errors.Is(err, ErrNotFound) {
			t.log.Error("toolroute: tasks: could not fail a task at shutdown; its lease will", slog.String("tool", w.call.Tool), slog.Any("error", err))
		}
	}
	return ctx.Err()
}
