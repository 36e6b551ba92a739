package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/toolroute/toolroute/tool"
)

// Record is one task as a [Store] keeps it. It is plain data, encoded
// with encoding/json by stores that leave the process (redisstore's):
// every replica that shares the store reads and writes it.
type Record struct {
	// ID is the task id: 26 characters of base32 from crypto/rand
	// (130 bits), the task's only handle.
	ID string `json:"id"`
	// Subject is the caller that created the task (authz.Caller's
	// Subject): the only caller that sees it.
	Subject string `json:"subject"`
	// Tool, Routes and Local are the tool's, for the authorization every
	// request about the task re-checks.
	Tool   string       `json:"tool"`
	Routes []tool.Route `json:"routes,omitempty"`
	Local  bool         `json:"local,omitempty"`

	Status        Status    `json:"status"`
	StatusMessage string    `json:"statusMessage,omitempty"`
	CreatedAt     time.Time `json:"createdAt"`
	UpdatedAt     time.Time `json:"updatedAt"`
	// ExpiresAt is CreatedAt plus the task's TTL: the store forgets the
	// task then.
	ExpiresAt    time.Time     `json:"expiresAt"`
	PollInterval time.Duration `json:"pollInterval"`

	// InputRequests are the outstanding requests of an input_required
	// task, keyed as the client sees them (unique over the task's life).
	InputRequests json.RawMessage `json:"inputRequests,omitempty"`
	// Answers are the input responses received for them so far.
	Answers map[string]json.RawMessage `json:"answers,omitempty"`
	// Result is a completed task's CallToolResult; Error a failed task's
	// JSON-RPC error.
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`

	// CancelRequested records a tasks/cancel, for the replica running the
	// task to honour.
	CancelRequested bool `json:"cancelRequested,omitempty"`
	// Replica runs the task, holding it until LeaseUntil, which it
	// renews while it runs. A task whose lease ran out is failed by the
	// next replica to read it.
	Replica    string    `json:"replica"`
	LeaseUntil time.Time `json:"leaseUntil"`
}

// clone returns a deep copy of r.
func (r *Record) clone() *Record {
	c := *r
	if r.Answers != nil {
		c.Answers = make(map[string]json.RawMessage, len(r.Answers))
		for k, v := range r.Answers {
			c.Answers[k] = v
		}
	}
	return &c
}

// ErrNotFound is a Store's answer for a task it does not hold (never
// created, or expired).
var ErrNotFound = errors.New("tasks: task not found")

// errUnchanged is returned by an update function that changes nothing:
// the store writes nothing, and Update returns it.
var errUnchanged = errors.New("tasks: unchanged")

// Store keeps tasks. Its methods are safe for concurrent use; an error
// other than ErrNotFound is an outage, which every task method answers
// with an internal error (fail closed).
type Store interface {
	// Create stores rec, a new task. It returns once a Get for rec.ID,
	// on any replica sharing the store, finds it (the SEP's durable
	// creation), and fails if the id is taken.
	Create(ctx context.Context, rec *Record) error
	// Get returns the task id, or ErrNotFound.
	Get(ctx context.Context, id string) (*Record, error)
	// Update applies change to the task id atomically and stores the
	// result: change may be called more than once (on a conflict with a
	// concurrent writer), each time with a fresh copy. An error from
	// change stores nothing and is returned as it is. Update returns the
	// stored record, or ErrNotFound.
	Update(ctx context.Context, id string, change func(*Record) error) (*Record, error)
}

// Memory is the in-process Store, the default: tasks live as long as the
// process (and their TTL), seen by this replica only. The zero Memory is
// ready to use.
type Memory struct {
	mu    sync.Mutex
	tasks map[string]*Record
	swept time.Time // the last sweep
}

// sweepEvery is how often, at most, Create forgets expired tasks.
const sweepEvery = time.Second

// Create implements Store.
func (m *Memory) Create(_ context.Context, rec *Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep()
	if m.tasks == nil {
		m.tasks = map[string]*Record{}
	}
	if _, ok := m.tasks[rec.ID]; ok {
		return errors.New("tasks: task id taken")
	}
	m.tasks[rec.ID] = rec.clone()
	return nil
}

// Get implements Store.
func (m *Memory) Get(_ context.Context, id string) (*Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.tasks[id]
	if !ok || !time.Now().Before(r.ExpiresAt) {
		return nil, ErrNotFound
	}
	return r.clone(), nil
}

// Update implements Store.
func (m *Memory) Update(_ context.Context, id string, change func(*Record) error) (*Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.tasks[id]
	if !ok || !time.Now().Before(r.ExpiresAt) {
		return nil, ErrNotFound
	}
	c := r.clone()
	if err := change(c); err != nil {
		return nil, err
	}
	m.tasks[id] = c
	return c.clone(), nil
}

// sweep forgets expired tasks, at most once every sweepEvery; m.mu must
// be held. Create runs it, so that memory follows the tasks alive.
func (m *Memory) sweep() {
	now := time.Now()
	if now.Sub(m.swept) < sweepEvery {
		return
	}
	m.swept = now
	for id, r := range m.tasks {
		if !now.Before(r.ExpiresAt) {
			delete(m.tasks, id)
		}
	}
}
