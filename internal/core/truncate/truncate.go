// Package truncate shortens the caller-controlled values a server echoes
// in its log records and in the error texts it answers with, so that a
// caller's 4 MB tool name or argument neither grows the log by megabytes
// nor comes back in the response. Every echo of a caller value goes
// through it. Nothing here is API.
//
// A shortened value keeps its first bytes (cut on a UTF-8 boundary) and
// ends with a marker giving the original length:
//
//	xxxxxxxx…(truncated, 4194304 bytes)
package truncate

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Max is the number of bytes of a caller value kept by [String].
const Max = 128

// MaxText is the number of bytes of an error text kept by [Quoted] once
// its quoted values are shortened.
const MaxText = 1024

// String returns s if it holds at most [Max] bytes, else its first bytes
// (at most Max, cut on a UTF-8 boundary) and the marker
// "…(truncated, N bytes)", N being len(s).
func String(s string) string { return To(s, Max) }

// To is [String] with a bound of n bytes. A value To shortened already
// (to n bytes or fewer, and the marker) is returned as it is, so that
// its marker keeps the original length.
func To(s string, n int) string {
	if len(s) <= n || shortened(s, n) {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + marker + strconv.Itoa(len(s)) + " bytes)"
}

// Quoted shortens a text that quotes caller values, as an error text
// made with %q does: every double-quoted string in s (a Go string
// literal: backslash escapes are honoured) longer than [Max] bytes
// inside its quotes keeps its first bytes and the marker, and its
// closing quote. If the text is then still longer than [MaxText] bytes,
// it is cut there as by [To] (values printed without quotes, %v of a
// huge array, are shortened so).
func Quoted(s string) string {
	if len(s) <= Max {
		return s
	}
	var b strings.Builder
	changed := false
	for i := 0; i < len(s); {
		q := strings.IndexByte(s[i:], '"')
		if q < 0 {
			b.WriteString(s[i:])
			break
		}
		open := i + q
		end := closing(s, open+1) // index of the closing quote, or len(s)
		b.WriteString(s[i : open+1])
		inner := s[open+1 : end]
		if len(inner) > Max {
			b.WriteString(To(inner, Max))
			changed = true
		} else {
			b.WriteString(inner)
		}
		if end < len(s) {
			b.WriteByte('"')
		}
		i = end + 1
	}
	out := s
	if changed {
		out = b.String()
	}
	return To(out, MaxText)
}

// closing returns the index of the quote closing a string literal whose
// contents start at i, or len(s) if it is not closed.
func closing(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case '\\':
			i += 2
			continue
		case '"':
			return i
		}
		i++
	}
	return len(s)
}

const marker = "…(truncated, "

// shortened reports whether s is a value [To] shortened to at most n
// bytes: a head of at most n bytes, then the marker, a length and
// " bytes)".
func shortened(s string, n int) bool {
	i := strings.LastIndex(s, marker)
	if i < 0 || i > n || !strings.HasSuffix(s, " bytes)") {
		return false
	}
	digits := s[i+len(marker) : len(s)-len(" bytes)")]
	_, err := strconv.Atoi(digits)
	return err == nil && len(digits) > 0 && digits[0] != '-' && digits[0] != '+'
}
