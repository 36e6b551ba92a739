package tokenfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/toolroute/toolroute/internal/core/jsonpos"

	"github.com/toolroute/toolroute/authz"
)

// Entry is one entry of a tokens file: a bearer token and the caller it
// stands for.
//
// The token is a secret: String, Format (every verb, %#v included) and
// LogValue print "[redacted]" in its place. Its JSON form, the file
// format, holds it.
type Entry struct {
	// Token is the bearer token, as sent after "Bearer ".
	Token string `json:"token"`
	// Subject names the caller in logs and decisions; never empty.
	Subject string `json:"subject"`
	// Roles are the caller's roles, as an [authz.Policy] keys on them.
	Roles []string `json:"roles"`
}

const redacted = "[redacted]"

// String returns a description of e that never holds its token:
//
//	Entry{Subject: "alice", Roles: ["editor"], Token: [redacted]}
func (e Entry) String() string {
	var b strings.Builder
	b.WriteString("Entry{Subject: ")
	b.WriteString(strconv.Quote(e.Subject))
	b.WriteString(", Roles: [")
	for i, r := range e.Roles {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Quote(r))
	}
	b.WriteString("], Token: ")
	b.WriteString(e.tokenMark())
	b.WriteByte('}')
	return b.String()
}

// Format implements [fmt.Formatter] so that no verb (%v, %+v, %#v, %s,
// %q, %x, %d, ...) ever prints the token.
func (e Entry) Format(f fmt.State, verb rune) {
	switch {
	case verb == 'v' && f.Flag('#'):
		roles := "[]string(nil)"
		if e.Roles != nil {
			q := make([]string, len(e.Roles))
			for i, r := range e.Roles {
				q[i] = strconv.Quote(r)
			}
			roles = "[]string{" + strings.Join(q, ", ") + "}"
		}
		token := `""`
		if e.Token != "" {
			token = strconv.Quote(redacted)
		}
		fmt.Fprintf(f, "tokenfile.Entry{Token:%s, Subject:%q, Roles:%s}", token, e.Subject, roles)
	case verb == 'v' || verb == 's' || verb == 'q' || verb == 'x' || verb == 'X':
		fmt.Fprintf(f, fmt.FormatString(f, verb), e.String())
	default:
		fmt.Fprintf(f, "%%!%c(tokenfile.Entry=%s)", verb, e.String())
	}
}

// LogValue implements [slog.LogValuer]: a group of the subject, the roles
// and, if e has a token, token="[redacted]".
func (e Entry) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("subject", e.Subject), slog.Any("roles", e.Roles)}
	if e.Token != "" {
		attrs = append(attrs, slog.String("token", redacted))
	}
	return slog.GroupValue(attrs...)
}

func (e Entry) tokenMark() string {
	if e.Token == "" {
		return "none"
	}
	return redacted
}

// wantShape is what a tokens file must hold, for error messages.
const wantShape = `want a JSON array of {"token", "subject", "roles"}`

// Parse parses a tokens file (see the package documentation) and checks
// its entries with [Check]. roles, if not nil, are the roles an entry may
// name (a policy's, see [authz.Policy.Roles]); nil accepts any role (an
// RBAC proxy's policy decides). The Roles of a policy that defines none
// are nil: refuse such a policy first, or pass []string{}. It returns
// every problem, joined, and no entries if there is one.
func Parse(data []byte, roles []string) ([]Entry, error) {
	return parse(data, roles, "tokenfile")
}

// Read reads and parses the tokens file at path like [Parse]; its errors
// name the file.
func Read(path string, roles []string) ([]Entry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenfile: %w", err)
	}
	return parse(data, roles, "tokenfile: "+path)
}

func parse(data []byte, roles []string, where string) ([]Entry, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s: the file is empty: %s", where, wantShape)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var entries []Entry
	if err := dec.Decode(&entries); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", where, wantShape, jsonpos.Err(data, err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s: unexpected data after the JSON array at offset %d", where, dec.InputOffset())
	}
	if entries == nil {
		return nil, fmt.Errorf("%s: %s, got null", where, wantShape)
	}
	if err := check(entries, roles, where); err != nil {
		return nil, err
	}
	return entries, nil
}

// Check checks entries as [Parse] does: tokens non-empty, distinct,
// without white space or control characters; subjects non-empty; and, if
// roles is not nil, every role of an entry one of roles. It returns every
// problem, joined, each naming its entry by index and never quoting a
// token.
func Check(entries []Entry, roles []string) error {
	return check(entries, roles, "tokenfile")
}

func check(entries []Entry, roles []string, where string) error {
	var errs []error
	seen := make(map[string]int, len(entries))
	for i, e := range entries {
		// Never quote a token in an error: name the entry instead.
		switch first, dup := seen[e.Token]; {
		case e.Token == "":
			errs = append(errs, fmt.Errorf("%s: entry %d: empty token", where, i))
		case strings.ContainsFunc(e.Token, func(r rune) bool { return r <= ' ' || r == 0x7f }):
			errs = append(errs, fmt.Errorf("%s: entry %d: the token holds white space or control characters", where, i))
		case dup:
			errs = append(errs, fmt.Errorf("%s: entry %d: duplicate token (the token of entry %d)", where, i, first))
		default:
			seen[e.Token] = i
		}
		if e.Subject == "" {
			errs = append(errs, fmt.Errorf("%s: entry %d: empty subject", where, i))
		}
		for _, r := range e.Roles {
			if roles != nil && !slices.Contains(roles, r) {
				errs = append(errs, fmt.Errorf("%s: entry %d (subject %q): the policy has no role %q (it has %s)", where, i, e.Subject, r, quoted(roles)))
			}
		}
	}
	return errors.Join(errs...)
}

// quoted is roles quoted and comma-separated, or "none".
func quoted(roles []string) string {
	if len(roles) == 0 {
		return "none"
	}
	q := make([]string, len(roles))
	for i, r := range roles {
		q[i] = strconv.Quote(r)
	}
	return strings.Join(q, ", ")
}

// Callers returns the callers of entries keyed by token, the map
// server.StaticTokens takes: each caller has its entry's subject and a
// copy of its roles, and no bearer (the server sets it from the request).
// entries must pass [Check] (as [Parse]'s do): Callers panics on an empty
// or a duplicate token rather than let one entry replace another.
func Callers(entries []Entry) map[string]authz.Caller {
	m := make(map[string]authz.Caller, len(entries))
	for i, e := range entries {
		if e.Token == "" {
			panic(fmt.Sprintf("tokenfile: Callers: entry %d (subject %q): empty token", i, e.Subject))
		}
		if _, dup := m[e.Token]; dup {
			panic(fmt.Sprintf("tokenfile: Callers: entry %d (subject %q): duplicate token", i, e.Subject))
		}
		m[e.Token] = authz.Caller{Subject: e.Subject, Roles: slices.Clone(e.Roles)}
	}
	return m
}
