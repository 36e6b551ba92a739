package redact

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/toolroute/toolroute/internal/core/truncate"
)

// MaxString bounds every string of a record a [Handler] passes on (the
// message, each attribute), in bytes: whatever echoes a caller's value, a
// record stays small.
const MaxString = 16 << 10

// Redacted replaces a bearer token in a log record.
const Redacted = "[redacted]"

// Handler is a [slog.Handler] that passes each record to the handler it
// wraps without any bearer token in it (see the package doc). base is
// the handler it wraps; h is base with ops applied (with only the
// "Bearer TOKEN" pattern scrubbed: WithAttrs knows no caller). A record
// whose caller's bearer appears in ops is handled by base with ops
// redacted for that bearer.
type Handler struct {
	base   slog.Handler
	h      slog.Handler
	ops    []withOp
	bearer func(context.Context) string
}

// New returns a Handler around h. bearer returns the bearer token of the
// caller in a record's context, or "" for none; it must not be nil.
func New(h slog.Handler, bearer func(context.Context) string) *Handler {
	return &Handler{base: h, h: h, bearer: bearer}
}

// withOp is one WithGroup (group != "") or WithAttrs call.
type withOp struct {
	group string
	attrs []slog.Attr
}

// Enabled reports whether the wrapped handler handles records of level l.
func (r *Handler) Enabled(ctx context.Context, l slog.Level) bool { return r.h.Enabled(ctx, l) }

// WithAttrs returns a Handler whose records carry attrs, redacted.
func (r *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return r
	}
	red := redactAttrs(attrs, "")
	return &Handler{base: r.base, h: r.h.WithAttrs(red), ops: append(r.ops[:len(r.ops):len(r.ops)], withOp{attrs: red}), bearer: r.bearer}
}

// WithGroup returns a Handler whose records' attributes are in the group
// name.
func (r *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return r
	}
	return &Handler{base: r.base, h: r.h.WithGroup(name), ops: append(r.ops[:len(r.ops):len(r.ops)], withOp{group: name}), bearer: r.bearer}
}

// Handle passes rec on without the bearer of the caller in ctx, without
// the token of any "Bearer TOKEN", and with every string cut at
// [MaxString] bytes.
func (r *Handler) Handle(ctx context.Context, rec slog.Record) error {
	bearer := r.bearer(ctx)
	h := r.h
	if bearer != "" && r.opsHold(bearer) {
		h = r.base
		for _, op := range r.ops {
			if op.group != "" {
				h = h.WithGroup(op.group)
			} else {
				h = h.WithAttrs(redactAttrs(op.attrs, bearer))
			}
		}
	}
	if !recordNeeds(rec, bearer) {
		return h.Handle(ctx, rec)
	}
	out := slog.NewRecord(rec.Time, rec.Level, redactString(rec.Message, bearer), rec.PC)
	attrs := make([]slog.Attr, 0, rec.NumAttrs())
	rec.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, a)
		return true
	})
	out.AddAttrs(redactAttrs(attrs, bearer)...)
	return h.Handle(ctx, out)
}

// opsHold reports whether an attribute given to WithAttrs shows bearer.
func (r *Handler) opsHold(bearer string) bool {
	for _, op := range r.ops {
		for _, a := range op.attrs {
			if attrNeeds(a, bearer) {
				return true
			}
		}
	}
	return false
}

// recordNeeds reports whether rec must be rewritten: its message or an
// attribute shows a token or is too long.
func recordNeeds(rec slog.Record, bearer string) bool {
	if stringNeeds(rec.Message, bearer) {
		return true
	}
	needs := false
	rec.Attrs(func(a slog.Attr) bool {
		needs = attrNeeds(a, bearer)
		return !needs
	})
	return needs
}

func attrNeeds(a slog.Attr, bearer string) bool {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return stringNeeds(v.String(), bearer)
	case slog.KindGroup:
		for _, g := range v.Group() {
			if attrNeeds(g, bearer) {
				return true
			}
		}
		return false
	case slog.KindAny:
		_, needs := anyText(v.Any(), bearer)
		return needs
	}
	return false
}

// anyText returns the text a value of kind Any is logged as, when that
// text must be redacted or shortened, and whether it must.
func anyText(v any, bearer string) (string, bool) {
	var s string
	switch x := v.(type) {
	case nil:
		return "", false
	case error:
		s = x.Error()
	case fmt.Stringer:
		s = x.String()
	case []byte:
		s = string(x)
	default:
		s = fmt.Sprintf("%+v", x)
	}
	return s, stringNeeds(s, bearer)
}

func redactAttrs(attrs []slog.Attr, bearer string) []slog.Attr {
	out := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		out[i] = redactAttr(a, bearer)
	}
	return out
}

func redactAttr(a slog.Attr, bearer string) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if s := v.String(); stringNeeds(s, bearer) {
			return slog.String(a.Key, redactString(s, bearer))
		}
	case slog.KindGroup:
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(redactAttrs(v.Group(), bearer)...)}
	case slog.KindAny:
		if s, needs := anyText(v.Any(), bearer); needs {
			return slog.String(a.Key, redactString(s, bearer))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

func stringNeeds(s, bearer string) bool {
	return len(s) > MaxString || bearer != "" && strings.Contains(s, bearer) || bearerAt(s, 0) >= 0
}

// redactString returns s without bearer and without the token of any
// "Bearer TOKEN", cut at MaxString bytes.
func redactString(s, bearer string) string {
	if bearer != "" {
		s = strings.ReplaceAll(s, bearer, Redacted)
	}
	if bearerAt(s, 0) >= 0 {
		var b strings.Builder
		i := 0
		for {
			j := bearerAt(s, i)
			if j < 0 {
				break
			}
			end := tokenEnd(s, j)
			b.WriteString(s[i:j])
			b.WriteString(Redacted)
			i = end
		}
		b.WriteString(s[i:])
		s = b.String()
	}
	return truncate.To(s, MaxString)
}

// bearerAt returns the index, from i on, of the first token of a
// "Bearer TOKEN" in s (the word "bearer" in any case, not preceded by a
// letter, then spaces or tabs, then a token character other than the
// start of "[redacted]"), or -1.
func bearerAt(s string, i int) int {
	const word = "bearer"
	for i+len(word) < len(s) {
		j := indexFold(s[i:], word)
		if j < 0 {
			return -1
		}
		j += i
		k := j + len(word)
		i = k
		if j > 0 && isLetter(s[j-1]) {
			continue
		}
		sp := k
		for sp < len(s) && (s[sp] == ' ' || s[sp] == '\t') {
			sp++
		}
		if sp == k || sp == len(s) || !isToken(s[sp]) {
			continue
		}
		return sp
	}
	return -1
}

// tokenEnd returns the end of the token starting at i (RFC 6750's
// b64token: letters, digits, "-._~+/", then "=" padding).
func tokenEnd(s string, i int) int {
	for i < len(s) && isToken(s[i]) {
		i++
	}
	for i < len(s) && s[i] == '=' {
		i++
	}
	return i
}

func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

func isToken(c byte) bool {
	return isLetter(c) || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/'
}

// indexFold is strings.Index for an ASCII lower-case word, ignoring the
// case of s.
func indexFold(s, word string) int {
	for i := 0; i+len(word) <= len(s); i++ {
		if s[i]|0x20 != word[0] {
			continue
		}
		if strings.EqualFold(s[i:i+len(word)], word) {
			return i
		}
	}
	return -1
}

// Text returns s with every non-empty secret, and the token of any
// "Bearer TOKEN", replaced by [Redacted], cut at [MaxString] bytes: for a
// text that is neither logged through a [Handler] nor free of the
// credentials a request carried (an upstream's error message, which may
// echo the Authorization header it received).
func Text(s string, secrets ...string) string {
	for _, secret := range secrets {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, Redacted)
		}
	}
	return redactString(s, "")
}
