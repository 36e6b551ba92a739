package truncate

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", ""},
		{"get_item", "get_item"},
		{strings.Repeat("a", Max), strings.Repeat("a", Max)},
		{strings.Repeat("a", Max+1), strings.Repeat("a", Max) + "…(truncated, 129 bytes)"},
		{strings.Repeat("a", 4<<20), strings.Repeat("a", Max) + "…(truncated, 4194304 bytes)"},
		// The cut never splits a rune: "é" is 2 bytes, and byte 128 is its
		// second one.
		{strings.Repeat("a", Max-1) + "é" + "b", strings.Repeat("a", Max-1) + "…(truncated, 130 bytes)"},
	}
	for _, tt := range tests {
		got := String(tt.in)
		if got != tt.want {
			t.Errorf("String(%d bytes) = %q, want %q", len(tt.in), got, tt.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("String(%d bytes) is not valid UTF-8: %q", len(tt.in), got)
		}
	}
}

func TestQuoted(t *testing.T) {
	big := strings.Repeat("x", 3<<20)
	short := strings.Repeat("x", Max)
	tests := []struct {
		name, in, want string
	}{
		{"short", `maxLength: "abc" contains 3 Unicode code points, more than 2`, `maxLength: "abc" contains 3 Unicode code points, more than 2`},
		{"value", fmt.Sprintf(`validating /properties/id: maxLength: %q contains %d Unicode code points, more than 200`, big, len(big)),
			`validating /properties/id: maxLength: "` + short + `…(truncated, 3145728 bytes)" contains 3145728 Unicode code points, more than 200`},
		{"escapes", fmt.Sprintf(`pattern: %q does not match regular expression "^a$"`, `\"`+big),
			`pattern: "` + `\\\"` + strings.Repeat("x", Max-4) + `…(truncated, 3145732 bytes)" does not match regular expression "^a$"`},
		{"unclosed", `x: "` + big, `x: "` + short + `…(truncated, 3145728 bytes)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Quoted(tt.in); got != tt.want {
				t.Errorf("Quoted:\n got %.300q\nwant %.300q", got, tt.want)
			}
		})
	}
	// Unquoted values are cut with the whole text.
	in := "type: [" + strings.Repeat("1 ", 1<<20) + `] has type "array", want "string"`
	got := Quoted(in)
	if len(got) > MaxText+40 || !strings.HasSuffix(got, fmt.Sprintf("…(truncated, %d bytes)", len(in))) {
		t.Errorf("Quoted(%d bytes of unquoted value) = %d bytes %.80q…", len(in), len(got), got)
	}
}

// TestIdempotent: shortening twice keeps the original length in the
// marker, as a log record of an error text already shortened does.
func TestIdempotent(t *testing.T) {
	big := strings.Repeat("x", 3<<20)
	once := String(big)
	if twice := String(once); twice != once {
		t.Errorf("String(String(v)) = %q, want %q", twice, once)
	}
	text := fmt.Sprintf(`maxLength: %q contains %d Unicode code points`, big, len(big))
	q := Quoted(text)
	if q2 := Quoted(q); q2 != q {
		t.Errorf("Quoted(Quoted(t)) = %q, want %q", q2, q)
	}
}
