package oauth

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/toolroute/toolroute/authz"
)

// DefaultRolesClaim is the claim roles are read from when the options
// name none.
const DefaultRolesClaim = "roles"

// DefaultScopesClaim is the claim granted scopes are read from when the
// options name none.
const DefaultScopesClaim = "scope"

// checkRolesClaim refuses a roles claim path with empty segments.
func checkRolesClaim(path string) error { return checkClaimPath("roles", path) }

// checkClaimPath refuses a claim path (of what: "roles", "scopes") with
// empty segments.
func checkClaimPath(what, path string) error {
	if path == "" {
		return nil
	}
	for _, seg := range strings.Split(path, ".") {
		if seg == "" {
			return fmt.Errorf("oauth: %s claim path %q has an empty segment", what, path)
		}
	}
	return nil
}

// rolesFrom reads the roles at path in claims. The path is a claim name
// ("roles", "groups", "scope", "https://example.com/roles") or, if no
// claim has that name, a dotted path into nested objects
// ("realm_access.roles"). The value is an array of strings or one string
// of space-separated values (the "scope" claim's shape). A missing claim
// means no roles; a claim of another shape is an error, so that a
// misconfigured provider is noticed rather than silently granting nothing.
func rolesFrom(claims map[string]any, path string) ([]string, error) {
	v, ok := claims[path]
	if !ok {
		var cur any = claims
		for _, seg := range strings.Split(path, ".") {
			m, isMap := cur.(map[string]any)
			if !isMap {
				return nil, nil
			}
			if cur, ok = m[seg]; !ok {
				return nil, nil
			}
		}
		v = cur
	}
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		return strings.Fields(v), nil
	case []string:
		return append([]string(nil), v...), nil
	case []any:
		roles := make([]string, 0, len(v))
		for i, r := range v {
			s, ok := r.(string)
			if !ok {
				return nil, fmt.Errorf("claim %q: element %d is a %T, not a string", path, i, r)
			}
			roles = append(roles, s)
		}
		return roles, nil
	default:
		return nil, fmt.Errorf("claim %q is a %T, not an array of strings or a space-separated string", path, v)
	}
}

// callerFrom makes the caller of a token from its claims: the subject from
// "sub" (required), the roles from the claim at rolesClaim, the scopes
// from the claim at scopesClaim, the client from "azp" (else
// "client_id") and the actors from the "act" chain.
func callerFrom(claims map[string]any, rolesClaim, scopesClaim, token string) (authz.Caller, error) {
	sub, _ := claims["sub"].(string)
	if sub == "" {
		return authz.Caller{}, fmt.Errorf("no \"sub\" claim")
	}
	roles, err := rolesFrom(claims, rolesClaim)
	if err != nil {
		return authz.Caller{}, err
	}
	scopes, err := rolesFrom(claims, scopesClaim)
	if err != nil {
		return authz.Caller{}, err
	}
	client, _ := claims["azp"].(string)
	if client == "" {
		client, _ = claims["client_id"].(string)
	}
	return authz.Caller{Subject: sub, Roles: roles, Scopes: scopes, Client: client, Actors: actorsFrom(claims), Bearer: token}, nil
}

// maxActors bounds how deep an "act" chain is read.
const maxActors = 8

// actorsFrom reads the delegation chain of RFC 8693 §4.1: the "act"
// claim names the current actor by its "sub", and its own "act" the one
// before, and so on. A chain deeper than maxActors is cut there; an
// actor without a "sub" ends it.
func actorsFrom(claims map[string]any) []string {
	var actors []string
	for act, _ := claims["act"].(map[string]any); act != nil && len(actors) < maxActors; act, _ = act["act"].(map[string]any) {
		sub, _ := act["sub"].(string)
		if sub == "" {
			break
		}
		actors = append(actors, sub)
	}
	return actors
}

// confirmationFrom reads the key a token is bound to: the "jkt" of its
// "cnf" claim (RFC 9449 §6.1), "" if it has no "cnf" or its "cnf" names
// no "jkt" (another confirmation method, which this package does not
// check). A "cnf" that is not an object, or a "jkt" that is not an
// unpadded base64url SHA-256 digest, is an error.
func confirmationFrom(claims map[string]any) (string, error) {
	raw, ok := claims["cnf"]
	if !ok {
		return "", nil
	}
	cnf, ok := raw.(map[string]any)
	if !ok {
		return "", fmt.Errorf("claim \"cnf\" is a %T, not an object", raw)
	}
	v, ok := cnf["jkt"]
	if !ok {
		return "", nil
	}
	jkt, ok := v.(string)
	if !ok || !isThumbprint(jkt) {
		return "", fmt.Errorf("claim \"cnf\": \"jkt\" is not a JWK SHA-256 thumbprint (43 characters of unpadded base64url)")
	}
	return jkt, nil
}

// isThumbprint reports whether s is an unpadded base64url SHA-256 digest.
func isThumbprint(s string) bool {
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	return err == nil && len(b) == 32
}
