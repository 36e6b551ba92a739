package authz

import (
	"fmt"
	"log/slog"
	"net/http"
)

// checkQuery refuses a request whose raw query holds a byte that RFC 3986
// does not allow there, or a malformed percent-escape. The query goes
// into the request line as it is (net/http does not escape
// [url.URL.RawQuery]): a space there ends the request target, and
// "?a HTTP/1.0 x" would make the upstream read another request line
// than the one checked. A query built with [url.Values.Encode] always
// passes.
func (t *transport) checkQuery(req *http.Request, tool string) error {
	q := req.URL.RawQuery
	i, reason := queryProblem(q)
	if reason == "" {
		return nil
	}
	t.log().ErrorContext(req.Context(), "authz: upstream request with a malformed query (configuration bug: build queries with url.Values and Encode); refused",
		slog.String("tool", tool), slog.String("service", t.key), slog.Int("offset", i), slog.String("reason", reason))
	return &DeniedError{Reason: fmt.Sprintf("malformed query: %s at offset %d", reason, i)}
}

// queryProblem returns the offset in q of the first byte a query must
// not hold and why, or "" if q is a well-formed RFC 3986 query:
// unreserved characters, sub-delimiters, ":", "@", "/", "?" and
// percent-escapes of two hex digits.
func queryProblem(q string) (int, string) {
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '%':
			if i+2 >= len(q) || !isHex(q[i+1]) || !isHex(q[i+2]) {
				return i, "a \"%\" not followed by two hex digits"
			}
			i += 2
		case c <= ' ' || c >= 0x7f:
			return i, fmt.Sprintf("byte %#02x (white space, a control character or non-ASCII: percent-encode it)", c)
		case !queryByte(c):
			return i, fmt.Sprintf("%q (percent-encode it)", c)
		}
	}
	return 0, ""
}

// queryByte reports whether the printable ASCII byte c may stand
// unescaped in a query: RFC 3986's pchar, "/" and "?".
func queryByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '-', '.', '_', '~', '!', '$', '&', '\'', '(', ')', '*', '+', ',', ';', '=', ':', '@', '/', '?':
		return true
	}
	return false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
