package tasks

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/tool"
)

// Options configures [New]. Every zero field selects its default, except
// Authorizer, which must be set.
type Options struct {
	// Authorizer is asked again at every tasks/get, tasks/update and
	// tasks/cancel whether the caller may still see the task's tool (the
	// server's authorizer, server.Options.Authorizer): a caller whose
	// rights were revoked gets "Task not found", and an outage an
	// internal error. Required: New fails closed without one.
	Authorizer authz.Authorizer
	// Store keeps the tasks. nil selects a [Memory] store: tasks are this
	// replica's alone. redisstore.NewTaskStore shares them between
	// replicas.
	Store Store
	// TTL is how long a task is kept from its creation (its ttlMs);
	// then the store forgets it and its id answers "Task not found". 0
	// selects one hour.
	TTL time.Duration
	// PollInterval is the pollIntervalMs suggested to clients. 0
	// selects one second.
	PollInterval time.Duration
	// RunTimeout bounds a task's work (the handler's context ends, and
	// the task fails); it must be shorter than TTL. 0 selects ten
	// minutes, or half the TTL if that is shorter.
	RunTimeout time.Duration
	// Lease is how long a replica holds a running task without renewing
	// it; it renews it every Lease/3 and picks up cancellations and
	// input responses given on other replicas then. A task whose lease
	// ran out (its replica died) is failed by the next request that reads
	// it. 0 selects 15 seconds.
	Lease time.Duration
	// MaxPerCaller bounds the tasks one caller (subject) may have running
	// on this replica at once, MaxRunning those of every caller; a call
	// of a TaskAlways tool over either gets the JSON-RPC error
	// CodeTooManyTasks with retryAfterMs, and one of a TaskAllowed tool
	// stays synchronous. 0 selects 8 and 256.
	MaxPerCaller int
	MaxRunning   int
	// MaxResultBytes bounds a task's result as encoded: a larger one
	// fails the task. 0 selects 4 MiB.
	MaxResultBytes int
	// Replica names this process in the tasks it runs. "" selects a
	// random name.
	Replica string
	// Logger receives the package's reports (a store outage, a task the
	// shutdown failed). nil selects slog.Default.
	Logger *slog.Logger
	// OnChange, if set, is called after every change of a task's status
	// that was stored (created, input_required, working again, and the
	// terminal one): for audit records and telemetry. It must be safe for
	// concurrent use and return quickly.
	OnChange func(ctx context.Context, c Change)
}

// Change is one stored change of a task's status (see Options.OnChange).
type Change struct {
	TaskID  string
	Tool    string
	Subject string
	Status  Status
	// Message is the task's statusMessage (a failure's reason).
	Message string
	// Replica is the replica that made the change.
	Replica string
}

// Defaults of Options.
const (
	defaultTTL            = time.Hour
	defaultPollInterval   = time.Second
	defaultRunTimeout     = 10 * time.Minute
	defaultLease          = 15 * time.Second
	defaultMaxPerCaller   = 8
	defaultMaxRunning     = 256
	defaultMaxResultBytes = 4 << 20
)

// Tasks serves the MCP Tasks extension on a server: it is a
// server.Installer (add it to server.New's installers, or to server.Module's
// group) that adds tasks/get, tasks/update and tasks/cancel, a middleware
// that turns calls of task-capable tools (tool.Tool.Task) into tasks for
// clients that declare the extension, and advertises the extension.
//
// A Tasks must be made with [New] and shut down with [Tasks.Shutdown].
type Tasks struct {
	opts  Options
	store Store
	log   *slog.Logger

	mu        sync.Mutex
	running   map[string]*worker // by task id
	perCaller map[string]int
	closing   bool
	idle      chan struct{} // closed when closing and nothing runs
}

// New returns a Tasks with opts. It fails without an Authorizer, and on
// inconsistent bounds.
func New(opts Options) (*Tasks, error) {
	if opts.Authorizer == nil {
		return nil, errors.New("tasks: Options.Authorizer is nil: set the server's authorizer (every task request re-checks it)")
	}
	if opts.Store == nil {
		opts.Store = &Memory{}
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&opts.TTL, defaultTTL)
	def(&opts.PollInterval, defaultPollInterval)
	def(&opts.Lease, defaultLease)
	if opts.RunTimeout == 0 {
		opts.RunTimeout = min(defaultRunTimeout, opts.TTL/2)
	}
	if opts.MaxPerCaller == 0 {
		opts.MaxPerCaller = defaultMaxPerCaller
	}
	if opts.MaxRunning == 0 {
		opts.MaxRunning = defaultMaxRunning
	}
	if opts.MaxResultBytes == 0 {
		opts.MaxResultBytes = defaultMaxResultBytes
	}
	switch {
	case opts.TTL < 0, opts.PollInterval < 0, opts.RunTimeout < 0, opts.Lease < 0:
		return nil, errors.New("tasks: negative TTL, PollInterval, RunTimeout or Lease")
	case opts.RunTimeout >= opts.TTL:
		return nil, fmt.Errorf("tasks: RunTimeout %s is not shorter than TTL %s: a task's result would be gone when it ends", opts.RunTimeout, opts.TTL)
	case opts.MaxPerCaller < 0, opts.MaxRunning < 0, opts.MaxResultBytes < 0:
		return nil, errors.New("tasks: negative MaxPerCaller, MaxRunning or MaxResultBytes")
	}
	if opts.Replica == "" {
		opts.Replica = "replica-" + rand.Text()[:8]
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Tasks{opts: opts, store: opts.Store, log: log, running: map[string]*worker{}, perCaller: map[string]int{}}, nil
}

// Tools implements server.Installer: Tasks adds no tools.
func (t *Tasks) Tools() []*tool.Call { return nil }

// Extensions implements server.New's extension hook: a server with a
// task-capable tool (tool.Tool.Task) advertises the extension, with no
// settings; one without advertises nothing, and answers every call
// synchronously.
func (t *Tasks) Extensions(tools []*tool.Call) map[string]map[string]any {
	for _, c := range tools {
		if c.Task != tool.TaskNever {
			return map[string]map[string]any{Extension: {}}
		}
	}
	return nil
}

// Install implements server.Installer: it adds the extension's methods
// and its middleware to s. The middleware runs innermost in server.New's
// call path (after the caller's resolution, the call's log record and
// authorization), so a call it turns into a task is one the caller may
// make, and a hidden tool never becomes one.
func (t *Tasks) Install(s *mcp.Server) {
	must := func(err error) {
		if err != nil {
			panic(err) // only a standard method's name fails, and these are not
		}
	}
	must(mcp.AddReceivingCustomMethod(s, methodGet, func(ctx context.Context, _ *mcp.ServerSession, p *taskParams) (*result, error) {
		return t.get(ctx, p)
	}))
	must(mcp.AddReceivingCustomMethod(s, methodUpdate, func(ctx context.Context, _ *mcp.ServerSession, p *updateParams) (*result, error) {
		return t.update(ctx, p)
	}))
	must(mcp.AddReceivingCustomMethod(s, methodCancel, func(ctx context.Context, _ *mcp.ServerSession, p *taskParams) (*result, error) {
		return t.cancel(ctx, p)
	}))
	s.AddReceivingMiddleware(t.middleware)
}

// middleware turns calls into tasks, and refuses task requests of
// clients that did not declare the extension.
func (t *Tasks) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/call":
			cr, ok := req.(*mcp.CallToolRequest)
			if !ok || cr.Params == nil {
				break
			}
			c := tool.CallFromContext(ctx)
			if c == nil || c.Task == tool.TaskNever || !declares(cr.Params.Meta) {
				break
			}
			caller, _ := authz.CallerFromContext(ctx)
			if caller.Subject == "" {
				// A task is bound to its caller's subject: a caller
				// without one gets no task, only the synchronous answer.
				break
			}
			return t.call(ctx, cr, c, caller, next)
		case methodGet, methodUpdate, methodCancel:
			var meta mcp.Meta
			var id string
			switch p := req.GetParams().(type) {
			case *taskParams:
				meta, id = p.Meta, p.TaskID
			case *updateParams:
				meta, id = p.Meta, p.TaskID
			}
			if !declares(meta) {
				return nil, missingCapability()
			}
			if x := req.GetExtra(); x != nil && x.Header != nil {
				// The SEP's routing header: a client must send the task id
				// as Mcp-Name. A different one is refused (a load balancer
				// routed by it); a missing one is tolerated, since go-sdk's
				// client (v1.8.0) sets Mcp-Name for tools/call,
				// prompts/get and resources/read only.
				if name := x.Header.Get("Mcp-Name"); name != "" && name != id {
					return nil, headerMismatch(method)
				}
			}
		}
		return next(ctx, method, req)
	}
}

// declares reports whether a request's _meta declares the extension in
// its per-request client capabilities, under a protocol version that
// defines it. Only the request's own declaration counts (never a
// session's, nor an earlier request's).
func declares(meta mcp.Meta) bool {
	if v, _ := meta[mcp.MetaKeyProtocolVersion].(string); v < protocolTasks {
		return false
	}
	caps, _ := meta[mcp.MetaKeyClientCapabilities].(map[string]any)
	ext, _ := caps["extensions"].(map[string]any)
	_, ok := ext[Extension]
	return ok
}

// lookup returns the task id for the caller of ctx, failing it first if
// its replica's lease ran out. Another caller's task, an unknown or
// expired one, and one whose tool the caller may no longer see answer
// alike.
func (t *Tasks) lookup(ctx context.Context, method, id string) (*Record, error) {
	caller, _ := authz.CallerFromContext(ctx)
	if caller.Subject == "" || id == "" || len(id) > 64 {
		return nil, notFound(method)
	}
	rec, err := t.store.Get(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil, notFound(method)
	}
	if err != nil {
		t.log.ErrorContext(ctx, "toolroute: tasks: the store failed", slog.String("method", method), slog.Any("error", err))
		return nil, internal("the task store is unavailable; retry later")
	}
	if rec.Subject != caller.Subject {
		return nil, notFound(method)
	}
	if ok, err := t.visible(ctx, caller, rec); err != nil {
		t.log.WarnContext(ctx, "toolroute: tasks: authorization unavailable", slog.String("method", method), slog.Any("error", err))
		return nil, internal("authorization is unavailable; retry later")
	} else if !ok {
		return nil, notFound(method)
	}
	if !rec.Status.Terminal() && time.Now().After(rec.LeaseUntil) {
		rec, err = t.expireLease(ctx, method, rec)
		if err != nil {
			return nil, err
		}
	}
	return rec, nil
}

// visible reports whether caller may still see rec's tool: it is local,
// or the caller may reach one of its routes.
func (t *Tasks) visible(ctx context.Context, caller authz.Caller, rec *Record) (bool, error) {
	if rec.Local {
		return true, nil
	}
	if len(rec.Routes) == 0 {
		return false, nil
	}
	ok, err := t.opts.Authorizer.AllowMany(ctx, caller, rec.Routes)
	if err != nil {
		return false, err
	}
	for _, b := range ok {
		if b {
			return true, nil
		}
	}
	return false, nil
}

// errReplicaGone is the failure of a task whose replica stopped renewing
// its lease.
const errReplicaGone = "the replica running the task stopped (its lease ran out)"

// expireLease fails rec, whose lease ran out, unless another request did
// or its replica renewed it meanwhile.
func (t *Tasks) expireLease(ctx context.Context, method string, rec *Record) (*Record, error) {
	now := time.Now()
	got, err := t.store.Update(ctx, rec.ID, func(r *Record) error {
		if r.Status.Terminal() || !now.After(r.LeaseUntil) {
			return errUnchanged
		}
		fail(r, now, internal(errReplicaGone), errReplicaGone)
		return nil
	})
	if errors.Is(err, errUnchanged) {
		// Another request failed it, or its replica renewed the lease.
		got, err = t.store.Get(ctx, rec.ID)
	} else if err == nil {
		t.changed(ctx, got)
	}
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, notFound(method)
	case err != nil:
		return nil, internal("the task store is unavailable; retry later")
	}
	return got, nil
}

// fail makes r failed with err at now.
func fail(r *Record, now time.Time, err error, msg string) {
	r.Status, r.StatusMessage, r.Error, r.UpdatedAt = Failed, msg, rpcError(err), now
	r.InputRequests, r.Answers, r.Result = nil, nil, nil
}

// changed reports a stored status change.
func (t *Tasks) changed(ctx context.Context, r *Record) {
	if t.opts.OnChange != nil {
		t.opts.OnChange(ctx, Change{TaskID: r.ID, Tool: r.Tool, Subject: r.Subject, Status: r.Status, Message: r.StatusMessage, Replica: t.opts.Replica})
	}
}

// get serves tasks/get.
func (t *Tasks) get(ctx context.Context, p *taskParams) (*result, error) {
	rec, err := t.lookup(ctx, methodGet, p.TaskID)
	if err != nil {
		return nil, err
	}
	return &result{ResultType: resultComplete, wireTask: rec.wire(true)}, nil
}

// update serves tasks/update: it records the responses to outstanding
// input requests (others are ignored, as the SEP asks) for the replica
// running the task.
func (t *Tasks) update(ctx context.Context, p *updateParams) (*result, error) {
	rec, err := t.lookup(ctx, methodUpdate, p.TaskID)
	if err != nil {
		return nil, err
	}
	for k, v := range p.InputResponses {
		var one mcp.InputResponseMap
		if err := json.Unmarshal(fmt.Appendf(nil, `{%q:%s}`, k, v), &one); err != nil {
			return nil, invalidParams(fmt.Sprintf("inputResponses[%q]: %v", k, err))
		}
	}
	if rec.Status == InputRequired && len(p.InputResponses) > 0 {
		_, err = t.store.Update(ctx, rec.ID, func(r *Record) error {
			out := outstanding(r)
			n := 0
			for k, v := range p.InputResponses {
				if out[k] && r.Answers[k] == nil {
					if r.Answers == nil {
						r.Answers = map[string]json.RawMessage{}
					}
					r.Answers[k] = v
					n++
				}
			}
			if n == 0 {
				return errUnchanged
			}
			r.UpdatedAt = time.Now()
			return nil
		})
		if err := t.storeErr(ctx, methodUpdate, err); err != nil {
			return nil, err
		}
		t.poke(rec.ID)
	}
	return &result{ResultType: resultComplete}, nil
}

// cancel serves tasks/cancel: it records the request for the replica
// running the task, which cancels the handler's context.
func (t *Tasks) cancel(ctx context.Context, p *taskParams) (*result, error) {
	rec, err := t.lookup(ctx, methodCancel, p.TaskID)
	if err != nil {
		return nil, err
	}
	if !rec.Status.Terminal() && !rec.CancelRequested {
		_, err = t.store.Update(ctx, rec.ID, func(r *Record) error {
			if r.Status.Terminal() || r.CancelRequested {
				return errUnchanged
			}
			r.CancelRequested = true
			return nil
		})
		if err := t.storeErr(ctx, methodCancel, err); err != nil {
			return nil, err
		}
		t.poke(rec.ID)
	}
	return &result{ResultType: resultComplete}, nil
}

// storeErr maps an Update's error for a client: nil for success and for
// nothing to change.
func (t *Tasks) storeErr(ctx context.Context, method string, err error) error {
	switch {
	case err == nil, errors.Is(err, errUnchanged):
		return nil
	case errors.Is(err, ErrNotFound):
		return notFound(method)
	}
	t.log.ErrorContext(ctx, "toolroute: tasks: the store failed", slog.String("method", method), slog.Any("error", err))
	return internal("the task store is unavailable; retry later")
}

// outstanding is the set of r's input request keys.
func outstanding(r *Record) map[string]bool {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(r.InputRequests, &m)
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}
