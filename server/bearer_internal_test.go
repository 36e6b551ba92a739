package server

import (
	"strings"
	"testing"
)

// fieldsToken is how the SDK's bearer middleware reads a token.
func fieldsToken(h string) (string, bool) {
	f := strings.Fields(h)
	if len(f) != 2 || !strings.EqualFold(f[0], "bearer") {
		return "", false
	}
	return f[1], true
}

var bearerCases = []string{
	"Bearer abc", "bearer abc", "BEARER abc", "  Bearer\t abc  ", "Bearer", "Bearer ", "Bearer  ",
	"Bearer a b", "Basic abc", "Bearerabc", "", " ", "Bearer\u00a0abc", "Bearer abc\u2028",
	"Bearer \xffabc", "\u0085Bearer abc", "Bearer a\x00b",
}

// TestBearerTokenAsFields: the token is read as strings.Fields reads it.
func TestBearerTokenAsFields(t *testing.T) {
	for _, h := range bearerCases {
		checkBearer(t, h)
	}
}

// FuzzBearerToken: the token is read as strings.Fields reads it,
// whatever the header.
func FuzzBearerToken(f *testing.F) {
	for _, h := range bearerCases {
		f.Add(h)
	}
	f.Fuzz(checkBearer)
}

func checkBearer(t *testing.T, h string) {
	tok, ok := bearerToken(h)
	want, wantOK := fieldsToken(h)
	if tok != want || ok != wantOK {
		t.Errorf("bearerToken(%q) = %q, %v; strings.Fields reads %q, %v", h, tok, ok, want, wantOK)
	}
}
