package permission

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolroute/toolroute/authz"
)

func TestClosure(t *testing.T) {
	implies := map[string][]string{
		"admin": {"write", "delete"},
		"write": {"read"},
		"read":  {"list"},
		"list":  {"read"}, // cycle
		"a":     {"b"},
		"b":     {"c"},
		"c":     {"a"}, // longer cycle
		"self":  {"self"},
	}
	c := newClosures(implies)
	tests := []struct {
		cap       string
		closure   []string
		impliedBy []string
	}{
		{"admin", []string{"admin", "delete", "list", "read", "write"}, []string{"admin"}},
		{"write", []string{"list", "read", "write"}, []string{"admin", "write"}},
		{"read", []string{"list", "read"}, []string{"admin", "list", "read", "write"}},
		{"list", []string{"list", "read"}, []string{"admin", "list", "read", "write"}},
		{"delete", []string{"delete"}, []string{"admin", "delete"}},
		{"a", []string{"a", "b", "c"}, []string{"a", "b", "c"}},
		{"self", []string{"self"}, []string{"self"}},
		{"unknown", []string{"unknown"}, []string{"unknown"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.closure, c.closure(tt.cap)); diff != "" {
			t.Errorf("closure(%q) (-want +got):\n%s", tt.cap, diff)
		}
		if diff := cmp.Diff(tt.impliedBy, c.impliedBy(tt.cap)); diff != "" {
			t.Errorf("impliedBy(%q) (-want +got):\n%s", tt.cap, diff)
		}
	}
	if !c.implies("admin", "list") || c.implies("list", "write") {
		t.Error("implies: admin → list should hold, list → write should not")
	}
}

func TestGlob(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"", "anything", true},
		{"", "", true},
		{"*", "", true},
		{"item:*", "item:42", true},
		{"item:*", "item:", true},
		{"item:*", "items:1", false},
		{"item:4?", "item:42", false}, // only * is special
		{"item:4?", "item:4?", true},
		{"*:42", "item:42", true},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"a*b", "abab", true},
		{"item:42", "item:42", true},
		{"item:42", "item:420", false},
		{"**", "x", true},
	}
	for _, tt := range tests {
		if got := glob(tt.pattern, tt.s); got != tt.want {
			t.Errorf("glob(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

func TestMemoryAnswersBounded(t *testing.T) {
	c := newClosures(map[string][]string{"write": {"read"}})
	ctx := context.Background()
	m := newAnswerStore(2).(*memoryAnswers)
	decide := func(principal, subject, want string) authz.Effect {
		t.Helper()
		got, err := m.Recall(ctx, principal, "t", []string{subject})
		if err != nil || len(got) != 1 {
			t.Fatalf("Recall = %v, %v", got, err)
		}
		return decideRemembered(c, got[0], want)
	}
	m.Remember(ctx, []Answer{{"p", "t", "s1", "write", authz.Allow}, {"p", "t", "s2", "read", authz.Deny}})
	if got := decide("p", "s1", "read"); got != authz.Allow {
		t.Errorf("allow write decides read: got %v, want allow", got)
	}
	if got := decide("p", "s2", "write"); got != authz.Deny {
		t.Errorf("deny read decides write: got %v, want deny", got)
	}
	if got := decide("q", "s1", "read"); got != "" {
		t.Errorf("another principal: got %v, want undecided", got)
	}
	m.Remember(ctx, []Answer{{"p", "t", "s2", "read", authz.Allow}}) // replaces, forgets nothing
	if got := decide("p", "s2", "read"); got != authz.Allow || m.len() != 2 {
		t.Errorf("replaced answer: got %v, len %d; want allow, 2", got, m.len())
	}
	m.Remember(ctx, []Answer{{"p", "t", "s3", "read", authz.Allow}}) // forgets s1
	if m.len() != 2 {
		t.Errorf("len = %d, want 2", m.len())
	}
	if got := decide("p", "s1", "read"); got != "" {
		t.Errorf("oldest rule should be forgotten: got %v, want undecided", got)
	}
	if got := decide("p", "s3", "read"); got != authz.Allow {
		t.Errorf("newest rule: got %v, want allow", got)
	}
	off := newAnswerStore(-1).(*memoryAnswers)
	off.Remember(ctx, []Answer{{"p", "t", "s", "read", authz.Allow}})
	if off.len() != 0 {
		t.Errorf("a negative bound remembers nothing; len = %d", off.len())
	}
}

func TestSpentNoncesBounded(t *testing.T) {
	var now int64
	s := newMemoryNonces(2, func() time.Time { return time.UnixMilli(now) })
	ctx := context.Background()
	spend := func(n string, expiry int64) error { return s.Spend(ctx, n, time.UnixMilli(expiry)) }
	if err := spend("01", 100); err != nil {
		t.Fatal(err)
	}
	if err := spend("01", 100); err != ErrReplayed {
		t.Errorf("second spend = %v, want %v", err, ErrReplayed)
	}
	if err := spend("02", 200); err != nil {
		t.Fatal(err)
	}
	// Full of unexpired nonces: refuse rather than forget one.
	now = 50
	if err := spend("03", 300); err != errBusy {
		t.Errorf("spend when full = %v, want %v", err, errBusy)
	}
	if err := spend("01", 100); err != ErrReplayed {
		t.Errorf("replay when full = %v, want %v", err, ErrReplayed)
	}
	// Expired, nonce 01 is kept a margin longer (a Checker's clock may
	// lag the store's a little)...
	now = 100 + nonceMargin.Milliseconds() - 1
	if err := spend("03", 300); err != errBusy {
		t.Errorf("spend within the margin = %v, want %v", err, errBusy)
	}
	// ...and then makes room (its state is refused as expired).
	now = 100 + nonceMargin.Milliseconds()
	if err := spend("03", 300); err != nil {
		t.Errorf("spend after expiry = %v, want nil", err)
	}
	if s.len() != 2 {
		t.Errorf("len = %d, want 2", s.len())
	}
}

func TestSealOpen(t *testing.T) {
	c := New(Options{Key: []byte(strings.Repeat("x", 32))})
	b := &binding{principal: "alice", tool: "act", args: sha256.Sum256([]byte("{}")), request: requestDigest([]string{"s"}, []string{"c"}, false)}
	p := &payload{expiry: 1234, asked: []byte{0b101}}
	p.nonce[3] = 7
	state := c.seal(b, p)
	got, err := c.open(b, state)
	if err != nil {
		t.Fatal(err)
	}
	if got.nonce != p.nonce || got.expiry != p.expiry || string(got.asked) != string(p.asked) {
		t.Errorf("open(seal(p)) = %+v, want %+v", got, p)
	}
	// Every bound field matters.
	for name, other := range map[string]*binding{
		"principal": {principal: "alice2", tool: b.tool, args: b.args, request: b.request},
		"tool":      {principal: b.principal, tool: "act2", args: b.args, request: b.request},
		"args":      {principal: b.principal, tool: b.tool, args: sha256.Sum256([]byte("[]")), request: b.request},
		"request":   {principal: b.principal, tool: b.tool, args: b.args, request: requestDigest([]string{"s"}, []string{"c"}, true)},
		// Length prefixes keep fields apart: "alice"+"act" ≠ "alic"+"eact".
		"boundary": {principal: "alic", tool: "eact", args: b.args, request: b.request},
	} {
		if _, err := c.open(other, state); err == nil {
			t.Errorf("open with another %s: want an error", name)
		}
	}
}

func TestArgsDigestCanonical(t *testing.T) {
	a := argsDigest([]byte(`{"b": [1, 2.50], "a": {"y": 1, "x": "z"}}`))
	b := argsDigest([]byte(`{"a":{"x":"z","y":1},"b":[1,2.50]}`))
	if a != b {
		t.Error("digests of the same arguments differ")
	}
	if c := argsDigest([]byte(`{"a":{"x":"z","y":1},"b":[1,2.5]}`)); c == a {
		t.Error("numbers are kept as written: 2.50 and 2.5 should differ")
	}
	if d := argsDigest([]byte(`{"a":{"x":"z","y":2},"b":[1,2.50]}`)); d == a {
		t.Error("digests of different arguments are equal")
	}
}

func TestNewPanics(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"zero effect", Options{Rules: []Rule{{Subject: "x"}}}, "permission: rule 0 ((no effect) * on x (principal *, tool *)): Effect must be authz.Allow or authz.Deny"},
		{"short key", Options{Key: []byte("short")}, "permission: Options.Key is 5 bytes long, at least 32 are needed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if got := fmt.Sprint(recover()); got != tt.want {
					t.Errorf("panic = %q, want %q", got, tt.want)
				}
			}()
			New(tt.opts)
		})
	}
	// nil options are the defaults.
	c := New(Options{})
	if c.ttl != defaultTTL || len(c.key) != 32 || c.now == nil {
		t.Errorf("New(Options{}) = ttl %v, key %d bytes; want the defaults", c.ttl, len(c.key))
	}
}
