package bearerstatus_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// TestCanarySDKAnswersOutageWith500 demonstrates against the SDK's real
// auth.RequireBearerToken what internal/sdkfix/bearerstatus works around:
// a verifier error that is neither auth.ErrInvalidToken nor auth.ErrOAuth
// (here: the authorization server cannot be reached) is answered 500,
// without Retry-After, and RequireBearerTokenOptions has no field that
// could change that. When this test fails, the SDK answers an outage
// otherwise or offers an option: answer outages through it and delete
// internal/sdkfix/bearerstatus.
func TestCanarySDKAnswersOutageWith500(t *testing.T) {
	outage := errors.New("authorization server unreachable")
	h := auth.RequireBearerToken(func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
		return nil, outage
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		t.Error("the SDK served a request whose verifier failed")
	}))
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r.Header.Set("Authorization", "Bearer some-token")
	h.ServeHTTP(rec, r)
	if rec.Code != http.StatusInternalServerError || rec.Header().Get("Retry-After") != "" {
		t.Fatalf("go-sdk answers a verifier outage with %d (Retry-After %q), not 500 without Retry-After: if it is 503 with Retry-After now, delete internal/sdkfix/bearerstatus",
			rec.Code, rec.Header().Get("Retry-After"))
	}

	// The options of v1.8.0, none of which chooses a status.
	known := []string{"AllowMissingExpiration", "ClockSkew", "ResourceMetadataURL", "Scopes"}
	typ := reflect.TypeFor[auth.RequireBearerTokenOptions]()
	for i := range typ.NumField() {
		if f := typ.Field(i); !slices.Contains(known, f.Name) {
			t.Errorf("go-sdk's RequireBearerTokenOptions has a new field %s: if it lets an outage be answered 503 with Retry-After, use it and delete internal/sdkfix/bearerstatus (else add it to the known fields here)", f.Name)
		}
	}
}
