package permission

import (
	"context"
	"sync"

	"github.com/toolroute/toolroute/authz"
)

// Answer is a remembered "always" answer: authz.Effect for Capability on
// Subject, when Principal calls Tool.
type Answer struct {
	Principal  string
	Tool       string
	Subject    string
	Capability string
	Effect     authz.Effect
}

// An AnswerStore keeps the rules made from "allow always" and "deny
// always" answers. The default store is in memory (bounded by
// [Options].MaxRemembered), so an answer is remembered only by the
// process that received it: replicas must share a store of their own,
// or an "always" answer given on one replica is asked again on the next.
//
// A store may forget an answer (the question is then asked again:
// forgetting never grants anything) but never invent one. Any error
// refuses the call: it fails with a [*StoreError] (a tool error) and
// nothing is granted.
type AnswerStore interface {
	// Remember records answers, each replacing an earlier answer for its
	// principal, tool, subject and capability.
	Remember(ctx context.Context, answers []Answer) error
	// Recall returns the answers remembered for principal calling tool on
	// each of subjects: out[i] maps a capability to its authz.Effect on
	// subjects[i] (nil or empty when none is remembered).
	Recall(ctx context.Context, principal, tool string, subjects []string) ([]map[string]authz.Effect, error)
}

// newAnswerStore returns an in-memory AnswerStore holding at most max
// answers; when full, the oldest is forgotten. max 0 selects 10,000; a
// negative max remembers nothing.
func newAnswerStore(max int) AnswerStore {
	if max == 0 {
		max = 10_000
	}
	return &memoryAnswers{max: max, rules: map[answerOf]map[string]authz.Effect{}}
}

// answerOf is what an answer is about, but for its capability.
type answerOf struct {
	principal, tool, subject string
}

type answerKey struct {
	of         answerOf
	capability string
}

// memoryAnswers is the in-memory AnswerStore.
type memoryAnswers struct {
	mu    sync.Mutex
	max   int
	n     int
	rules map[answerOf]map[string]authz.Effect
	order []answerKey // oldest first
}

func (m *memoryAnswers) Remember(_ context.Context, answers []Answer) error {
	if m.max <= 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, a := range answers {
		k := answerKey{answerOf{a.Principal, a.Tool, a.Subject}, a.Capability}
		if caps, ok := m.rules[k.of]; ok {
			if _, ok := caps[k.capability]; ok {
				caps[k.capability] = a.Effect
				continue
			}
		}
		for m.n >= m.max {
			old := m.order[0]
			m.order = m.order[1:]
			m.forget(old)
		}
		caps := m.rules[k.of]
		if caps == nil {
			caps = map[string]authz.Effect{}
			m.rules[k.of] = caps
		}
		caps[k.capability] = a.Effect
		m.order = append(m.order, k)
		m.n++
	}
	return nil
}

// forget removes k; m.mu must be held.
func (m *memoryAnswers) forget(k answerKey) {
	caps := m.rules[k.of]
	delete(caps, k.capability)
	if len(caps) == 0 {
		delete(m.rules, k.of)
	}
	m.n--
}

func (m *memoryAnswers) Recall(_ context.Context, principal, tool string, subjects []string) ([]map[string]authz.Effect, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]map[string]authz.Effect, len(subjects))
	if m.n == 0 {
		return out, nil
	}
	for i, s := range subjects {
		if caps := m.rules[answerOf{principal, tool, s}]; len(caps) > 0 {
			out[i] = make(map[string]authz.Effect, len(caps))
			for c, e := range caps {
				out[i][c] = e
			}
		}
	}
	return out, nil
}

func (m *memoryAnswers) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n
}

// decideRemembered returns the decision of remembered (one subject's
// answers, capability → effect) on capability want, or 0. A remembered
// deny of anything want implies wins over a remembered allow.
func decideRemembered(c *closures, remembered map[string]authz.Effect, want string) authz.Effect {
	if len(remembered) == 0 {
		return ""
	}
	for _, d := range c.closure(want) {
		if remembered[d] == authz.Deny {
			return authz.Deny
		}
	}
	for _, a := range c.impliedBy(want) {
		if remembered[a] == authz.Allow {
			return authz.Allow
		}
	}
	return ""
}

// StoreError is the error of a call whose permissions could not be
// decided because a store ([NonceStore] or [AnswerStore]) could not
// answer. Nothing is granted. Its text is fixed, for the client; the
// store's error is its Err, for the server's logs.
type StoreError struct{ Err error }

// Error returns the fixed text the client sees.
func (e *StoreError) Error() string {
	return "permission: cannot check permissions now; nothing was granted; try again later"
}

// Unwrap returns the store's error.
func (e *StoreError) Unwrap() error { return e.Err }
