package upstream

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode"

	"github.com/toolroute/toolroute/internal/core/redact"
	"github.com/toolroute/toolroute/internal/core/truncate"
	"github.com/toolroute/toolroute/tool"
)

// maxMessage bounds the upstream's own message an [Error] keeps, in
// bytes.
const maxMessage = 512

// maxErrorBody bounds what is read of a non-2xx answer's body, in bytes.
const maxErrorBody = 64 << 10

// Error is a non-2xx answer of an upstream service. A tool's client sees
// its [Error.ClientText], whatever wraps it: the status and the
// upstream's own message, never the request's URL or a header.
type Error struct {
	// Status is the answer's HTTP status code.
	Status int
	// Message is the upstream's own message, from a JSON error body of a
	// common shape: {"error": {"message": ...}}, {"message": ...},
	// {"error": "...", "error_description": ...} (OAuth), {"detail": ...}
	// or {"title": ...} (RFC 9457 problem details), {"errors": [{"message"
	// or "detail": ...}]}. Every credential the request carried
	// (its Authorization header's value and token, and any "Bearer TOKEN")
	// is replaced by "[redacted]", control characters by spaces, and it is
	// cut at 512 bytes. "" when the body holds none.
	Message string
	// Code is the upstream's error code, where the body gives one next
	// to the message ({"error": {"code": ...}}, {"code": ...}, OAuth's
	// {"error": CODE}), as text; "" if none. It is cut like Message.
	Code string
	// Route is the route the request was sent on: the template, not the
	// bound path.
	Route tool.Route
}

// Error returns "upstream METHOD URI: STATUS TEXT[: MESSAGE]", for the
// server's log; URI is the route's template.
func (e *Error) Error() string {
	return fmt.Sprintf("upstream %s: %s", e.Route, e.status())
}

// ClientText returns what a tool's client sees of e: "upstream answered
// STATUS TEXT" and, if the upstream gave one, ": MESSAGE".
func (e *Error) ClientText() string {
	return "upstream answered " + e.status()
}

func (e *Error) status() string {
	s := strconv.Itoa(e.Status)
	if t := http.StatusText(e.Status); t != "" {
		s += " " + t
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// newError returns the Error of a non-2xx answer of status with body (of
// the media type mt) to a request on r; secrets are the credentials the
// request carried.
func newError(r tool.Route, status int, mt string, body []byte, secrets []string) *Error {
	e := &Error{Status: status, Route: r}
	if !isJSON(mt) && !(mt == "" && looksJSON(body)) {
		return e
	}
	code, msg := errorMessage(body)
	e.Code, e.Message = clean(code, secrets), clean(msg, secrets)
	return e
}

// looksJSON reports whether body starts with a JSON object.
func looksJSON(body []byte) bool {
	s := strings.TrimLeft(string(body), " \t\r\n")
	return strings.HasPrefix(s, "{")
}

// errorMessage returns the code and message of a JSON error body, in
// the shapes [Error.Message] lists.
func errorMessage(body []byte) (code, msg string) {
	var b struct {
		Error            json.RawMessage `json:"error"`
		ErrorDescription any             `json:"error_description"`
		Message          any             `json:"message"`
		Code             any             `json:"code"`
		Detail           any             `json:"detail"`
		Title            any             `json:"title"`
		Errors           []struct {
			Message any `json:"message"`
			Detail  any `json:"detail"`
			Title   any `json:"title"`
			Code    any `json:"code"`
		} `json:"errors"`
	}
	if json.Unmarshal(body, &b) != nil {
		return "", ""
	}
	if len(b.Error) > 0 {
		var nested struct {
			Message any `json:"message"`
			Code    any `json:"code"`
			Status  any `json:"status"`
		}
		var s string
		switch {
		case json.Unmarshal(b.Error, &nested) == nil:
			if m := text(nested.Message); m != "" {
				return first(text(nested.Code), text(nested.Status)), m
			}
		case json.Unmarshal(b.Error, &s) == nil && s != "":
			if d := text(b.ErrorDescription); d != "" {
				return s, d // OAuth: the code, and its description
			}
			return text(b.Code), s
		}
	}
	if m := text(b.Message); m != "" {
		return text(b.Code), m
	}
	if d := text(b.Detail); d != "" {
		return text(b.Code), d
	}
	if t := text(b.Title); t != "" {
		return text(b.Code), t
	}
	for _, e := range b.Errors {
		if m := first(text(e.Message), text(e.Detail), text(e.Title)); m != "" {
			return text(e.Code), m
		}
	}
	return "", ""
}

// text is v as text: a string as it is, a number or bool as JSON writes
// it; of a list, its first element's text; of an object, the text of
// its "message", "msg", "detail" or "title" (FastAPI's "detail" is a
// list of {"loc", "msg"}); "" for anything else.
func text(v any) string {
	switch v := v.(type) {
	case string:
		return strings.TrimSpace(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	case []any:
		if len(v) > 0 {
			if _, nested := v[0].([]any); !nested {
				return text(v[0])
			}
		}
	case map[string]any:
		for _, k := range [...]string{"message", "msg", "detail", "title"} {
			if _, nested := v[k].(map[string]any); !nested {
				if s := text(v[k]); s != "" {
					return s
				}
			}
		}
	}
	return ""
}

func first(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// clean returns s without secrets (see [Error.Message]), its control
// characters replaced by spaces, cut at maxMessage bytes.
func clean(s string, secrets []string) string {
	if s == "" {
		return ""
	}
	s = redact.Text(s, secrets...)
	s = strings.Map(func(c rune) rune {
		if unicode.IsControl(c) || c == '\u2028' || c == '\u2029' {
			return ' '
		}
		return c
	}, s)
	return truncate.To(strings.TrimSpace(s), maxMessage)
}

// secretsOf returns the credentials resp's request carried to the
// upstream: each Authorization value, and the credential after its
// scheme ("Bearer TOKEN" gives both). The request is the one the
// innermost transport sent ([http.Response.Request]), with the header
// the upstream transport added.
func secretsOf(resp *http.Response, sent *http.Request) []string {
	var out []string
	add := func(h http.Header) {
		for _, v := range h.Values("Authorization") {
			out = append(out, v)
			if _, cred, ok := strings.Cut(strings.TrimSpace(v), " "); ok {
				out = append(out, strings.TrimSpace(cred))
			}
		}
	}
	if resp != nil && resp.Request != nil {
		add(resp.Request.Header)
	}
	add(sent.Header)
	return out
}

// isJSON reports whether the media type mt is JSON: application/json, or
// any type with the +json suffix (application/problem+json).
func isJSON(mt string) bool {
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}
