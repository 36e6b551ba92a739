package authz

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
)

// Caller is who a request comes from: the subject, the roles it holds and
// the bearer token it presented. The server puts it in every request's
// context with [WithCaller]; the middleware and the upstream transport read
// it with [CallerFromContext].
//
// The bearer is a secret. It is forwarded upstream by [Transport] and sent
// to an RBAC proxy by [ProxyAuth], and nothing else: Caller's String,
// Format (every verb, %#v included) and LogValue methods print
// "[redacted]" in its place, and it is left out of JSON.
type Caller struct {
	// Subject identifies the caller (a user or service name, a token's
	// "sub"). It is logged.
	Subject string
	// Roles are the caller's roles, as a [Policy] keys on them.
	Roles []string
	// Scopes are the OAuth scopes the caller's token was granted (its
	// "scope" claim), for authorizers that require scopes of routes
	// (authz/oauth's Scopes). Empty for a caller without a token, or
	// whose token names none. They are logged.
	Scopes []string
	// Client is the OAuth client the caller's token was issued to (its
	// "azp", else its "client_id"): the agent or application acting,
	// where Subject is the user it acts for. "" if unknown. It is logged
	// and audited, so that an agent acting for a user is told apart from
	// the user.
	Client string
	// Actors are the subjects of the token's delegation chain (RFC 8693
	// "act" claims), the current actor first: who acts for Subject.
	// Empty when Subject acts itself. They are logged and audited.
	Actors []string
	// Bearer is the caller's bearer token ("" if none), without the
	// "Bearer " prefix.
	Bearer string `json:"-"`
}

const redacted = "[redacted]"

// String returns a description of c that never holds its bearer:
//
//	Caller{Subject: "alice", Roles: [viewer editor], Bearer: [redacted]}
func (c Caller) String() string {
	var b strings.Builder
	b.WriteString("Caller{Subject: ")
	b.WriteString(strconv.Quote(c.Subject))
	b.WriteString(", Roles: [")
	for i, r := range c.Roles {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Quote(r))
	}
	b.WriteString("]")
	if len(c.Scopes) > 0 {
		b.WriteString(", Scopes: [")
		for i, sc := range c.Scopes {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(strconv.Quote(sc))
		}
		b.WriteString("]")
	}
	if c.Client != "" {
		b.WriteString(", Client: ")
		b.WriteString(strconv.Quote(c.Client))
	}
	if len(c.Actors) > 0 {
		b.WriteString(", Actors: [")
		for i, a := range c.Actors {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(strconv.Quote(a))
		}
		b.WriteString("]")
	}
	b.WriteString(", Bearer: ")
	b.WriteString(c.bearerMark())
	b.WriteByte('}')
	return b.String()
}

// goString is String in Go syntax, for the %#v verb; the bearer is
// redacted.
func (c Caller) goString() string {
	bearer := `""`
	if c.Bearer != "" {
		bearer = strconv.Quote(redacted)
	}
	return fmt.Sprintf("authz.Caller{Subject:%q, Roles:%s, Scopes:%s, Client:%q, Actors:%s, Bearer:%s}", c.Subject, goStrings(c.Roles), goStrings(c.Scopes), c.Client, goStrings(c.Actors), bearer)
}

// goStrings is ss in Go syntax.
func goStrings(ss []string) string {
	if ss == nil {
		return "[]string(nil)"
	}
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return "[]string{" + strings.Join(q, ", ") + "}"
}

// Format implements [fmt.Formatter] so that no verb (%v, %+v, %#v, %s,
// %q, %x, %d, ...) ever prints the bearer.
func (c Caller) Format(f fmt.State, verb rune) {
	switch {
	case verb == 'v' && f.Flag('#'):
		fmt.Fprint(f, c.goString())
	case verb == 'v' || verb == 's' || verb == 'q' || verb == 'x' || verb == 'X':
		fmt.Fprintf(f, fmt.FormatString(f, verb), c.String())
	default:
		fmt.Fprintf(f, "%%!%c(authz.Caller=%s)", verb, c.String())
	}
}

// LogValue implements [slog.LogValuer]: a group of the subject, the
// roles, the scopes, client and actors if known and, if the caller has a bearer,
// bearer="[redacted]".
func (c Caller) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("subject", c.Subject), slog.Any("roles", c.Roles)}
	if len(c.Scopes) > 0 {
		attrs = append(attrs, slog.Any("scopes", c.Scopes))
	}
	if c.Client != "" {
		attrs = append(attrs, slog.String("client", c.Client))
	}
	if len(c.Actors) > 0 {
		attrs = append(attrs, slog.Any("actors", c.Actors))
	}
	if c.Bearer != "" {
		attrs = append(attrs, slog.String("bearer", redacted))
	}
	return slog.GroupValue(attrs...)
}

func (c Caller) bearerMark() string {
	if c.Bearer == "" {
		return "none"
	}
	return redacted
}

type callerKey struct{}

// WithCaller returns a copy of ctx carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFromContext returns the caller ctx carries, and whether it
// carries one.
func CallerFromContext(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// redact returns the text of err's cause (an [OutageError]'s Err, whose
// own text is generic) with c's bearer, if it holds it, replaced by
// "[redacted]". Causes are logged through it, in case an [Authorizer] puts
// a token in an error.
// redactText returns s with c's bearer replaced: an Authorizer may put
// the token in a reason or an error.
func redactText(s string, c Caller) string {
	if c.Bearer != "" {
		s = strings.ReplaceAll(s, c.Bearer, redacted)
	}
	return s
}

func redact(err error, c Caller) string {
	var o *OutageError
	if errors.As(err, &o) && o.Err != nil {
		err = o.Err
	}
	if err == nil {
		return ""
	}
	return redactText(err.Error(), c)
}
